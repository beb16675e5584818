"""Event-time mistakes that used to fail silently: a watermark generator behind an edge that mixes
streams, a window that never sees a watermark, timestamps that are datetimes. Each must be
refused or reported with a message naming the vertex or edge."""

from __future__ import annotations

import datetime
import logging
import operator
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, DagValidationError, Edge, JobConfig
from jetspark.processors import WindowPolicy, _timestamps
from jetspark.runners.local import LocalRunner
from jetspark.testing import run_dag
from tests.unit.processors.windowing import QuietSource
from tests.waiting import wait_until

ts_of = operator.itemgetter(0)
key_of = operator.itemgetter(1)
EVENTS = [(t, "k") for t in range(0, 40, 3)]


def stamped_dag(edge: Any, source_parallelism: int = 1, stamps_parallelism: int = 1) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(EVENTS), source_parallelism)
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of), stamps_parallelism)
    dag.edge(edge(Edge.between(source, stamps)))
    return dag


@pytest.mark.parametrize(
    "edge, routing",
    [
        (lambda e: e, "unicast"),
        (lambda e: e.partitioned(key_of).distributed(), "partitioned distributed"),
        (lambda e: e.broadcast(), "broadcast"),
    ],
)
def test_insert_watermarks_behind_a_mixing_edge_is_refused_naming_the_edge(edge: Any, routing: str) -> None:
    with pytest.raises(DagValidationError) as caught:
        stamped_dag(edge, source_parallelism=2, stamps_parallelism=2)
    message = str(caught.value)
    assert message.startswith("edge source[0] -> stamps[0]: vertex 'stamps' (insert_watermarks")
    assert f"got {routing}:" in message and "Edge.between(source, stamps).isolated()" in message


def test_an_isolated_edge_from_more_processors_than_insert_watermarks_has_is_refused() -> None:
    with pytest.raises(
        DagValidationError, match=r"edge source\[0\] -> stamps\[0\]: .*local parallelism 1, fewer"
    ):
        stamped_dag(Edge.isolated, source_parallelism=2, stamps_parallelism=1)


@pytest.mark.parametrize("stamps_parallelism", [1, 2])
def test_a_local_edge_from_one_processor_per_member_needs_no_isolation(stamps_parallelism: int) -> None:
    """As in Jet's `InsertWatermarksP_IntegrationTest` (a plain edge): one source processor per
    member cannot interleave with another; every event comes out once, in its windows."""
    dag = stamped_dag(lambda e: e, source_parallelism=1, stamps_parallelism=stamps_parallelism)
    dag.validate()
    stamps = dag.get_vertex("stamps")
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(stamps, sink).distributed().all_to_one())
    items = [item for item in run_dag(dag, runner=LocalRunner(2)).result("sink") if isinstance(item, tuple)]
    assert sorted(items) == sorted(EVENTS)


def test_a_distributed_edge_from_one_processor_per_member_is_still_refused() -> None:
    """Several members' source processors would interleave on it."""
    with pytest.raises(DagValidationError, match="needs an isolated edge, got unicast distributed"):
        stamped_dag(lambda e: e.distributed(), source_parallelism=1, stamps_parallelism=1)


def test_insert_watermarks_behind_an_isolated_edge_runs() -> None:
    dag = stamped_dag(Edge.isolated, source_parallelism=2, stamps_parallelism=2)
    dag.validate()


@pytest.fixture
def warn_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The no-watermark warning without its 10 s wait, and no vertex warned about yet."""
    monkeypatch.setattr(_timestamps, "NO_WATERMARK_WARNING_SECONDS", 0.0)
    monkeypatch.setattr(_timestamps, "_warned", set())


def window_job(with_watermarks: bool) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", lambda: QuietSource(EVENTS), 2)
    upstream = source
    if with_watermarks:
        upstream = dag.new_vertex("stamps", P.insert_watermarks(ts_of), 2)
        dag.edge(Edge.between(source, upstream).isolated())
    windows = P.window_aggregate(
        dag, "windows", upstream, key_of, ts_of, WindowPolicy.tumbling(10), P.counting()
    )
    dag.edge(Edge.between(windows, dag.new_vertex("sink", P.collect(), 1)))
    return dag


def no_watermark_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "without any watermark" in r.getMessage()]


@pytest.mark.usefixtures("warn_at_once")
def test_a_window_stage_holding_items_without_a_watermark_warns_once_naming_the_vertex(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="jetspark")
    job = LocalRunner(1).submit(window_job(with_watermarks=False), JobConfig())
    try:
        wait_until(lambda: no_watermark_warnings(caplog), "the no-watermark warning")
        wait_until(lambda: job.metrics()["windows-frames"]["received"] >= 2 * len(EVENTS), "every item")
    finally:
        job.cancel()
    # two processors of "windows-frames" hold items: one warning for the vertex
    (warning,) = no_watermark_warnings(caplog)
    assert warning.startswith("vertex 'windows-frames': holds items for ")
    assert "insert_watermarks" in warning


@pytest.mark.usefixtures("warn_at_once")
def test_a_window_stage_with_watermarks_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="jetspark")
    job = LocalRunner(1).submit(window_job(with_watermarks=True), JobConfig())
    try:
        wait_until(lambda: len(job.result("sink")) >= 3, "the windows the watermark closed")
    finally:
        job.cancel()
    assert no_watermark_warnings(caplog) == []


@pytest.mark.usefixtures("warn_at_once")
def test_a_session_stage_holding_items_without_a_watermark_warns_naming_the_vertex(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="jetspark")
    dag = DAG()
    source = dag.new_vertex("source", lambda: QuietSource(EVENTS), 1)
    sessions = dag.new_vertex("sessions", P.aggregate_to_session_window(key_of, ts_of, 5, P.counting()), 1)
    dag.edge(Edge.between(source, sessions).partitioned(key_of))
    job = LocalRunner(1).submit(dag, JobConfig())
    try:
        wait_until(lambda: no_watermark_warnings(caplog), "the no-watermark warning")
    finally:
        job.cancel()
    (warning,) = no_watermark_warnings(caplog)
    assert warning.startswith("vertex 'sessions': holds sessions for ")


def datetime_events() -> list[tuple[datetime.datetime, str]]:
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    return [(start + datetime.timedelta(seconds=i), "k") for i in range(3)]


def run_with(stage: str) -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(datetime_events()), 1)
    if stage == "insert_watermarks":
        vertex = dag.new_vertex("stage", P.insert_watermarks(ts_of), 1)
        dag.edge(Edge.between(source, vertex).isolated())
    elif stage == "idle insert_watermarks":
        vertex = dag.new_vertex("stage", P.insert_watermarks(ts_of, idle_timeout_millis=1000), 1)
        dag.edge(Edge.between(source, vertex).isolated())
    elif stage == "sliding window":
        supplier = P.aggregate_to_sliding_window(key_of, ts_of, WindowPolicy.tumbling(10), P.counting())
        vertex = dag.new_vertex("stage", supplier, 1)
        dag.edge(Edge.between(source, vertex).partitioned(key_of))
    elif stage == "session window":
        vertex = dag.new_vertex("stage", P.aggregate_to_session_window(key_of, ts_of, 5, P.counting()), 1)
        dag.edge(Edge.between(source, vertex).partitioned(key_of))
    else:
        join = P.window_join(key_of, key_of, ts_of, ts_of, WindowPolicy.tumbling(10))
        vertex = dag.new_vertex("stage", join, 1)
        other = dag.new_vertex("other", P.from_iterable([]), 1)
        dag.edge(Edge.between(source, vertex).partitioned(key_of))
        dag.edge(Edge.from_(other).to(vertex, 1).partitioned(key_of))
    LocalRunner(1).run(dag, JobConfig(), timeout=60)


@pytest.mark.parametrize(
    "stage",
    ["insert_watermarks", "idle insert_watermarks", "sliding window", "session window", "window join"],
)
def test_datetime_timestamps_are_an_error_naming_the_vertex_and_the_unit(stage: str) -> None:
    with pytest.raises(Exception) as caught:
        run_with(stage)
    error: BaseException | None = caught.value
    while error is not None and not isinstance(error, TypeError):
        error = error.__cause__ or error.__context__
    assert error is not None, f"no TypeError in {caught.value!r}"
    message = str(error)
    assert message.startswith("vertex 'stage': the timestamp function returned datetime.datetime(2026, 1, 1")
    assert "timestamps are int milliseconds since the epoch" in message
    assert "int(value.timestamp() * 1000)" in message

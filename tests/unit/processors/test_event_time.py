"""Watermark generation: the mapper's rules (lag, partitions, idleness), the processor with the
kit, and an idle source that stops holding back a window downstream, end to end."""

from __future__ import annotations

import operator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark import processors as P
from jetspark.core import DAG, IDLE_MESSAGE, Edge, JobConfig, ProcessorSupplier, Watermark
from jetspark.processors import EventTimeMapper, EventTimePolicy, WindowPolicy, WindowResult
from jetspark.runners.local import LocalRunner
from jetspark.testing import verify_processor
from tests.unit.processors.windowing import QuietSource
from tests.waiting import wait_until

ts_of = operator.itemgetter(0)


def policy(lag: int = 0, idle: int | None = None) -> EventTimePolicy:
    return EventTimePolicy(timestamp_fn=ts_of, allowed_lag=lag, idle_timeout_millis=idle)


def test_watermark_trails_the_top_timestamp_by_the_lag_and_only_rises() -> None:
    mapper = EventTimeMapper(policy(lag=3), now=0)
    mapper.observe(0, 10, now=0)
    assert mapper.watermark(0) == Watermark(7)
    mapper.observe(0, 8, now=0)  # out of order: the top stays 10
    assert mapper.watermark(0) is None
    mapper.observe(0, 12, now=0)
    assert mapper.watermark(0) == Watermark(9)


def test_throttled_watermarks_are_rounded_down_to_the_frame() -> None:
    mapper = EventTimeMapper(
        EventTimePolicy(
            timestamp_fn=ts_of, allowed_lag=1, throttling_frame_size=10, throttling_frame_offset=2
        ),
        now=0,
    )
    emitted = []
    for timestamp in [5, 9, 12, 13, 20, 22, 23, 41]:
        mapper.observe(0, timestamp, now=0)
        wm = mapper.watermark(0)
        emitted.append(None if wm is None else wm.timestamp)
    # top - 1 rounded down to 2, 12, 22, ...: a new watermark only on reaching a new multiple
    assert emitted == [2, None, None, 12, None, None, 22, 32]
    with pytest.raises(ValueError, match="throttling_frame_size"):
        EventTimePolicy(timestamp_fn=ts_of, throttling_frame_size=0)


def test_the_slowest_partition_holds_the_watermark_until_it_is_idle() -> None:
    mapper = EventTimeMapper(policy(idle=100), partition_count=2, now=0.0)
    mapper.observe(0, 50, now=0.0)
    assert mapper.watermark(0.01) is None  # partition 1 never delivered: it holds the watermark
    mapper.observe(1, 20, now=0.02)
    assert mapper.watermark(0.02) == Watermark(20)
    mapper.observe(0, 60, now=0.05)
    assert mapper.watermark(0.11) is None  # 1 quiet for 90 ms: not idle yet, still holds it at 20
    assert mapper.watermark(0.13) == Watermark(60)  # 1 idle now: partition 0 alone counts
    assert mapper.watermark(0.2) == IDLE_MESSAGE  # both idle: the idle marker, once
    assert mapper.watermark(0.3) is None
    mapper.observe(1, 70, now=0.4)
    assert mapper.watermark(0.4) == Watermark(70)  # partition 1 active again


def test_bad_policies_are_refused() -> None:
    with pytest.raises(ValueError, match="allowed_lag"):
        policy(lag=-1)
    with pytest.raises(ValueError, match="idle_timeout_millis"):
        policy(idle=0)
    with pytest.raises(ValueError, match="needs a partition_fn"):
        P.insert_watermarks(ts_of, partition_count=2)


@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(-50, 50)), max_size=40),
    st.integers(0, 10),
)
def test_emitted_watermarks_rise_and_never_pass_a_partition_top(
    events: list[tuple[int, int]], lag: int
) -> None:
    mapper = EventTimeMapper(policy(lag=lag), partition_count=2, now=0)
    tops: dict[int, int] = {}
    emitted: list[int] = []
    for partition, timestamp in events:
        mapper.observe(partition, timestamp, now=0)
        tops[partition] = max(tops.get(partition, timestamp), timestamp)
        wm = mapper.watermark(0)
        if wm is not None:
            emitted.append(wm.timestamp)
            assert len(tops) == 2 and wm.timestamp == min(tops.values()) - lag
    assert emitted == sorted(set(emitted))


def test_insert_watermarks_in_every_mode() -> None:
    items = [(5, "a"), (3, "b"), (9, "c"), Watermark(4), Watermark(100), (9, "d"), (12, "e"), (112, "f")]
    expected = [  # each watermark before the item that raised it, as in Jet
        Watermark(3),
        (5, "a"),
        (3, "b"),
        Watermark(7),
        (9, "c"),
        # upstream: 4 is below the 7 sent (dropped, the output's watermarks keep rising); 100 is
        # above it and goes on, as Jet forwards them; the ones made here continue above it
        Watermark(100),
        (9, "d"),
        (12, "e"),
        Watermark(110),
        (112, "f"),
    ]
    (
        verify_processor(P.insert_watermarks(ts_of, allowed_lag=2))
        .input(items)
        # one generator per source processor, on an isolated edge: its watermarks describe that
        # processor's stream, so restoring into another count has no single right output
        .disable_redistribution()
        .expect_output(expected)
    )


def test_insert_watermarks_per_source_partition() -> None:
    items = [(5, 0), (20, 0), (7, 1), (30, 1), (25, 0)]
    expected = [(5, 0), (20, 0), Watermark(7), (7, 1), Watermark(20), (30, 1), Watermark(25), (25, 0)]
    verify_processor(
        P.insert_watermarks(ts_of, partition_fn=operator.itemgetter(1), partition_count=2)
    ).input(items).disable_redistribution().expect_output(expected)


def busy_or_quiet(items_by_processor: dict[int, list[Any]]) -> ProcessorSupplier:
    class Supplier(ProcessorSupplier):
        def get(self, count: int) -> list[Any]:
            return [QuietSource(items_by_processor.get(i, [])) for i in range(count)]

    return Supplier()


@pytest.mark.parametrize("idle_timeout", [None, 50])
def test_an_idle_source_does_not_hold_the_window_back_end_to_end(idle_timeout: int | None) -> None:
    busy = [(t, "k") for t in range(0, 40, 2)]
    quiet = [(1, "k")]
    dag = DAG()
    source = dag.new_vertex("source", busy_or_quiet({0: busy, 1: quiet}), 2)
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of, idle_timeout_millis=idle_timeout), 2)
    dag.edge(Edge.between(source, stamps).isolated())
    windows = P.window_aggregate(
        dag, "windows", stamps, operator.itemgetter(1), ts_of, WindowPolicy.tumbling(10), P.counting()
    )
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(windows, sink))
    job = LocalRunner(1).submit(dag, JobConfig())
    try:
        if idle_timeout is None:
            # the quiet processor's watermark stays at 1: no window can close
            wait_until(lambda: job.metrics()["stamps"]["emitted"] >= len(busy) + 1, "all items stamped")
            assert job.result("sink") == []
        else:
            closed = [WindowResult(0, 10, "k", 6), WindowResult(10, 20, "k", 5), WindowResult(20, 30, "k", 5)]
            wait_until(lambda: len(job.result("sink")) >= 3, "the windows below the busy watermark")
            assert sorted(job.result("sink")) == closed
    finally:
        job.cancel()

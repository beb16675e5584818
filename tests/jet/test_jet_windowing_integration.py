"""Jet's `InsertWatermarksP_IntegrationTest` (`impl.processor`) and
`Processors_slidingWindowingIntegrationTest` (`core`) (hazelcast-jet-core), ported.

Jet's jobs on one member are DAGs on the local runner with one member; Jet's `writeListP` sink is
`processors.collect()`. Jet's `eventTimePolicy(tsFn, limitingLag(lag), frameSize, frameOffset,
idleTimeout=0)` is `insert_watermarks(ts_fn, allowed_lag=lag, throttling_frame_size=frameSize,
throttling_frame_offset=frameOffset)` (Jet's idle timeout 0 is "never", jetspark's None).
Jet's `mapWatermarksToString(false)` (a watermark becomes the item "wm(<timestamp>)", and is not
forwarded) is `WatermarksToStrings` below. Jet's `KeyedWindowResult(start, end, key, value)` is
`WindowResult`. Each test is named after the Jet case it ports.

Differences:
- `Processors_slidingWindowingIntegrationTest.smokeTest` with `isBatch=false`: Jet's source emits
  its item and a flushing watermark (100 000), then sleeps until the job is cancelled; the test
  waits up to 5 s for the two results and 1 s more to see no others. Here the source emits the
  same, then stays a quiet stream (its `complete()` returns False) until the test has seen the two
  results (or 60 s passed; Jet waits 5 s); then a gate opens and it completes, so the job ends and its whole
  output (exactly the two results) is checked. `insert_watermarks` passes the flushing watermark
  on, as Jet's `InsertWatermarksP` does (it is above every watermark emitted there; a lower one
  would be dropped, so its output's watermarks keep rising).
"""

from __future__ import annotations

import operator
import threading
import time
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, ProcessorSupplier, Watermark
from jetspark import processors as P
from jetspark.processors import WindowResult
from jetspark.runners.local import LocalRunner
from jetspark.testing import run_dag


def waited_for(condition: Any, timeout: float) -> bool:
    """Poll `condition` until it holds (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


class WatermarksToStrings(AbstractProcessor):
    """Jet's `mapWatermarksToString(false)`."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.try_emit(f"wm({watermark.timestamp})")


def _identity(item: Any) -> Any:
    return item


def insert_watermarks_output(edge: Any) -> list[Any]:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable([111, 222, 333]), 1)
    iwm = dag.new_vertex("iwm", P.insert_watermarks(_identity, allowed_lag=100, throttling_frame_size=100), 1)
    map_wm_to_str = dag.new_vertex("mapWmToStr", WatermarksToStrings, 1)
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(edge(Edge.between(source, iwm)))
    dag.edge(Edge.between(iwm, map_wm_to_str)).edge(Edge.between(map_wm_to_str, sink))
    return list(run_dag(dag, runner=LocalRunner(member_count=1)).result("sink"))


def test_InsertWatermarksP_IntegrationTest__test() -> None:
    """Jet's DAG as it is: a plain (unicast) edge from the source into `insertWatermarksP`
    (accepted: one source processor per member cannot interleave with another)."""
    actual = insert_watermarks_output(_identity)
    assert actual == ["wm(0)", 111, "wm(100)", 222, "wm(200)", 333]


def test_InsertWatermarksP_IntegrationTest__test_isolatedEdge() -> None:
    """The same with the isolated edge jetspark asks for (one source processor here, so the
    stream into `iwm` is the same as over Jet's edge)."""
    actual = insert_watermarks_output(Edge.isolated)
    assert actual == ["wm(0)", 111, "wm(100)", 222, "wm(200)", 333]


# -- Processors_slidingWindowingIntegrationTest

_release = threading.Event()
_sink: list[Any] = []
_sink_lock = threading.Lock()


class MyEvent(tuple[int, str, int]):
    """Jet's `MyEvent(timestamp, key, value)`."""

    __slots__ = ()

    def __new__(cls, timestamp: int, key: str, value: int) -> MyEvent:
        return super().__new__(cls, (timestamp, key, value))


get_timestamp = operator.itemgetter(0)
get_key = operator.itemgetter(1)


class EmitListP(AbstractProcessor):
    """Jet's `EmitListP`: emits the list; a stream (`complete=False`) appends a flushing
    watermark and then waits (here until the test opens `_release`)."""

    def __init__(self, items: list[Any], complete: bool) -> None:
        self.left = list(items) if complete else [*items, Watermark(100_000)]
        self.complete_at_end = complete

    def complete(self) -> bool:
        while self.left:
            if not self.try_emit(self.left[0]):
                return False
            self.left.pop(0)
        return self.complete_at_end or _release.is_set()


class RecordingSink(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        with _sink_lock:
            _sink.append(item)
        return True


def sink_items() -> list[Any]:
    with _sink_lock:
        return list(_sink)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    _release.clear()
    _sink.clear()


@pytest.mark.parametrize(
    ("single_stage_processor", "is_batch"),
    [
        (True, True),
        (True, False),
        (False, True),
        (False, False),
    ],
)
def test_Processors_slidingWindowingIntegrationTest__smokeTest(
    single_stage_processor: bool, is_batch: bool
) -> None:
    policy = P.WindowPolicy.sliding(2000, 1000)
    input_data = [MyEvent(10, "a", 1)]
    dag = DAG()
    source = dag.new_vertex("source", ProcessorSupplier.of(lambda: EmitListP(input_data, is_batch)), 1)
    insert_pp = dag.new_vertex(
        "insertWmP", P.insert_watermarks(get_timestamp, allowed_lag=0, throttling_frame_size=1000), 1
    )
    sink = dag.new_vertex("sink", RecordingSink, 1)
    dag.edge(Edge.between(source, insert_pp).isolated())
    if single_stage_processor:
        sliding_win = dag.new_vertex(
            "slidingWin", P.aggregate_to_sliding_window(get_key, get_timestamp, policy, P.counting())
        )
        dag.edge(Edge.between(insert_pp, sliding_win).partitioned(get_key).distributed())
        dag.edge(Edge.between(sliding_win, sink))
    else:
        accumulate_by_frame = dag.new_vertex(
            "accumulateByFrame", P.accumulate_by_frame(get_key, get_timestamp, policy, P.counting())
        )
        sliding_win = dag.new_vertex("slidingWin", P.combine_to_sliding_window(policy, P.counting()))
        dag.edge(Edge.between(insert_pp, accumulate_by_frame).partitioned(get_key))
        dag.edge(Edge.between(accumulate_by_frame, sliding_win).partitioned(P.frame_entry_key).distributed())
        dag.edge(Edge.between(sliding_win, sink))

    expected_output = [WindowResult(-1000, 1000, "a", 1), WindowResult(0, 2000, "a", 1)]
    job = LocalRunner(member_count=1).submit(dag)
    if is_batch:
        job.join(60)
    else:
        # Jet: assertTrueEventually(..., 5 s; 60 here, for a loaded machine) while the stream
        # runs; then the stream ends
        # (else the job would never end) and what had arrived by then is checked
        try:
            arrived = waited_for(lambda: len(sink_items()) >= len(expected_output), timeout=60)
            before_end = sink_items()
        finally:
            _release.set()
            job.join(60)
        assert arrived, f"the watermark did not close the windows while the stream ran: {before_end}"
        assert before_end == expected_output
    assert sink_items() == expected_output  # and no more

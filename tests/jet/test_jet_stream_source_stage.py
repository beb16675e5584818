"""Jet's `StreamSourceStageTest` (with its base `StreamSourceStageTestBase`; hazelcast-jet-core,
`com.hazelcast.jet.pipeline`), ported: the cases over a custom stream source.

Jet's scenario (`StreamSourceStageTestBase.test`): a stream source emits the items 1 and 2 and
then nothing more; timestamps are added in one of three ways (local parallelism 1 everywhere, so
that no watermarks are coalesced); a tumbling window of size 1 counts the items; a sink
(`WatermarkCollector`) records every watermark it receives. Jet waits until the list equals the
expected one (`assertTrueEventually`), checks it stays so for a second (`assertTrueAllTheTime`),
checks the job is RUNNING, cancels it and expects the cancellation.

jetspark has no Pipeline API nor `SourceBuilder`; the DAG here is the one Jet plans, on the local
runner with one member and local parallelism 1:
- the source is `TwoItemsSourceP`: in its first `complete()` it emits 1 and 2, then it returns
  False for ever (Jet's `fillBufferFn` that adds the items once). Jet's
  `SourceBuilder.timestampedStream` adds them with native timestamps 1 and 2
  (`buf.add(1, 1); buf.add(2, 2)`); `SourceBuilder.stream` without;
- `withoutTimestamps().addTimestamps(i -> i + 1, 0)`: a vertex of `insert_watermarks(i + 1,
  allowed_lag=0)` behind the source (Jet's `add-timestamps` vertex);
- `withNativeTimestamps(0)` and `withTimestamps(i -> i + 1, 0)`: Jet's source applies the event
  time policy itself (its `EventTimeMapper`); here the source does the same with jetspark's
  `EventTimeMapper` (lag 0; the watermark after each item it observes), with the native
  timestamp or `i + 1`;
- `window(tumbling(1)).aggregate(counting())` (not keyed): `window_aggregate` with a constant key;
  the watermark throttling Jet's planner derives from the window (frame size 1) is none at all.
The sink is `WatermarkCollectorP`. Jet's `assertTrueAllTheTime(assertTask, 1)` (a second of
polling) is replaced by a check of the list once more after the job was cancelled: nothing
arriving after the wait may change it (no sleeping).

Skipped (no counterpart in jetspark):
- `test_plainSourceBuilder_withNativeTimestamps`: the Pipeline API's refusal of native
  timestamps on a source without them ("The source doesn't support native timestamps").
- `test_sourceJournal_*`, `test_withTimestampsButTimestampsNotUsed`,
  `when_sparseItemsWithIngestionTimestamps_*`: an IMap event journal source (and ingestion
  timestamps from the wall clock).
- `when_withTimestampsAndAddTimestamps_then_fail`: a Pipeline API check.
- `when_sourceHas*LocalParallelism_then_lpMatchSource`: how Jet's planner derives the local
  parallelism of the `add-timestamps` vertex (`p.toDag()`).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobCancelledError, JobConfig, ProcessorSupplier, Watermark
from jetspark import processors as P
from jetspark.processors import EventTimeMapper, EventTimePolicy
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner
from tests.waiting import wait_until

TIMEOUT = 60


class Collected:
    """Jet's static `WatermarkCollector.watermarks` (the local runner runs in this process)."""

    lock = threading.Lock()
    watermarks: list[int] = []

    @classmethod
    def clear(cls) -> None:
        with cls.lock:
            cls.watermarks = []

    @classmethod
    def snapshot(cls) -> list[int]:
        with cls.lock:
            return list(cls.watermarks)


class WatermarkCollectorP(AbstractProcessor):
    """Jet's `WatermarkCollector`: drops items, records the timestamp of every watermark."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        with Collected.lock:
            Collected.watermarks.append(watermark.timestamp)
        return True


def plus_one(i: int) -> int:
    return i + 1


def native_timestamp(item: tuple[int, int]) -> int:
    return item[1]


class TwoItemsSourceP(AbstractProcessor):
    """Jet's source builders' `fillBufferFn`: adds 1 and 2 (with native timestamps 1 and 2 if
    `timestamped`) once, then nothing for ever. With `timestamp_fn`, the source applies the event
    time policy itself, as Jet's source with `withNativeTimestamps` / `withTimestamps`."""

    def __init__(self, timestamp_fn: Any = None) -> None:
        self.timestamp_fn = timestamp_fn
        self.pending: list[Any] = []
        self.filled = False
        self.mapper: EventTimeMapper | None = None

    def init_processor(self, context: Any) -> None:
        if self.timestamp_fn is not None:
            self.mapper = EventTimeMapper(EventTimePolicy(timestamp_fn=self.timestamp_fn, allowed_lag=0))

    def complete(self) -> bool:
        if not self.filled:
            self.filled = True
            for item, native in ((1, 1), (2, 2)):
                self.pending.append(item)
                if self.mapper is not None:
                    self.mapper.observe(0, self.timestamp_fn((item, native)), now=0.0)
                    watermark = self.mapper.watermark(now=0.0)
                    if watermark is not None:
                        self.pending.append(watermark)
        while self.pending:
            if not self.try_emit(self.pending[0]):
                return False
            self.pending.pop(0)
        return False  # a stream source: never done


def _item_plus_one(item: tuple[int, int]) -> int:
    return item[0] + 1


def _constant_key(_item: Any) -> str:
    return "ALL"


def _identity_ts(i: int) -> int:
    return i


def run_scenario(how: str, expected_wms: list[int]) -> None:
    """Jet's `StreamSourceStageTestBase.test(source, addTimestampsFunction, expectedWms, null)`."""
    Collected.clear()
    dag = DAG()
    if how == "withoutTimestamps":
        source = dag.new_vertex("s", ProcessorSupplier.of(TwoItemsSourceP), 1)
        stamped = dag.new_vertex("s-add-timestamps", P.insert_watermarks(plus_one, allowed_lag=0), 1)
        dag.edge(Edge.between(source, stamped).isolated())
        timestamp_fn = plus_one
    elif how == "withNativeTimestamps":
        stamped = dag.new_vertex("s", ProcessorSupplier.of(lambda: TwoItemsSourceP(native_timestamp)), 1)
        timestamp_fn = _identity_ts
    else:  # withTimestamps(i -> i + 1, 0)
        stamped = dag.new_vertex("s", ProcessorSupplier.of(lambda: TwoItemsSourceP(_item_plus_one)), 1)
        timestamp_fn = plus_one
    windows = P.window_aggregate(
        dag, "window", stamped, _constant_key, timestamp_fn, P.WindowPolicy.tumbling(1), P.counting()
    )
    sink = dag.new_vertex("wmCollector", ProcessorSupplier.of(WatermarkCollectorP), 1)
    dag.edge(Edge.between(windows, sink))
    job = LocalRunner(1).submit(dag, JobConfig(default_local_parallelism=1))
    try:
        wait_until(lambda: Collected.snapshot() == expected_wms, f"watermarks {expected_wms}", TIMEOUT)
        assert job.status is JobStatus.RUNNING
    finally:
        job.cancel()
        with pytest.raises(JobCancelledError):
            job.join(TIMEOUT)
    assert Collected.snapshot() == expected_wms


def test_StreamSourceStageTest__test_timestampedSourceBuilder_withoutTimestamps() -> None:
    run_scenario("withoutTimestamps", [2, 3])


def test_StreamSourceStageTest__test_timestampedSourceBuilder_withNativeTimestamps() -> None:
    run_scenario("withNativeTimestamps", [1, 2])


def test_StreamSourceStageTest__test_timestampedSourceBuilder_withTimestamps() -> None:
    run_scenario("withTimestamps", [2, 3])


def test_StreamSourceStageTest__test_plainSourceBuilder_withoutTimestamps() -> None:
    run_scenario("withoutTimestamps", [2, 3])


def test_StreamSourceStageTest__test_plainSourceBuilder_withTimestamps() -> None:
    run_scenario("withTimestamps", [2, 3])

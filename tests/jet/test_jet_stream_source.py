"""Jet's `StreamSourceTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: a stream
source of which only one processor emits holds the watermark back until the others are idle.

On the local runner with 2 members (Jet's `PipelineTestSupport` cluster). Jet's source
(`SourceBuilder.stream(...).distributed(1)`: one processor per member, only global index 0
adds items) is `OneEmitterP`; Jet's `withTimestamps(..., 0)` is `insert_watermarks` on an
isolated edge behind it, and Jet's source's partition idle timeout is that vertex's
`idle_timeout_millis`; `window(tumbling(100)).aggregate(counting())` is
`aggregate_to_sliding_window` behind an edge partitioned by a constant key. Each test is named
after the Jet case it ports.

Differences:
- Jet's items are timestamped by the wall clock (`System.currentTimeMillis()`) and the source
  sleeps 10 ms per item; here item n is the number n, its own timestamp, and the source emits one
  per call, so that the number of windows the items span does not depend on time.
- `test_defaultIdle`: Jet's default idle timeout is 60 s, and the test checks that the sink stays
  empty for 5 s. jetspark's default is no idle timeout (None). The port checks without waiting on
  time: a pass-through vertex between the timestamps and the window (`WatermarkProbe`) counts
  what it forwards; once it has forwarded 1000 items (10 windows of them) with the emitting
  processor's watermarks in between, it must have forwarded no watermark (the idle processor
  holds them back), and after the job is cancelled the sink must be empty.
- `test_shortIdle` (500 ms): waits on a condition the sink notifies until a window result
  arrives (Jet's `assertTrueEventually`).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobCancelledError, ProcessorContext, Watermark
from jetspark import processors as P
from jetspark.runners.local import LocalJob, LocalRunner

MEMBER_COUNT = 2
TIMEOUT = 60
ITEMS_BEFORE_CHECK = 1000


def identity(item: Any) -> Any:
    return item


def constant_key(_item: Any) -> str:
    return "ALL"


class Observed:
    """What the probe forwarded and the sink received, with a condition both notify."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.items = 0
        self.watermarks: list[Watermark] = []
        self.results: list[Any] = []

    def wait_for(self, predicate: Any, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, TIMEOUT), f"timed out waiting for {what}"


OBSERVED = Observed()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global OBSERVED
    OBSERVED = Observed()


class OneEmitterP(AbstractProcessor):
    """Jet's source: the processor of global index 0 emits 0, 1, 2, ...; the others nothing."""

    waits_for_data = True

    def init_processor(self, context: ProcessorContext) -> None:
        self.emits = context.global_processor_index == 0
        self.next = 0

    def complete(self) -> bool:
        if self.emits and self.try_emit(self.next):
            self.next += 1
        return False


class WatermarkProbe(AbstractProcessor):
    """Passes everything on, counting the items and noting the watermarks."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not self.try_emit(item):
            return False
        with OBSERVED.changed:
            OBSERVED.items += 1
            OBSERVED.changed.notify_all()
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if not self.try_emit(watermark):
            return False
        with OBSERVED.changed:
            OBSERVED.watermarks.append(watermark)
            OBSERVED.changed.notify_all()
        return True


class RecordingSink(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        with OBSERVED.changed:
            OBSERVED.results.append(item)
            OBSERVED.changed.notify_all()
        return True


def submit(idle_timeout_millis: int | None) -> LocalJob:
    dag = DAG()
    source = dag.new_vertex("src", OneEmitterP, 1)
    stamps = dag.new_vertex(
        "stamps", P.insert_watermarks(identity, idle_timeout_millis=idle_timeout_millis), 1
    )
    probe = dag.new_vertex("probe", WatermarkProbe, 1)
    window = dag.new_vertex(
        "window",
        P.aggregate_to_sliding_window(constant_key, identity, P.WindowPolicy.tumbling(100), P.counting()),
    )
    sink = dag.new_vertex("sink", RecordingSink, 1)
    dag.edge(Edge.between(source, stamps).isolated())
    dag.edge(Edge.between(stamps, probe).partitioned(constant_key).distributed())
    dag.edge(Edge.between(probe, window).partitioned(constant_key))
    dag.edge(Edge.between(window, sink))
    return LocalRunner(MEMBER_COUNT).submit(dag)


def cancel_and_join(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)


def test_StreamSourceTest__test_defaultIdle() -> None:
    job = submit(None)
    try:
        OBSERVED.wait_for(lambda: OBSERVED.items >= ITEMS_BEFORE_CHECK, f"{ITEMS_BEFORE_CHECK} items")
        with OBSERVED.changed:
            assert OBSERVED.watermarks == [], "a watermark passed while a source processor was not idle"
    finally:
        cancel_and_join(job)
    assert OBSERVED.results == [], "unexpected sink size"


def test_StreamSourceTest__test_shortIdle() -> None:
    job = submit(500)
    try:
        OBSERVED.wait_for(lambda: len(OBSERVED.results) > 0, "a window result (sink empty)")
    finally:
        cancel_and_join(job)

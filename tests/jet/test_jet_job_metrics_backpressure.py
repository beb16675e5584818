"""Jet 5's `JobMetrics_BackpressureTest` (hazelcast, `com.hazelcast.jet.core.metrics`), ported:
the queue-size metric of a vertex whose processor stops taking input shows its queues full.

Jet's job: `TestSources.longStream(1000, 1)` with ingestion timestamps, a `mapUsingService`
stage named "map-using-service" (a shared `AtomicLong`, `addAndGet`), and a sink "sink" whose
processor (`SlowProcessor`) takes every item at once but returns false for ever from one of
`tryProcessWatermark`, `saveToSnapshot`, `snapshotCommitPrepare` or `snapshotCommitFinish`.
The job runs with `AT_LEAST_ONCE` and a snapshot every 2 s. Jet waits until, for both "sink" and
"map-using-service", the summed `QUEUES_SIZE` equals the summed `QUEUES_CAPACITY` (and the
capacity is positive): the stuck sink backs up its queues, and the map's behind them.

Here: the local runner with one member and local parallelism 1. The source is
`generator_stream(items_per_second=1000)` with `timestamp_fn` (the sequence number: rising, as
ingestion time), so that watermarks reach the sink; "map-using-service" is `RunningSumP` (a
processor emitting the running sum, the shared `AtomicLong`'s `addAndGet`); "sink" is
`SlowSinkP`. jetspark's per-vertex figure for Jet's `QUEUES_SIZE` is `metrics()[vertex]["queued"]`
(data items waiting in the vertex's inbound queues); it has no capacity metric, so the capacity
is the DAG's: each vertex here has one inbound queue (one upstream processor) of the edge's
`queue_size`. Jet's `assertTrueEventually` (with a second's sleep per attempt) is a wait on the
condition.
"""

from __future__ import annotations

from typing import Any

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    Edge,
    JobCancelledError,
    JobConfig,
    ProcessingGuarantee,
    ProcessorSupplier,
    Watermark,
)
from jetspark import processors as P
from jetspark.runners.local import LocalJob, LocalRunner
from tests.waiting import wait_until

TIMEOUT = 60


class RunningSumP(AbstractProcessor):
    """Jet's `mapUsingService(sharedService(__ -> new AtomicLong()), AtomicLong::addAndGet)`."""

    def __init__(self) -> None:
        self.total = 0

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not self.try_emit(self.total + item):
            return False
        self.total += item
        return True


class SlowSinkP(AbstractProcessor):
    """Jet's `SlowProcessor`: takes items at once; one of the four methods returns false for ever."""

    def __init__(self, slow: str) -> None:
        self.slow = slow

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return True  # the sink consumes items immediately

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.slow != "tryProcessWatermark"

    def save_to_snapshot(self) -> bool:
        return self.slow != "saveToSnapshot"

    def snapshot_commit_prepare(self) -> bool:
        return self.slow != "snapshotCommitPrepare"

    def snapshot_commit_finish(self, success: bool) -> bool:
        return self.slow != "snapshotCommitFinish"


def _sequence_timestamp(seq: int) -> int:
    return seq


def queues_full(job: LocalJob, vertex: str, capacity: int) -> bool:
    """Jet's `assertThatQueueIsFull(metrics, vertex)`: queue size == queue capacity (> 0)."""
    assert capacity > 0
    return job.metrics()[vertex]["queued"] == capacity


def run_with_slow_processor(slow: str) -> None:
    dag = DAG()
    source = dag.new_vertex(
        "longStream",
        P.generator_stream(items_per_second=1000, timestamp_fn=_sequence_timestamp),
        1,
    )
    mapped = dag.new_vertex("map-using-service", ProcessorSupplier.of(RunningSumP), 1)
    sink = dag.new_vertex("sink", ProcessorSupplier.of(lambda: SlowSinkP(slow)), 1)
    into_map = Edge.between(source, mapped)
    into_sink = Edge.between(mapped, sink)
    dag.edge(into_map).edge(into_sink)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.AT_LEAST_ONCE, snapshot_interval_millis=2000)
    job = LocalRunner(1).submit(dag, config)
    try:
        wait_until(
            lambda: (
                queues_full(job, "sink", into_sink.queue_size)
                and queues_full(job, "map-using-service", into_map.queue_size)
            ),
            f"full queues of 'sink' and 'map-using-service' (slow {slow})",
            TIMEOUT,
        )
    finally:
        job.cancel()
        with pytest.raises(JobCancelledError):
            job.join(TIMEOUT)


def test_JobMetrics_BackpressureTest__when_slowTryProcessWatermark_thenQueueSizeUpdated() -> None:
    run_with_slow_processor("tryProcessWatermark")


def test_JobMetrics_BackpressureTest__when_slowSaveToSnapshot_thenQueueSizeUpdated() -> None:
    run_with_slow_processor("saveToSnapshot")


def test_JobMetrics_BackpressureTest__when_slowSnapshotCommitPrepare_thenQueueSizeUpdated() -> None:
    run_with_slow_processor("snapshotCommitPrepare")


def test_JobMetrics_BackpressureTest__when_slowSnapshotCommitFinish_thenQueueSizeUpdated() -> None:
    run_with_slow_processor("snapshotCommitFinish")

"""Jet's `SourceBuilderTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: the fault
tolerance of a custom stream source whose state is saved to snapshots.

jetspark has no `SourceBuilder`: a custom source is a processor. Jet's
`SourceBuilder.timestampedStream(name, createFn).fillBufferFn(...).createSnapshotFn(...)
.restoreSnapshotFn(...)` (one processor in the cluster) is `SequenceSourceP` on one processor
(`FirstMemberOnly`): `fillBufferFn` is a `complete()` call, the state object is saved under a
`BroadcastKey` (Jet's source builder restores every saved state to its one processor, hence
`states.size() == 1`) and restored in `restore_from_snapshot_entry`. Jet's
`withNativeTimestamps(0)` is `insert_watermarks` behind it, `window(tumbling(100))
.aggregate(counting())` is `window_aggregate` with a constant key, and Jet's `IList` sink is a
recording sink (one processor: the one that owns the constant key). The cluster is the local
runner with 2 members and local parallelism 2. Each test is named after the Jet case it ports.

Differences:
- Jet's `assertJobStatusEventually(job, RUNNING)` after `job.restart()` (a terminal snapshot, then
  a new execution restored from it; without a guarantee, a new execution from the beginning) is a
  wait for the new execution's source processor: the status stays RUNNING throughout.
- Jet's source emits about one item per millisecond of wall-clock time (or 100 items and a
  100 ms sleep); here the source emits 100 items per call while it is below a limit the test
  raises step by step, so that the test waits on conditions (results arrived), not on time, and
  the stream stays bounded. Jet's `assertTrueEventually` is a wait on a condition the sink
  notifies.

Skipped:
- `batch_fileSource*`, `stream_socketSource*`, `stream_distributed_socketSource_withTimestamps`:
  they test the builder's API (`fillBufferFn`, `distributed(n)`, `destroyFn`) over a file and a
  socket; the processors they build are plain custom sources, which the processor ports cover.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs
import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    BroadcastKey,
    Edge,
    JobCancelledError,
    JobConfig,
    ProcessingGuarantee,
    ProcessorSupplier,
)
from jetspark import processors as P
from jetspark.core.suppliers import FirstMemberOnly
from jetspark.processors import WindowResult
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

MEMBER_COUNT = 2
LOCAL_PARALLELISM = 2
WINDOW_SIZE = 100
ITEMS_PER_CALL = 100
#: How many more items the source may emit after each (re)start.
ITEMS_PER_STEP = 1_000
TIMEOUT = 60
CONFIG = JobConfig(
    processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, default_local_parallelism=LOCAL_PARALLELISM
)


class Shared:
    """The source's limit and what the sink received, with a condition both use."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.limit = 0
        self.results: list[Any] = []
        self.sources_made = 0

    def allow(self, items: int) -> None:
        with self.changed:
            self.limit += items

    def size(self) -> int:
        with self.changed:
            return len(self.results)

    def wait_for_more_than(self, size: int, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.results) > size, TIMEOUT), what


SHARED = Shared()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global SHARED
    SHARED = Shared()


@attrs.frozen
class WrappedInt:
    """Jet's `WrappedInt`: a user-defined class, as item and in the saved state."""

    value: int


def plain(value: int) -> Any:
    return value


def wrapped(value: int) -> Any:
    return WrappedInt(value)


def value_of(item: Any) -> int:
    return item.value if isinstance(item, WrappedInt) else int(item)


class NumberGeneratorContext:
    """Jet's `NumberGeneratorContext` (and `WrappedNumberGeneratorContext`): the next number."""

    def __init__(self, current: Any) -> None:
        self.current = current


class SequenceSourceP(AbstractProcessor):
    """Jet's `integerSequenceSource(addFaultTolerance)`: emits 0, 1, 2, ... (`make(n)` of them),
    `ITEMS_PER_CALL` per call while below the test's limit; with `fault_tolerant` its context is
    saved and restored."""

    waits_for_data = True

    def __init__(self, make: Any, fault_tolerant: bool) -> None:
        self.make = make
        self.fault_tolerant = fault_tolerant
        self.src = NumberGeneratorContext(make(0))
        with SHARED.changed:
            SHARED.sources_made += 1
            SHARED.changed.notify_all()

    def complete(self) -> bool:
        with SHARED.changed:
            limit = SHARED.limit
        for _ in range(ITEMS_PER_CALL):
            current = value_of(self.src.current)
            if current >= limit or not self.try_emit(self.src.current):
                return False
            self.src.current = self.make(current + 1)
        return False

    def save_to_snapshot(self) -> bool:
        if not self.fault_tolerant:
            return True
        return self.try_emit_to_snapshot(BroadcastKey("src"), self.src)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.src.current = value.current  # Jet's `src.restore(states.get(0))`


class RecordingSink(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        with SHARED.changed:
            SHARED.results.append(item)
            SHARED.changed.notify_all()
        return True


def constant_key(_item: Any) -> str:
    return "ALL"


def submit(
    make: Any, fault_tolerant: bool = True, windowed: bool = True, config: JobConfig = CONFIG
) -> LocalJob:
    dag = DAG()
    source = dag.new_vertex(
        "src", FirstMemberOnly(ProcessorSupplier.of(lambda: SequenceSourceP(make, fault_tolerant)))
    )
    sink = dag.new_vertex("sink", RecordingSink)
    if windowed:
        stamps = dag.new_vertex("stamps", FirstMemberOnly(P.insert_watermarks(value_of)))
        dag.edge(Edge.between(source, stamps).isolated())
        windows = P.window_aggregate(
            dag, "window", stamps, constant_key, value_of, P.WindowPolicy.tumbling(WINDOW_SIZE), P.counting()
        )
        dag.edge(Edge.between(windows, sink))
    else:
        dag.edge(Edge.between(source, sink))
    return LocalRunner(MEMBER_COUNT).submit(dag, config)


def restart(job: LocalJob, more_items: int = 0) -> tuple[LocalJob, int]:
    """Jet's `job.restart()` and `assertJobStatusEventually(job, RUNNING)` (the new execution's
    source was made); also the number of results then (Jet's `oldSize`), and `more_items` allowed
    after it."""
    with SHARED.changed:
        made = SHARED.sources_made
    job.restart()
    with SHARED.changed:
        assert SHARED.changed.wait_for(lambda: SHARED.sources_made > made, TIMEOUT), "no new execution"
    assert job.status is JobStatus.RUNNING
    old_size = SHARED.size()
    SHARED.allow(more_items)
    return job, old_size


def cancel_and_join(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)


def check_fault_tolerance(make: Any, restarts: int) -> None:
    SHARED.allow(ITEMS_PER_STEP)
    job = submit(make)
    try:
        SHARED.wait_for_more_than(0, "result list is still empty")
        for _ in range(restarts):
            job, old_size = restart(job, ITEMS_PER_STEP)
            SHARED.wait_for_more_than(old_size, "no more results added to the list")
    finally:
        cancel_and_join(job)
    # results should contain a monotonic sequence of results, each with count=windowSize
    results = SHARED.results
    assert results, "no results"
    for i, result in enumerate(results):
        assert isinstance(result, WindowResult)
        assert (result.start, result.value) == (i * WINDOW_SIZE, WINDOW_SIZE), results


def test_SourceBuilderTest__test_faultTolerance() -> None:
    check_fault_tolerance(plain, restarts=1)


def test_SourceBuilderTest__test_faultTolerance_snapshotWithUserDefinedObject() -> None:
    check_fault_tolerance(wrapped, restarts=1)


def test_SourceBuilderTest__test_faultTolerance_restartTwice() -> None:
    check_fault_tolerance(plain, restarts=2)


def test_SourceBuilderTest__test_nonFaultTolerantSource_processingGuaranteeOn() -> None:
    """Jet's source emits 0 every 100 ms and saves nothing; after the restart it emits again."""
    SHARED.allow(ITEMS_PER_STEP)
    job = submit(plain, fault_tolerant=False, windowed=False)
    try:
        SHARED.wait_for_more_than(0, "the source emitted nothing")
        restart(job)
        with SHARED.changed:  # Jet's "more results after the restart": its state was not saved
            assert SHARED.changed.wait_for(lambda: SHARED.results.count(0) == 2, TIMEOUT), SHARED.results[:5]
    finally:
        cancel_and_join(job)


def test_SourceBuilderTest__test_nonFaultTolerantSource_processingGuaranteeNone() -> None:
    """Without a guarantee the restart begins again: the source emits from 0 once more."""
    SHARED.allow(ITEMS_PER_STEP)
    job = submit(plain, fault_tolerant=False, windowed=False, config=JobConfig(default_local_parallelism=2))
    try:
        SHARED.wait_for_more_than(0, "the source emitted nothing")
        restart(job)
        with SHARED.changed:  # Jet's "more results after the restart": here, from 0 again
            assert SHARED.changed.wait_for(lambda: SHARED.results.count(0) == 2, TIMEOUT), SHARED.results[:5]
        assert job.restarts == 0, "a restart asked for is not a failure"
    finally:
        cancel_and_join(job)

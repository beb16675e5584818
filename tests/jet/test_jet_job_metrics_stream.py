"""Jet's `JobMetrics_StreamTest` (hazelcast-jet-core, `com.hazelcast.jet.core.metrics`), ported:
the per-vertex counts of a streaming job while it runs, after a cancel, a suspend and resume and
a restart.

Jet's job reads a map journal from the oldest entry (`Sources.mapJournal(...,
START_FROM_OLDEST)`), maps each entry to its key, drops the keys starting with `nok` and writes
the others to an `IList`. Here the journal is a list the test appends to (`put_into_map`) and
`JournalSourceP` reads it: each processor its share of the positions, from the first on, saving
its position in snapshots; it never completes (a stream). The map and filter are a `fused` vertex
named as Jet's (`fused(map, filter)`); the list sink is a processor appending to the test's list.
Jet's `withIngestionTimestamps()` is left out: nothing here uses event time. Jet's
`getMetrics()` filtered by vertex and summed is `job.metrics()[vertex]` (`emitted`, `received`);
Jet's `assertTrueEventually` polls until the counts are reached (`eventually`), as the items are
still in flight when the sink has them all. On the local runner with 2 members, as Jet's
`TestInClusterSupport`. Jet's `job.restart()` (a forceful restart) is a `RestartableError` the
source raises when the test asks for it (`restart`). Each test is named after the Jet case it
ports.

Differences:
- Jet's cancelled job ends FAILED; jetspark's CANCELLED (docs/architecture.md, "a cancel stays
  cancelled"). `when_jobCancelled_then_terminalMetricsExist` waits for the counts before the
  cancel, so that the cancel does not cut items in flight, and checks they are kept after it.
- As Jet's, the counts are the latest execution's: they start over after a resume or a restart.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    BroadcastKey,
    Edge,
    JobCancelledError,
    JobConfig,
    ProcessingGuarantee,
    ProcessorContext,
    RestartableError,
)
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

MEMBER_COUNT = 2
TIMEOUT = 60

NOT_FILTER_OUT_PREFIX = "ok"
FILTER_OUT_PREFIX = "nok"

SOURCE_VERTEX = "mapJournalSource(journal)"
FLAT_MAP_AND_FILTER_VERTEX = "fused(map, filter)"
SINK_VERTEX = "listSink(sink)"


class Record:
    """The journal and the sink list the test shares with the processors."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.journal: list[tuple[str, str]] = []
        self.sink: list[str] = []
        self.restart_wanted = False
        self.names = itertools.count()


record = Record()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global record
    record = Record()


class JournalSourceP(AbstractProcessor):
    """Reads the journal from its start: positions `index, index + count, ...`."""

    waits_for_data = True

    def init_processor(self, context: ProcessorContext) -> None:
        self.index = context.global_processor_index
        self.count = context.total_parallelism
        self.position = self.index

    def complete(self) -> bool:
        with record.changed:
            if record.restart_wanted:
                record.restart_wanted = False
                raise RestartableError("restart asked by the test (Jet's job.restart())")
            journal = list(record.journal)
        while self.position < len(journal):
            if not self.try_emit(journal[self.position]):
                return False
            self.position += self.count
        return False

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(BroadcastKey(self.index), self.position)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if key.key == self.index:
            self.position = value


class ListSinkP(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        with record.changed:
            record.sink.append(item)
            record.changed.notify_all()
        return True


def create_pipeline() -> DAG:
    dag = DAG()
    source = dag.new_vertex(SOURCE_VERTEX, JournalSourceP)
    steps = P.Chain().map(lambda entry: entry[0]).filter(lambda word: not word.startswith(FILTER_OUT_PREFIX))
    filtered = dag.new_vertex(FLAT_MAP_AND_FILTER_VERTEX, P.fused(steps))
    sink = dag.new_vertex(SINK_VERTEX, ListSinkP)
    dag.edge(Edge.between(source, filtered)).edge(Edge.between(filtered, sink))
    return dag


def submit(guarantee: ProcessingGuarantee = ProcessingGuarantee.NONE) -> LocalJob:
    config = JobConfig(processing_guarantee=guarantee, snapshot_interval_millis=3_600_000)
    return LocalRunner(MEMBER_COUNT).submit(create_pipeline(), config)


def put_into_map(not_filter_out_items_count: int, filter_out_items_count: int) -> None:
    with record.changed:
        for _ in range(not_filter_out_items_count):
            record.journal.append((f"{NOT_FILTER_OUT_PREFIX}{next(record.names)}", "whateverHere"))
        for _ in range(filter_out_items_count):
            record.journal.append((f"{FILTER_OUT_PREFIX}{next(record.names)}", "whateverHere"))


def assert_sink_size(size: int) -> None:
    """Jet's `assertTrueEventually(() -> assertEquals(size, sink.size()))`."""
    with record.changed:
        assert record.changed.wait_for(lambda: len(record.sink) >= size, TIMEOUT)
        assert len(record.sink) == size


def restart(job: LocalJob) -> None:
    """Jet's `job.restart()`: a source raises `RestartableError`."""
    with record.changed:
        record.restart_wanted = True


def eventually(check: Callable[[], None], timeout: float = TIMEOUT) -> None:
    """Jet's `assertTrueEventually`: `check` passes once the items in flight have arrived."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            check()
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.005)


def assert_metrics(job: LocalJob, all_items: int, filter_out_items: int) -> None:
    metrics = job.metrics()
    assert metrics is not None
    assert metrics[SOURCE_VERTEX]["emitted"] == all_items
    assert metrics[FLAT_MAP_AND_FILTER_VERTEX]["received"] == all_items
    assert metrics[FLAT_MAP_AND_FILTER_VERTEX]["emitted"] == all_items - filter_out_items
    assert metrics[SINK_VERTEX]["received"] == all_items - filter_out_items


def status_of(job: LocalJob) -> JobStatus:
    """The status now (a call, so that a type checker does not carry an earlier check over)."""
    return job.status


def cancel(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
    assert job.status is JobStatus.CANCELLED


def test_JobMetrics_StreamTest__when_jobRunning_then_metricsEventuallyExist() -> None:
    put_into_map(2, 1)
    job = submit()
    try:
        assert_sink_size(2)
        eventually(lambda: assert_metrics(job, 3, 1))

        put_into_map(1, 1)
        assert_sink_size(3)
        eventually(lambda: assert_metrics(job, 5, 2))
    finally:
        cancel(job)


def test_JobMetrics_StreamTest__when_jobCancelled_then_terminalMetricsExist() -> None:
    put_into_map(2, 1)
    job = submit()
    put_into_map(1, 1)
    assert_sink_size(3)
    eventually(lambda: assert_metrics(job, 5, 2))

    cancel(job)
    assert_metrics(job, 5, 2)


def test_JobMetrics_StreamTest__when_suspendAndResume_then_metricsReset() -> None:
    put_into_map(2, 1)
    job = submit(ProcessingGuarantee.EXACTLY_ONCE)
    try:
        put_into_map(1, 1)
        assert_sink_size(3)
        eventually(lambda: assert_metrics(job, 5, 2))

        job.suspend(TIMEOUT)
        assert job.status is JobStatus.SUSPENDED
        assert_metrics(job, 5, 2)

        put_into_map(1, 1)
        assert_metrics(job, 5, 2)

        job.resume()
        assert status_of(job) is JobStatus.RUNNING
        assert_sink_size(4)
        eventually(lambda: assert_metrics(job, 2, 1))

        put_into_map(1, 1)
        assert_sink_size(5)
        eventually(lambda: assert_metrics(job, 4, 2))
    finally:
        cancel(job)
    assert_metrics(job, 4, 2)


def test_JobMetrics_StreamTest__when_jobRestarted_then_metricsReset() -> None:
    put_into_map(2, 1)
    job = submit()
    try:
        assert_sink_size(2)
        eventually(lambda: assert_metrics(job, 3, 1))

        put_into_map(1, 1)
        assert_sink_size(3)
        eventually(lambda: assert_metrics(job, 5, 2))

        restart(job)
        assert_sink_size(6)  # the journal is read again from its start
        eventually(lambda: assert_metrics(job, 5, 2))
        assert job.restarts == 1

        put_into_map(1, 1)
        assert_sink_size(7)
        eventually(lambda: assert_metrics(job, 7, 3))
    finally:
        cancel(job)
    assert_metrics(job, 7, 3)


def test_JobMetrics_StreamTest__when_jobRestarted_then_metricsReset_withJournal() -> None:
    job = submit()
    try:
        assert job.status is JobStatus.RUNNING
        eventually(lambda: assert_metrics(job, 0, 0))

        put_into_map(2, 1)
        assert_sink_size(2)
        eventually(lambda: assert_metrics(job, 3, 1))

        restart(job)
        assert_sink_size(4)
        eventually(lambda: assert_metrics(job, 3, 1))

        put_into_map(1, 1)
        assert_sink_size(5)
        eventually(lambda: assert_metrics(job, 5, 2))
    finally:
        cancel(job)
    assert_metrics(job, 5, 2)

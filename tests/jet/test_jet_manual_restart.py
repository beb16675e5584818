"""Jet's `ManualRestartTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

One vertex of `NoOutputSourceP`s (a source that emits nothing and completes once the test lets it
proceed) behind a counting `MockPS`, one per member (Jet's members each deserialize their own
copy), on the local runner with 2 simulated members and local parallelism 1, as Jet's 2 members.
`job.restart()` is `LocalJob.restart()` (docs/fault-tolerance.md, "What survives what"): without a
processing guarantee, a new execution from the beginning; with one, a terminal snapshot that the
new execution restores. Jet's `assertTrueEventually` is `tests.waiting.wait_until`. Each test is
named after the Jet case it ports.

Differences, by design:
- `when_jobIsRunning_then_itRestarts`: Jet adds 2 members before the restart, checks for 3 s that
  the job did not restart on its own, and expects the restarted execution on all 4 members. The
  local runner's members cannot join, and `restart()` restarts on the same members (the new
  member count is `suspend()` and `resume(member_count=...)`, ported in `test_jet_suspend_resume`):
  here the restarted execution inits the same 2 suppliers again.
- `when_autoScalingDisabled_then_jobRestarts`: jetspark has no auto-scaling (members never join
  or leave a job); the case runs with a processing guarantee instead, which makes the restart
  graceful (`..._graceful`), and `..._nothingReplayed` / `..._collectedDropped` check what each
  kind of restart does to the output.
- `when_jobIsNotBeingExecuted_then_itCannotBeRestarted`: Jet refuses (`IllegalStateException:
  Cannot RESTART`) a job whose execution has not started (status STARTING). jetspark has no
  STARTING: a submitted job is RUNNING, and a `restart()` before its execution exists is taken
  and done as soon as it does (`LocalJob.restart`). The port holds the first execution's setup
  and checks that it is then restarted.
- `when_jobIsCompleted_then_itCannotBeRestarted`: Jet's `IllegalStateException("Cannot
  RESTART ...")` is a `ValueError` naming the status. Jet's case cancels the job (its name
  notwithstanding); `..._completed` restarts one that completed.
- `when_terminalSnapshotFails_then_previousSnapshotUsed`: Jet's failing `MapStore` on the snapshot
  maps is a checkpoint root on a file system whose snapshot files fail to be written while the
  test says so. Jet's throttled generator and `sleepMillis(100)` are a generator that stops at
  offsets the test chooses: it holds at 100 until a snapshot with that offset is committed, the
  store starts failing, it runs on to 200 and holds there, and then the test restarts the job. The
  terminal snapshot fails, so the new execution restores the one at 100: offsets 100..199 reach the
  sink twice, the others once (Jet: "some ones, then some twos, then some ones").
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from jetspark import (
    DAG,
    AbstractProcessor,
    BroadcastKey,
    Edge,
    Inbox,
    JobCancelledError,
    JobConfig,
    ProcessingGuarantee,
    Processor,
    ProcessorContext,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    SupplierContext,
)
from jetspark import processors as P
from jetspark.core.suppliers import MemberSuppliers
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from tests.waiting import wait_until

NODE_COUNT = 2
LOCAL_PARALLELISM = 1
TIMEOUT = 60
PROTOCOL = "jetspark-manual-restart"


class Record:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proceed = threading.Event()
        #: Set: every supplier's `init` waits for it (holds the execution's setup).
        self.init_gate = threading.Event()
        self.init_gate.set()
        self.init_count = 0
        self.close_count = 0
        self.close_errors: list[BaseException] = []
        self.started = 0  # processors that ran `complete()` at least once

    def count_init(self) -> None:
        with self.lock:
            self.init_count += 1


record = Record()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global record
    record = Record()


class NoOutputSourceP(AbstractProcessor):
    def init_processor(self, context: ProcessorContext) -> None:
        self._started = False

    def complete(self) -> bool:
        if not self._started:
            self._started = True
            with record.lock:
                record.started += 1
        return record.proceed.is_set()

    def save_to_snapshot(self) -> bool:
        return True


class MockPS(ProcessorSupplier):
    def init(self, context: SupplierContext) -> None:
        assert record.init_gate.wait(TIMEOUT), "the test never let the execution's setup go on"
        record.count_init()

    def get(self, count: int) -> Sequence[Processor]:
        return [NoOutputSourceP() for _ in range(count)]

    def close(self, error: BaseException | None) -> None:
        with record.lock:
            record.close_count += 1
            if error is not None:
                record.close_errors.append(error)


class PerMember(ProcessorMetaSupplier):
    """Each member gets its own supplier, as Jet's members each deserialize their own copy."""

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        return {index: MockPS() for index in member_indexes}


def submit(guarantee: ProcessingGuarantee = ProcessingGuarantee.NONE) -> LocalJob:
    dag = DAG()
    dag.new_vertex("test", PerMember(), LOCAL_PARALLELISM)
    config = JobConfig(processing_guarantee=guarantee, snapshot_interval_millis=3_600_000)
    return LocalRunner(NODE_COUNT).submit(dag, config)


def status(job: LocalJob) -> JobStatus:
    """The status now (a call, so that type checkers do not carry over an earlier check)."""
    return job.status


def init_count() -> int:
    with record.lock:
        return record.init_count


def restart_when_running(guarantee: ProcessingGuarantee) -> None:
    job = submit(guarantee)
    wait_until(lambda: init_count() == NODE_COUNT and record.started == NODE_COUNT, "the job to run")
    assert init_count() == NODE_COUNT  # nothing restarted on its own

    job.restart()

    wait_until(lambda: init_count() == NODE_COUNT * 2, "the restarted execution's suppliers")
    assert job.status is JobStatus.RUNNING
    record.proceed.set()
    job.join(TIMEOUT)
    assert status(job) is JobStatus.COMPLETED
    assert init_count() == NODE_COUNT * 2
    assert record.close_count == NODE_COUNT * 2
    assert job.restarts == 0  # a restart asked for is no failure


def test_ManualRestartTest__when_jobIsRunning_then_itRestarts() -> None:
    restart_when_running(ProcessingGuarantee.NONE)


def test_ManualRestartTest__when_jobIsRunning_then_itRestarts__graceful() -> None:
    restart_when_running(ProcessingGuarantee.EXACTLY_ONCE)


def test_ManualRestartTest__when_jobIsNotBeingExecuted_then_itCannotBeRestarted() -> None:
    """jetspark's side (module docstring): the restart is taken before the execution exists, and
    that execution is then restarted."""
    record.init_gate.clear()
    job = submit()
    assert job.status is JobStatus.RUNNING
    job.restart()  # the first execution's setup waits in its suppliers' `init`
    record.init_gate.set()
    wait_until(lambda: init_count() == NODE_COUNT * 2, "the restarted execution's suppliers")
    record.proceed.set()
    job.join(TIMEOUT)
    assert status(job) is JobStatus.COMPLETED
    assert record.close_count == NODE_COUNT * 2


def test_ManualRestartTest__when_jobIsCompleted_then_itCannotBeRestarted() -> None:
    job = submit()
    wait_until(lambda: record.started == NODE_COUNT, "the job to run")
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)
    with pytest.raises(ValueError, match="cancelled; only a running job restarts"):
        job.restart()
    assert job.status is JobStatus.CANCELLED
    assert init_count() == NODE_COUNT


def test_ManualRestartTest__when_jobIsCompleted_then_itCannotBeRestarted__completed() -> None:
    """The name's own case: a job that completed cannot be restarted either."""
    record.proceed.set()
    job = submit().join(TIMEOUT)
    assert job.status is JobStatus.COMPLETED
    with pytest.raises(ValueError, match="completed; only a running job restarts"):
        job.restart()


# ---- what a restart does to the output ----------------------------------------------------


class Counting(AbstractProcessor):
    """Emits 0..`count`-1, holding at `hold_at` until `released`; saves its offset."""

    hold_at = 0
    released = threading.Event()
    held = threading.Event()
    restored = threading.Event()
    made = 0  # instances made: one per execution

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.offset = 0
        Counting.made += 1

    def complete(self) -> bool:
        while self.offset < self.count:
            if self.offset == Counting.hold_at and not Counting.released.is_set():
                Counting.held.set()
                return False
            if not self.try_emit(self.offset):
                return False
            self.offset += 1
        return True

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(BroadcastKey("offset"), self.offset)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.offset = value
        Counting.restored.set()


def restart_mid_stream(guarantee: ProcessingGuarantee) -> LocalJob:
    """A 1-processor job of 0..99, restarted while held at 50; then released to its end."""
    Counting.hold_at = 50
    Counting.released, Counting.held, Counting.restored = (threading.Event() for _ in range(3))
    Counting.made = 0
    dag = DAG()
    source = dag.new_vertex("source", lambda: Counting(100), 1)
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(source, sink))
    config = JobConfig(processing_guarantee=guarantee, snapshot_interval_millis=3_600_000)
    job = LocalRunner(1).submit(dag, config)
    assert Counting.held.wait(TIMEOUT)
    wait_until(lambda: len(job.result("sink")) == 50, "the sink to receive 0..49")
    job.restart()
    if guarantee is not ProcessingGuarantee.NONE:
        assert Counting.restored.wait(TIMEOUT)
    else:
        wait_until(lambda: Counting.made == 2, "the new execution's source")
    Counting.released.set()
    return job.join(TIMEOUT)


def test_ManualRestartTest__when_autoScalingDisabled_then_jobRestarts__nothingReplayed() -> None:
    """With a guarantee the restart is graceful: the sink gets every item once."""
    job = restart_mid_stream(ProcessingGuarantee.EXACTLY_ONCE)
    assert job.result("sink") == list(range(100))


def test_ManualRestartTest__when_autoScalingDisabled_then_jobRestarts__collectedDropped() -> None:
    """Without one the new execution starts from the beginning, and what the first collected is
    dropped: the sink holds the new execution's items only."""
    job = restart_mid_stream(ProcessingGuarantee.NONE)
    assert job.result("sink") == list(range(100))


# ---- the terminal snapshot fails ----------------------------------------------------------

NUM_ELEMENTS = 300
FIRST_HOLD = 100
SECOND_HOLD = 200


class Control:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.limit: int | None = FIRST_HOLD  # offsets at or past it wait; None: run to the end
        self.offsets: dict[int, int] = {}  # processor index -> offset now
        self.failing = threading.Event()  # snapshot files fail to be written
        self.store_failed = threading.Event()
        self.restored = threading.Event()
        self.sink: list[tuple[int, int]] = []

    def all_at(self, offset: int) -> bool:
        with self.lock:
            return len(self.offsets) == NODE_COUNT and all(o == offset for o in self.offsets.values())


control = Control()


class FailingWhenToldFileSystem(MemoryFileSystem):  # type: ignore[misc]  # fsspec is untyped
    """An in-memory file system (its own) whose snapshot files fail to be written while
    `control.failing` is set."""

    protocol = PROTOCOL
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]

    def pipe_file(self, path: str, value: bytes, *args: Any, **kwargs: Any) -> None:
        if "/snapshots/" in path and control.failing.is_set():
            control.store_failed.set()
            raise OSError(f"{path}: this file system fails snapshot files now")
        super().pipe_file(path, value, *args, **kwargs)


fsspec.register_implementation(PROTOCOL, FailingWhenToldFileSystem, clobber=True)


class SequencesInPartitionsGeneratorP(AbstractProcessor):
    """Jet's generator with one partition per processor (its global index): emits
    `(partition, offset)` for offsets 0..NUM_ELEMENTS-1, not past `control.limit`; saves its offset."""

    def init_processor(self, context: ProcessorContext) -> None:
        self.partition = context.global_processor_index
        self.offset = 0
        self._note()

    def _note(self) -> None:
        with control.lock:
            control.offsets[self.partition] = self.offset

    def complete(self) -> bool:
        while self.offset < NUM_ELEMENTS:
            limit = control.limit
            if limit is not None and self.offset >= limit:
                return False
            if not self.try_emit((self.partition, self.offset)):
                return False
            self.offset += 1
            self._note()
        return True

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(BroadcastKey(self.partition), self.offset)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if key.key == self.partition:
            self.offset = value
            self._note()
            control.restored.set()


class WriteListP(AbstractProcessor):
    """Jet's `writeListP`: keeps every item it receives, duplicates included."""

    def process(self, ordinal: int, inbox: Inbox) -> None:
        items: list[Any] = []
        inbox.drain_to(items)
        with control.lock:
            control.sink.extend(items)


def test_ManualRestartTest__when_terminalSnapshotFails_then_previousSnapshotUsed() -> None:
    global control
    control = Control()
    dag = DAG()
    source = dag.new_vertex("source", SequencesInPartitionsGeneratorP, 1)
    sink = dag.new_vertex("sink", WriteListP, 1)
    dag.edge(Edge.between(source, sink))
    config = JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=10,
        checkpoint_root=f"{PROTOCOL}://{uuid.uuid4().hex}",
    )
    job = LocalRunner(NODE_COUNT).submit(dag, config)

    # a snapshot taken at offset FIRST_HOLD is committed (the one after the next that starts)
    wait_until(lambda: control.all_at(FIRST_HOLD), "the sources to hold at the first offset")
    committed = job.snapshot_count
    wait_until(lambda: job.snapshot_count >= committed + 2, "a snapshot taken at the first offset")

    # When: the store fails, the sources go on to SECOND_HOLD, and the job is restarted there
    control.failing.set()
    with control.lock:
        control.limit = SECOND_HOLD
    wait_until(lambda: control.all_at(SECOND_HOLD), "the sources to hold at the second offset")
    job.restart()
    assert control.restored.wait(TIMEOUT), "the job did not restart from a snapshot"
    assert control.store_failed.is_set()
    control.failing.clear()
    with control.lock:
        control.limit = None
    job.join(TIMEOUT)

    assert job.status is JobStatus.COMPLETED
    with control.lock:
        received = list(control.sink)
    actual = Counter(offset for partition, offset in received if partition == 0)
    assert actual[0] == 1, f"first item != 1, {sorted(actual.items())}"
    assert actual[NUM_ELEMENTS - 1] == 1, f"last item != 1, {sorted(actual.items())}"
    expected = {o: 2 if FIRST_HOLD <= o < SECOND_HOLD else 1 for o in range(NUM_ELEMENTS)}
    assert dict(actual) == expected

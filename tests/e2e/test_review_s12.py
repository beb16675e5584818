"""Review of the session-12 changes on the local runner: the defects a review found, each written
as a failing test first and fixed since (stale handles of a job resubmitted in the same process,
a resume that fails, a store that fails once while a sink waits for its covering snapshot, a
cancel that comes as the job finishes)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from examples.streaming_counts import expected_rows, streaming_dag
from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.core import JobAlreadyRunningError, JobConfig, ProcessingGuarantee
from jetspark.core.context import MetaSupplierContext
from jetspark.core.errors import JetsparkError, JobCancelledError, JobTimeoutError
from jetspark.core.suppliers import ProcessorMetaSupplier, ProcessorSupplier
from jetspark.processors.transactional import read_lines, transactional_files
from jetspark.runners import driver_lock, snapshot_io
from jetspark.runners.local import LocalJob, LocalRunner
from tests.e2e.test_job_identity import COUNT, config, submit_gated
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until


def _suspended_then_resubmitted(tmp_path: Path) -> tuple[Path, Path, Gate, LocalJob, LocalJob]:
    """A job suspended (`stale`), then submitted again from the same process, as the docs say
    resumes it (`running`, held at its gate, with a snapshot of its own)."""
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    stale = submit_gated(out, root, gate)
    stale.suspend()
    running = submit_gated(out, root, gate)  # resumes the job, with a snapshot of its own
    return out, root, gate, stale, running


def test_resume_of_a_stale_handle_leaves_the_running_resubmit_its_lock(tmp_path: Path) -> None:
    """`resume()` of the suspended handle is refused (the record names the new run), but
    `identity.take_back` first "acquires" the lock (a no-op: this process holds it, for the
    running resubmit) and then releases it: the running job has no lock any more, so a third
    submit in this process, or another driver, is accepted and runs the job a second time."""
    out, _root, gate, stale, running = _suspended_then_resubmitted(tmp_path)
    with pytest.raises(JobAlreadyRunningError):
        stale.resume()
    try:
        assert driver_lock.holds(running.store), "the refused resume released the running job's lock"
    finally:
        gate.open()
        running.join(300)
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)


def test_cancel_of_a_stale_handle_leaves_the_running_resubmit_alone(tmp_path: Path) -> None:
    """`cancel()` of the suspended handle runs `tidy_store(CANCELLED)`: `store.discard()` deletes
    the job's record, LATEST and snapshots, which belong to the running resubmit now, and
    releases its driver lock. A death of that run then restarts the job from nothing (every row
    again), and another submit is no longer refused."""
    _out, root, gate, stale, running = _suspended_then_resubmitted(tmp_path)
    stale.cancel()
    try:
        assert (root / "counts" / "JOB").exists(), (
            "the stale handle's cancel deleted the running job's record"
        )
        assert driver_lock.holds(running.store), "the stale handle's cancel released the running job's lock"
    finally:
        gate.open()
        running.join(300)


class _RefusesTwoMembers(ProcessorMetaSupplier):
    """The gated source's supplier on every member, refusing (at planning) to run on two members."""

    def __init__(self, supplier: ProcessorSupplier) -> None:
        self.supplier = supplier

    def init(self, context: MetaSupplierContext) -> None:
        if context.member_count == 2:
            raise ValueError("this source runs on one member only")

    def get(self, member_indexes: Sequence[int]) -> dict[int, ProcessorSupplier]:
        return {member: self.supplier for member in member_indexes}


def test_a_resume_that_fails_lets_the_job_be_submitted_again(tmp_path: Path) -> None:
    """`LocalJob.resume()` takes the lock back (`identity.take_back`), then plans; a planning
    error (here a meta supplier refusing the new member count) leaves the lock held with the job
    still SUSPENDED and nothing running. Every later submit of the job in this process is
    refused as "running in this process already" (before the change it was accepted)."""
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)

    def dag():  # type: ignore[no-untyped-def]
        return streaming_dag(str(out), None, source=_RefusesTwoMembers(gated_stream(gate, count=COUNT)))

    job = LocalRunner(1).submit(dag(), config(root))
    wait_until(lambda: job.last_snapshot is not None, "a committed snapshot")
    job.suspend()
    with pytest.raises(Exception, match="runs on one member only"):
        job.resume(member_count=2)
    gate.open()
    again = LocalRunner(1).submit(dag(), config(root))  # was refused: "running in this process already"
    again.join(300)
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)


def test_a_sink_waiting_in_complete_does_not_wait_out_the_interval_after_a_failed_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The requested snapshot could not be stored once (a full disk for a moment):
    `_last_snapshot_failed` makes `_want_snapshot` ignore every request until the next
    interval's snapshot, so the transactional sink, which may no longer commit in `complete()`,
    sits with all its input for the whole interval. With an interval longer than the
    quiescence timeout the job fails with `QuiescenceError`; with quiescence off it just waits
    (ten minutes here). Before the change `complete()` committed and the job ended."""
    out, root = str(tmp_path / "out"), tmp_path / "ck"
    real = snapshot_io.commit_snapshot
    failures: list[int] = []

    def fails_once(*args: Any, **kwargs: Any) -> Any:
        if not failures:
            failures.append(1)
            raise OSError(28, "No space left on device (injected, once)")
        return real(*args, **kwargs)

    monkeypatch.setattr(snapshot_io, "commit_snapshot", fails_once)
    dag = DAG()
    numbers = dag.new_vertex("numbers", P.from_iterable(range(100)), 1)
    sink = dag.new_vertex("sink", transactional_files(out), 1)
    dag.edge(Edge.between(numbers, sink))
    ten_minutes = JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=600_000,
        checkpoint_root=str(root),
        quiescence_timeout_seconds=1.0,
    )
    LocalRunner(1).run(dag, ten_minutes, timeout=60)  # failed before: QuiescenceError after 1 s
    assert failures, "the store never failed"
    assert sorted(read_lines(out)) == sorted(str(n) for n in range(100))


def test_join_of_a_suspended_handle_ends_once_a_resubmit_completed_the_job(tmp_path: Path) -> None:
    """join() now waits through a suspension "until the job is resumed and ends". The docs name a
    submit from the same process as the way to resume a suspended job, but that resumes it under
    a new handle: the old one stays SUSPENDED for good, so a join() on it (a thread in
    `LocalRunner.run`, a notebook cell) never returns, although the job completed."""
    out, _root, gate, stale, running = _suspended_then_resubmitted(tmp_path)
    gate.open()
    running.join(300)
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)
    try:  # the job is done; the handle's join() waits for a resume that can never come
        stale.join(5)
    except JobTimeoutError:
        pytest.fail("join() of the suspended handle still waits after the resubmitted job completed")
    except JetsparkError:
        pass  # any other ending (say: taken over by another submit) is an answer


class _CancelsAtClose(ProcessorMetaSupplier):
    """The numbers' supplier everywhere; its `close` (after the execution ended, before the job
    is settled) cancels the job: a cancel that arrives as the job finishes."""

    def __init__(self, supplier: ProcessorSupplier, box: dict[str, Any], ready: threading.Event) -> None:
        self.supplier = supplier
        self.box = box
        self.ready = ready

    def get(self, member_indexes: Sequence[int]) -> dict[int, ProcessorSupplier]:
        return {member: self.supplier for member in member_indexes}

    def close(self, error: BaseException | None) -> None:
        if error is None and self.ready.wait(60):
            self.box["job"].cancel()


def test_a_cancel_as_the_job_finishes_keeps_the_record_of_its_committed_output(tmp_path: Path) -> None:
    """ "cancel of a completed job is a no-op" holds only once `settle` ran: a cancel after every
    processor finished (the sinks' output committed in phase 2) but before `settle` makes the job
    CANCELLED, and `tidy_store` deletes its directory, record included. The next submit under
    the name runs the whole job again under a new id: every row a second time."""
    out, root = str(tmp_path / "out"), tmp_path / "ck"
    box: dict[str, Any] = {}
    ready = threading.Event()
    dag = DAG()
    numbers = dag.new_vertex("numbers", _CancelsAtClose(P.from_iterable(range(100)), box, ready), 1)
    dag.edge(Edge.between(numbers, dag.new_vertex("sink", transactional_files(out), 1)))
    job = LocalRunner(1).submit(dag, config(root, interval=600_000))
    box["job"] = job
    ready.set()
    with contextlib.suppress(JobCancelledError):
        job.join(60)
    assert sorted(read_lines(out)) == sorted(str(n) for n in range(100)), "the sink committed its output"
    assert (root / "counts" / "JOB").exists(), (
        f"the job ended {job.status.value} and its record is gone, although every row is committed: "
        "a submit of it again writes them all a second time"
    )

"""Review of c93f5cc and 9d2dcad (join through a suspension, cancel of a suspended job through
`coordinator.cancel_suspended`, `identity.take_back`, a failed resume letting go of the lock, the
web UI's wait): the defects a second review found, each written as a failing test first and
fixed since (`resume` waits for the suspension's thread and, like `cancel`, holds the handle's
`_control` lock; `take_back` lets go of the lock when the record cannot be read; the web UI's
wait and `join` tell a take-over from a cancel; a failed resume keeps the member count).

The races are made deterministic by pausing one side at a named step (a patched function that
waits on an event the test sets), never by sleeping."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from examples.streaming_counts import streaming_dag
from jetspark import api
from jetspark.checkpoint import CheckpointStore, CorruptSnapshotError
from jetspark.core import JobAlreadyRunningError
from jetspark.core.errors import JetsparkError, JobCancelledError
from jetspark.runners import driver_lock, identity
from jetspark.runners import job as job_module
from jetspark.runners import local as local_module
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from jetspark.web import server as web_server
from tests.e2e.test_job_identity import COUNT, config
from tests.e2e.test_review_s12 import _RefusesTwoMembers
from tests.gates import Gate, ask_to_suspend, gated_stream
from tests.waiting import wait_until

#: A fallback only: how long a paused step waits for a fixed runner that blocks on it.
FALLBACK_SECONDS = 10


def _held_job(tmp_path: Path) -> tuple[Path, Gate, LocalJob]:
    """The streaming-counts job on a checkpoint root, held at its gate, with a committed snapshot."""
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    job = LocalRunner(1).submit(
        streaming_dag(str(out), None, source=gated_stream(gate, count=COUNT)), config(root)
    )
    wait_until(lambda: job.last_snapshot is not None, "a committed snapshot")
    return root, gate, job


def _let_it_end(gate: Gate, job: LocalJob) -> None:
    """Clean-up: whatever runs of the job still runs ends."""
    gate.open()
    thread = job._thread
    if thread is not None:
        thread.join(300)


def _suppressed(action: Callable[[], object]) -> None:
    with contextlib.suppress(JetsparkError, ValueError):
        action()


def _in_thread(action: Callable[[], object]) -> None:
    """Run `action` on another thread (as the web UI's thread pool or a second notebook cell
    would) and wait until it returned; a runner that makes it wait for the caller is given up on
    after FALLBACK_SECONDS (then it finishes later, in its own order)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as error:  # reported by the assertions of the test
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(FALLBACK_SECONDS)


def test_resume_while_the_suspending_thread_still_tidies_keeps_lock_and_join(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`settle` makes the job SUSPENDED (the web UI then shows its resume button, a `join` polling
    the status sees it) before the job thread's `tidy_store` lets go of the driver lock and sets
    `_finished`. A `resume()` in that window is accepted (`take_back`: this process holds the lock,
    the record names this run), clears `_finished` and starts a new run; then the old thread
    releases the lock the new run relies on and sets `_finished`: the job RUNS without its driver
    lock (another driver or submit is accepted and runs it twice) and `join()` returns at once."""
    in_tidy, go_on = threading.Event(), threading.Event()
    real_tidy = local_module.tidy_store

    def paused_tidy(name: str, store: Any, record: Any, status: JobStatus, *more: Any) -> None:
        if status is JobStatus.SUSPENDED and not go_on.is_set():
            in_tidy.set()
            go_on.wait(FALLBACK_SECONDS)
        real_tidy(name, store, record, status, *more)

    monkeypatch.setattr(local_module, "tidy_store", paused_tidy)
    _root, gate, job = _held_job(tmp_path)
    old_thread = job._thread
    assert old_thread is not None
    ask_to_suspend(job)
    assert in_tidy.wait(120), "the job never reached its tidying after the suspension"
    assert job.status is JobStatus.SUSPENDED  # what the web UI and join() see
    resume_waits = threading.Event()
    real_wait = job._finished.wait

    def noted_wait(timeout: float | None = None) -> bool:
        resume_waits.set()
        return real_wait(timeout)

    monkeypatch.setattr(job._finished, "wait", noted_wait)
    try:
        # the resume waits until the suspension's thread has tidied (refusing is an answer too)
        resuming = threading.Thread(target=lambda: _suppressed(job.resume), daemon=True)
        resuming.start()
        assert resume_waits.wait(120), "resume() did not wait for the suspension to end"
        go_on.set()
        resuming.join(120)
        old_thread.join(120)
        if job.status is JobStatus.RUNNING:
            assert job.store is not None
            assert driver_lock.holds(job.store), "the resumed job runs without its driver lock"
            assert not job.ended, "join() of the resumed, running job would return at once"
    finally:
        go_on.set()
        _let_it_end(gate, job)


def test_cancel_during_resume_does_not_leave_a_cancelled_job_running_from_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`resume()` holds no lock between its status check and `start()`. The web UI runs its
    buttons on a thread pool, so a cancel pressed as the job resumes lands there: `cancel()` sees
    SUSPENDED, `cancel_suspended` -> `take_back` succeeds (this process holds the lock, for the
    resume) and `tidy_store(CANCELLED)` deletes the job's directory and releases the lock. Then
    `resume()` reads no LATEST and starts the job from the beginning: a job whose cancel returned
    runs again from nothing (an EXACTLY_ONCE sink writes every row again), with no record and no
    lock. Either the cancel should win (resume refused) or cancel the resumed run."""
    root, gate, job = _held_job(tmp_path)
    job.suspend()
    real_take_back = identity.take_back
    fired: list[bool] = []

    def take_back_then_cancel(store: CheckpointStore, record: Any) -> None:
        real_take_back(store, record)
        if not fired:  # resume's own call; cancel_suspended's comes after and only takes back
            fired.append(True)
            threading.Thread(target=job.cancel, daemon=True).start()  # waits for the resume, or wins

    monkeypatch.setattr(identity, "take_back", take_back_then_cancel)
    try:
        with contextlib.suppress(JetsparkError, ValueError):  # refused: the cancel won
            job.resume()
        assert fired, "resume() no longer takes the job back"
        # the cancel waits for the resume (one of the two moves the job on), then cancels the run
        wait_until(lambda: job.status is JobStatus.CANCELLED, "the cancel of the resumed run")
        with pytest.raises(JobCancelledError):
            job.join(60)
        assert not (root / "counts" / "JOB").exists(), "the cancelled job's directory is still there"
    finally:
        _let_it_end(gate, job)


def test_run_with_the_web_ui_ends_when_a_resubmit_took_the_suspended_job_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jetspark run --ui` of a job suspended from the page prints "run the job file again to
    resume it" and waits in `wait_while_suspended` until the status changes. A run of the job
    file again (another driver, or a submit in this process) takes the job over; this handle stays
    SUSPENDED for good, so `_wait` never returns. Plain `join()` (no UI) ends with
    `JobAlreadyRunningError` after about a second; the UI path has no such check."""
    _root, gate, stale = _held_job(tmp_path)
    stale.suspend()
    running = LocalRunner(1).submit(
        streaming_dag(str(tmp_path / "out"), None, source=gated_stream(gate, count=COUNT)),
        config(tmp_path / "ck"),
    )
    polls: list[int] = []
    budget = 20 * job_module.TAKEN_OVER_EVERY_POLLS  # twenty times what join() needs to tell

    class StillWaiting(Exception):
        pass

    def counted_sleep(seconds: float) -> None:
        polls.append(1)
        if len(polls) > budget:
            raise StillWaiting(f"still waiting after {len(polls)} polls of a job taken over")

    class Clock:
        sleep = staticmethod(counted_sleep)

    class Server:
        url = "http://127.0.0.1:1/"

        def add(self, job: Any) -> int:
            return 1

    monkeypatch.setattr(web_server, "time", Clock)
    monkeypatch.setattr(job_module, "SUSPENDED_POLL_SECONDS", 0.0)
    try:
        with pytest.raises(JobAlreadyRunningError):
            api._wait(stale, stale.config, Server(), None)
    finally:
        monkeypatch.undo()
        gate.open()
        running.join(300)


def test_join_of_a_suspended_job_cancelled_by_its_own_handle_says_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`join()` polls: status SUSPENDED, then every tenth look `_taken_over()` reads the record.
    `cancel()` of the same handle sets CANCELLED and then deletes the directory, record first. When
    it lands between the two (here: just before the read), `_taken_over()` reads no record and
    `join()` tells the caller the job was taken over by another submit and to join that handle,
    for a job this handle cancelled; code waiting for `JobCancelledError` (api._wait, a script)
    gets the wrong answer. The status should be looked at again after the read."""
    _root, gate, job = _held_job(tmp_path)
    job.suspend()
    store = job.store
    assert store is not None
    real_read = store.read_record
    joiner: list[int] = []

    def read_after_a_cancel() -> Any:
        if threading.get_ident() in joiner and job.status is not JobStatus.CANCELLED:
            _in_thread(job.cancel)  # the cancel from another thread lands just before the read
        return real_read()

    monkeypatch.setattr(store, "read_record", read_after_a_cancel)
    monkeypatch.setattr(job_module, "SUSPENDED_POLL_SECONDS", 0.0)
    joiner.append(threading.get_ident())
    try:
        with pytest.raises(JobCancelledError):
            job.join(60)
    finally:
        _let_it_end(gate, job)


def test_a_resume_that_cannot_read_the_record_lets_go_of_the_lock(tmp_path: Path) -> None:
    """The docs: "`resume()` fails ... the job stays suspended and lets go of its lock". The fix
    wraps `start()` only: `identity.take_back` acquires the lock and then reads the record, and an
    unreadable record (`CorruptSnapshotError`) leaves the lock held by this process, with nothing
    running. `cancel()` goes the same way (`cancel_suspended` -> `take_back`)."""
    root, gate, job = _held_job(tmp_path)
    job.suspend()
    try:
        assert job.store is not None
        assert not driver_lock.holds(job.store), "a suspended job lets go of its lock"
        (root / "counts" / "JOB").write_text("{not json")
        with pytest.raises(CorruptSnapshotError):
            job.resume()
        assert job.status is JobStatus.SUSPENDED
        assert not driver_lock.holds(job.store), "the failed resume kept the driver lock"
    finally:
        if job.store is not None:
            driver_lock.release(job.store)
        _let_it_end(gate, job)


def test_a_failed_resume_on_another_member_count_leaves_the_handle_as_it_was(tmp_path: Path) -> None:
    """`LocalJob.resume(member_count)` assigns `self.member_count` before `take_back` and planning.
    When the plan is refused (a meta supplier that runs on one member only), the job stays
    suspended, as documented, but its handle now says it has two members, and `resume()` without
    a count, which should resume it as it was, fails the same way."""
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    source = _RefusesTwoMembers(gated_stream(gate, count=COUNT))
    job = LocalRunner(1).submit(streaming_dag(str(out), None, source=source), config(root))
    wait_until(lambda: job.last_snapshot is not None, "a committed snapshot")
    job.suspend()
    with pytest.raises(ValueError, match="runs on one member only"):
        job.resume(member_count=2)
    try:
        assert job.member_count == 1, f"the refused resume left member_count {job.member_count}"
        job.resume()
    finally:
        _let_it_end(gate, job)
    job.join(300)

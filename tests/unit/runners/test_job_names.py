"""A named job runs once at a time per name in a process (`runners.job_names`, Jet's
`JobAlreadyExistsException`): refused while the job runs, free again once it completed, failed,
was cancelled or is suspended (its resume is then refused while another job of the name runs),
never taken by a submit that failed; jobs with and without a checkpoint store share the names."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    JobAlreadyRunningError,
    JobCancelledError,
    JobConfig,
    JobFailedError,
    ProcessingGuarantee,
)
from jetspark.runners import job_names
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

TIMEOUT = 60


class Gate:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.proceed = threading.Event()


gate = Gate()


@pytest.fixture(autouse=True)
def _fresh_gate() -> Iterator[None]:
    global gate
    gate = Gate()
    yield
    gate.proceed.set()


class WaitsForTheGate(AbstractProcessor):
    def complete(self) -> bool:
        gate.started.set()
        return gate.proceed.is_set()


class Fails(AbstractProcessor):
    def complete(self) -> bool:
        raise ValueError("boom")


def submit(name: str | None, supplier: object = WaitsForTheGate, **config: object) -> LocalJob:
    dag = DAG()
    dag.new_vertex("source", supplier)  # type: ignore[arg-type]
    return LocalRunner().submit(dag, JobConfig(name=name, **config))  # type: ignore[arg-type]


def running(name: str, **config: object) -> LocalJob:
    job = submit(name, **config)
    assert gate.started.wait(TIMEOUT)
    return job


def test_a_second_job_of_a_running_jobs_name_is_refused_naming_it() -> None:
    first = running("counts")
    with pytest.raises(JobAlreadyRunningError, match=r"^job 'counts' is running in this process already"):
        submit("counts")
    assert first.status is JobStatus.RUNNING, "the refused submit leaves the running job alone"
    gate.proceed.set()
    first.join(TIMEOUT)
    assert first.status is JobStatus.COMPLETED


def test_the_name_is_free_once_the_job_completed_failed_or_was_cancelled() -> None:
    first = running("counts")
    gate.proceed.set()
    first.join(TIMEOUT)
    submit("counts").join(TIMEOUT)  # after COMPLETED

    with pytest.raises(JobFailedError):
        submit("counts", Fails).join(TIMEOUT)
    submit("counts").join(TIMEOUT)  # after FAILED

    gate.proceed.clear()
    gate.started.clear()
    cancelled = running("counts")
    cancelled.cancel()  # free at once, as the status says CANCELLED at once
    again = submit("counts")
    with pytest.raises(JobCancelledError):
        cancelled.join(TIMEOUT)
    gate.proceed.set()
    again.join(TIMEOUT)
    assert again.status is JobStatus.COMPLETED


def test_a_suspended_jobs_name_is_free_and_its_resume_waits_for_the_other_job_to_end() -> None:
    """A store-less suspended job lives only in its handle, which its caller may drop (`api.run`
    on Ctrl-C): its name must not stay taken. Its resume is refused while the other job runs."""
    job = running("counts", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)
    job.suspend(TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    gate.started.clear()
    other = running("counts")
    with pytest.raises(
        JobAlreadyRunningError, match=r"^job 'counts' cannot resume: another job of that name"
    ):
        job.resume()
    assert job.status is JobStatus.SUSPENDED, "the refused resume leaves it suspended"
    gate.proceed.set()
    other.join(TIMEOUT)
    job.resume()
    job.join(TIMEOUT)
    assert job.status is JobStatus.COMPLETED


def test_a_suspended_job_resumes_while_no_other_job_took_its_name() -> None:
    job = running("counts", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)
    job.suspend(TIMEOUT)
    job.resume()
    with pytest.raises(JobAlreadyRunningError, match=r"^job 'counts' is running in this process already"):
        submit("counts")
    gate.proceed.set()
    job.join(TIMEOUT)
    assert job.status is JobStatus.COMPLETED


@pytest.mark.parametrize(
    "stored_first", [True, False], ids=["stored-then-storeless", "storeless-then-stored"]
)
def test_jobs_with_and_without_a_checkpoint_store_share_the_names(tmp_path: Path, stored_first: bool) -> None:
    stored = {
        "processing_guarantee": ProcessingGuarantee.EXACTLY_ONCE,
        "checkpoint_root": str(tmp_path),
        "snapshot_interval_millis": 3_600_000,
    }
    first, second = (stored, {}) if stored_first else ({}, stored)
    job = running("counts", **first)
    with pytest.raises(JobAlreadyRunningError, match=r"^job 'counts' is running in this process already"):
        submit("counts", **second)
    assert not (tmp_path / "counts").exists() or stored_first, "a refused submit touches no store"
    gate.proceed.set()
    job.join(TIMEOUT)


def test_other_names_and_unnamed_jobs_run_beside_it() -> None:
    first = running("counts")
    beside = [submit("other"), submit(None), submit(None)]
    gate.proceed.set()
    for job in [first, *beside]:
        job.join(TIMEOUT)
        assert job.status is JobStatus.COMPLETED


def test_a_submit_that_fails_takes_no_name() -> None:
    class BadSupplier:
        def __call__(self) -> AbstractProcessor:
            raise RuntimeError("cannot make a processor")

    with pytest.raises(Exception, match="cannot make a processor"):
        submit("counts", BadSupplier()).join(TIMEOUT)
    job = submit("counts")  # free: a failed submit or a failed job frees it
    gate.proceed.set()
    job.join(TIMEOUT)
    with job_names.reserve("counts"):
        pass  # a block that ends without a job leaves the name free too
    submit("counts").join(TIMEOUT)


def test_of_two_racing_submits_of_a_name_one_runs() -> None:
    outcomes: list[object] = []
    both_ready = threading.Barrier(2)

    def race() -> None:
        both_ready.wait(TIMEOUT)
        try:
            outcomes.append(submit("raced"))
        except JobAlreadyRunningError as refused:
            outcomes.append(refused)

    threads = [threading.Thread(target=race) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    jobs = [o for o in outcomes if isinstance(o, LocalJob)]
    assert len(jobs) == 1 and len(outcomes) == 2, outcomes
    gate.proceed.set()
    jobs[0].join(TIMEOUT)


def test_a_job_with_a_checkpoint_store_is_kept_to_one_run_by_its_driver_lock_instead(
    tmp_path: object,
) -> None:
    """With a store, a submit of the suspended job resumes it (the driver lock's rule)."""
    config = {
        "processing_guarantee": ProcessingGuarantee.EXACTLY_ONCE,
        "checkpoint_root": str(tmp_path),
        "snapshot_interval_millis": 3_600_000,
    }
    job = running("stored", **config)
    job.suspend(TIMEOUT)
    gate.proceed.set()
    again = submit("stored", **config)
    again.join(TIMEOUT)
    assert again.status is JobStatus.COMPLETED

"""The job lifecycle every runner shares (`runners.coordinator`): the restart loop, the final
status, where a job starts; and the local runner claiming its id before it builds anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from jetspark.checkpoint import CheckpointStore
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.core.errors import JobFailedError, RestartableError
from jetspark.processors import sinks, sources
from jetspark.runners.coordinator import MAX_BACKOFF, RestartLoop, Step, Verdict, settle, where_to_start
from jetspark.runners.job import JobHandle, JobStatus
from jetspark.runners.local import LocalRunner


def restartable_failure(text: str = "flaky") -> JobFailedError:
    error = JobFailedError(f"vertex 'v': {text}", vertex="v")
    error.__cause__ = RestartableError(text)
    return error


class Scripted:
    """An execution that plays a script of steps and records what the loop asked of it."""

    def __init__(self, steps: list[Step], progress: list[bool] | None = None, fail_restart: bool = False):
        self.steps = list(steps)
        self.progress = list(progress or [])
        self.fail_restart = fail_restart
        self.runs = 0
        self.restarts: list[tuple[int, float]] = []

    def execute(self) -> Step:
        self.runs += 1
        return self.steps.pop(0)

    def verdict(self, error: BaseException) -> tuple[Verdict, BaseException]:
        if isinstance(error, KeyError):
            return Verdict.AGAIN, error
        return (Verdict.RESTART if isinstance(error, JobFailedError) else Verdict.FAIL), error

    def progressed(self) -> bool:
        return self.progress.pop(0) if self.progress else False

    def give_up(self, error: BaseException, restarts: int) -> BaseException:
        return RuntimeError(f"gave up after {restarts}")

    def prepare_restart(self, error: BaseException, restart: int, delay: float) -> BaseException | None:
        self.restarts.append((restart, delay))
        return ValueError("cannot restore") if self.fail_restart else None


def test_restarts_back_off_doubling_up_to_the_cap_then_give_up() -> None:
    slept: list[float] = []
    execution = Scripted([Step(restartable_failure())] * 9)
    error = RestartLoop(8, backoff=1.0, sleep=slept.append).run(execution)
    assert str(error) == "gave up after 8" and execution.runs == 9
    assert [r for r, _ in execution.restarts] == list(range(1, 9))
    assert slept == [1.0, 2.0, 4.0, 8.0, 16.0, MAX_BACKOFF, MAX_BACKOFF, MAX_BACKOFF]


def test_progress_and_committed_steps_start_the_count_afresh() -> None:
    failure = Step(restartable_failure())
    # two failures, a committed epoch, two failures, a snapshot since, one more: never 3 in a row
    steps = [failure, failure, Step(more=True), failure, failure, failure, Step()]
    execution = Scripted(steps, progress=[False, False, False, False, True])
    assert RestartLoop(2, backoff=0.0, sleep=pytest.fail).run(execution) is None
    assert [r for r, _ in execution.restarts] == [1, 2, 1, 2, 1]


def test_asked_for_failures_run_again_uncounted_and_others_end_the_job() -> None:
    execution = Scripted([Step(KeyError("restart asked")), Step(ValueError("broken"))])
    error = RestartLoop(0, backoff=0.0).run(execution)
    assert isinstance(error, ValueError) and execution.runs == 2 and execution.restarts == []


def test_a_restart_that_cannot_restore_ends_the_job_with_its_error() -> None:
    execution = Scripted([Step(restartable_failure())], fail_restart=True)
    assert str(RestartLoop(5, backoff=0.0).run(execution)) == "cannot restore"


class Handle(JobHandle):
    def __init__(self, status: JobStatus = JobStatus.RUNNING) -> None:
        super().__init__()
        self.name = "j"
        self.status = status


def test_settle_keeps_a_cancel_and_otherwise_fails_stops_or_completes_once_committed() -> None:
    assert settle(Handle(JobStatus.CANCELLED), ValueError("late")) is JobStatus.CANCELLED
    failed = Handle()
    assert settle(failed, ValueError("x")) is JobStatus.FAILED and str(failed.error) == "x"
    assert settle(Handle(), None, JobStatus.SUSPENDED, commit=pytest.fail) is JobStatus.SUSPENDED
    commit_failed = Handle()
    assert settle(commit_failed, None, commit=lambda: OSError("disk")) is JobStatus.FAILED
    assert str(commit_failed.error) == "disk"
    assert settle(Handle(), None, commit=lambda: None) is JobStatus.COMPLETED


def named(root: Path, name: str = "j", **extra: object) -> JobConfig:
    return JobConfig(
        name=name,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        checkpoint_root=str(root),
        **extra,  # type: ignore[arg-type]
    )


def test_where_to_start_fresh_then_a_missing_export_is_named(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "j")
    start = where_to_start(store, named(tmp_path), verify=True)
    assert (start.completed, start.latest, start.export) == (False, None, None)
    assert store.read_record() == start.record
    with pytest.raises(Exception, match="nope"):
        where_to_start(
            CheckpointStore(str(tmp_path), "k"), named(tmp_path, "k", initial_snapshot_name="nope"), True
        )


def test_the_local_runner_builds_its_output_committer_with_the_claimed_job_id(tmp_path: Path) -> None:
    dag = DAG()
    source = dag.new_vertex("numbers", sources.from_iterable(range(10)))
    sink = dag.new_vertex("sink", sinks.collect())
    dag.edge(Edge.between(source, sink))
    job = LocalRunner().run(dag, named(tmp_path / "ck"), 60)
    assert job.record is not None and job.job_id == job.record.job_id
    assert job._committer.job_id == job.job_id, "the committer was built with another id"


def test_a_local_handle_answers_every_question_of_the_typed_interface(tmp_path: Path) -> None:
    dag = DAG()
    source = dag.new_vertex("numbers", sources.from_iterable(range(10)))
    sink = dag.new_vertex("sink", sinks.collect())
    dag.edge(Edge.between(source, sink))
    batch = LocalRunner().run(dag, JobConfig(), 60)
    assert (batch.runner, batch.ended, batch.epoch_stats(), batch.spark_stages()) == ("local", True, None, [])
    assert batch.capabilities().can_suspend is False and batch.capabilities().durable is False
    with pytest.raises(ValueError, match="is completed, not suspended"):
        batch.resume()
    durable = LocalRunner().run(dag, named(tmp_path / "ck", snapshot_interval_millis=1), 60)
    assert durable.capabilities().can_suspend and durable.capabilities().durable
    taken = durable.snapshot_figures()["snapshot_count"]
    assert min(taken, 20) == len(durable.taken_snapshots())  # the handle keeps the last 20
    again = LocalRunner().submit(dag, named(tmp_path / "ck"))
    assert again.runner == "none (completed before)" and again.capabilities().can_suspend is False

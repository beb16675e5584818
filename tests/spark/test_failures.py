"""Failures on the Spark runner: an executor's exception on the driver, bad suppliers, cancel."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.edge import Edge
from jetspark.core.errors import (
    DagValidationError,
    JobAlreadyRunningError,
    JobCancelledError,
    JobFailedError,
    JobTimeoutError,
    PartitioningError,
    RestartableError,
)
from jetspark.core.partitioner import default_partitioner
from jetspark.processors import collect, files, from_iterable
from jetspark.processors import map as map_p
from jetspark.runners.job import JobStatus
from jetspark.runners.output import LATE_SWEEP_SECONDS
from jetspark.runners.spark import SparkRunner
from tests.spark import dags
from tests.waiting import wait_until

pytestmark = pytest.mark.spark


def active_jobs(spark: Any, within: float = 10.0) -> list[int]:
    """Spark jobs still active, waiting up to `within` seconds for them to end."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + within
    while tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.05)
    return list(tracker.getActiveJobsIds())


def test_executor_exception_is_a_job_failed_error_naming_vertex_and_processor(spark: Any) -> None:
    job = SparkRunner(spark).submit(dags.failing(at=7), JobConfig(member_count=2))
    with pytest.raises(JobFailedError) as raised:
        job.join(120)
    error = raised.value
    owner = job.plan.arrangement.global_owner(default_partitioner(dags.key_of(("n", 7)), 271), 2)
    assert error.vertex == "fail"
    assert error.processor_index == owner
    assert f"vertex 'fail' processor #{owner}" in str(error)
    assert isinstance(error.__cause__, ValueError)
    assert str(error.__cause__) == "boom at ('n', 7)"
    assert "in try_process_item" in error.remote_traceback  # type: ignore[attr-defined]
    assert job.status is JobStatus.FAILED
    assert active_jobs(spark) == []


class Unpicklable:
    """A supplier callable holding a lock, which cannot be pickled."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __call__(self) -> Any:
        return dags.Where()


def test_unpicklable_supplier_is_refused_at_submit_naming_the_vertex(spark: Any) -> None:
    dag = DAG()
    source = dag.new_vertex("source", lambda: dags.Numbers(10))
    locked = dag.new_vertex("locked", Unpicklable())
    dag.edge(Edge.between(source, locked))
    with pytest.raises(
        DagValidationError, match="vertex 'locked': its ProcessorSupplier cannot be pickled"
    ) as raised:
        SparkRunner(spark).submit(dag, JobConfig(member_count=2))
    assert "lock" in str(raised.value.__cause__)


def test_cancel_stops_the_spark_job(spark: Any) -> None:
    job = SparkRunner(spark).submit(dags.endless(), JobConfig(member_count=2))
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 60
    while not tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tracker.getJobIdsForGroup(job.group), "the job runs in its own job group"
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(60)
    assert job.status is JobStatus.CANCELLED
    assert active_jobs(spark) == []


def test_a_named_jobs_name_runs_once_at_a_time_and_is_free_after_a_cancel(spark: Any) -> None:
    """Without a checkpoint store the process keeps the rule Jet keeps for named jobs."""
    runner = SparkRunner(spark)
    job = runner.submit(dags.endless(), JobConfig(name="named", member_count=2))
    try:
        with pytest.raises(JobAlreadyRunningError, match=r"^job 'named' is running in this process already"):
            runner.submit(dags.linear(10), JobConfig(name="named", member_count=2))
    finally:
        job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(60)
    again = runner.submit(dags.linear(10), JobConfig(name="named", member_count=2))
    again.join(120)
    assert again.status is JobStatus.COMPLETED


def test_a_failing_supplier_closes_the_stage_processors_made_before_it(spark: Any, tmp_path: Path) -> None:
    """a -> b in one stage; b's supplier raises after a's processors were made. Processors never
    run, yet close() is due: each of a's must be closed once, in the Spark task."""
    path = str(tmp_path / "lifecycle")
    job = SparkRunner(spark).submit(dags.setup_fails(path, "supplier"), JobConfig(member_count=1))
    with pytest.raises(JobFailedError) as raised:
        job.join(120)
    assert raised.value.vertex == "b"
    assert str(raised.value).startswith(
        "vertex 'b': its supplier failed on member 0: RuntimeError: no processors for you"
    )
    made, closed = dags.made_and_closed(path)
    assert len(made) == 2, "a has two processors on its one member"
    assert sorted(closed) == sorted(made)
    assert active_jobs(spark) == []


class Ticks(AbstractProcessor):
    """An endless source that also appends to `log` at every emission (a side effect the test can
    watch after cancel); non-cooperative, like a source that blocks."""

    def __init__(self, log: str) -> None:
        self.log = log

    def is_cooperative(self) -> bool:
        return False

    def complete(self) -> bool:
        time.sleep(0.002)
        if self.try_emit(("tick", time.time())):
            dags.append_line(self.log, repr(time.time()))
        return False


def test_a_cancelled_job_leaves_no_visible_output(spark: Any, tmp_path: Path) -> None:
    """The files sink runs in the source's stage and writes until the workers are killed; nothing
    it wrote becomes output, and its staging area is deleted (again after the workers are gone)."""
    out, log = tmp_path / "out", str(tmp_path / "ticks.log")
    dag = DAG()
    source = dag.new_vertex("source", lambda: Ticks(log))
    dag.edge(Edge.between(source, dag.new_vertex("sink", files(str(out)))))
    job = SparkRunner(spark).submit(dag, JobConfig(member_count=2))
    wait_until(lambda: len(list(out.glob("_temporary/*/attempt-*/sink-*.txt"))) == 2, timeout=60)
    job.cancel()
    cancelled_at = time.time()
    with pytest.raises(JobCancelledError):
        job.join(60)
    assert not list(out.glob("*.txt")) and not (out / "_SUCCESS").exists()
    wait_until(lambda: not (out / "_temporary").exists(), timeout=LATE_SWEEP_SECONDS + 10)
    assert sorted(p.name for p in out.iterdir()) == []
    time.sleep(1)
    last_tick = max(float(line) for line in Path(log).read_text().split())
    assert last_tick - cancelled_at < LATE_SWEEP_SECONDS, "the workers were killed before the late sweep"
    assert spark.sparkContext.getConf().get("spark.python.task.killTimeout") == "0s"


def test_the_session_collects_finished_jobs_shuffle_files_every_five_minutes(spark: Any) -> None:
    """An endless job in short epochs leaves its epochs' shuffle files behind until the driver's
    JVM collects them; the session jetspark starts forces that every 5 min, not Spark's 30."""
    assert spark.sparkContext.getConf().get("spark.cleaner.periodicGC.interval") == "5min"


def test_a_source_holding_too_much_data_is_refused_at_submit_with_advice(spark: Any) -> None:
    from jetspark.processors import collect, from_iterable
    from jetspark.runners.spark.shipping import check_picklable

    dag = DAG()
    source = dag.new_vertex("numbers", from_iterable(range(10)))
    dag.edge(Edge.between(source, dag.new_vertex("sink", collect())))
    job = SparkRunner(spark).run(dag, JobConfig(member_count=2), timeout=120)
    assert sorted(job.result("sink")) == list(range(10)), "a small collection ships as it is"
    big = DAG()
    source = big.new_vertex("numbers", from_iterable([str(i) * 200 for i in range(5000)]))
    big.edge(Edge.between(source, big.new_vertex("sink", collect())))
    from jetspark.planning.pipeline import build_plan

    plan = build_plan(big, JobConfig(), 2)
    with pytest.raises(DagValidationError, match=r"vertex 'numbers': its suppliers pickle to .*from_rdd"):
        check_picklable(plan, JobConfig(), max_supplier_bytes=1 << 20)


def fail_once(marker: str, at: int, x: int) -> int:
    """Raise RestartableError at item `at` in the first run only: the first task to get there
    creates `marker` (atomically, across Python workers) and raises."""
    if x == at:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return x
        raise RestartableError(f"transient failure at {x}")
    return x


def restart_dag(step: Any, out: Path, count: int = 200) -> DAG:
    """from_iterable(range(count)) -> (distributed) map(step) -> a collecting sink and a files sink."""
    dag = DAG()
    source = dag.new_vertex("source", from_iterable(range(count)))
    mapped = dag.new_vertex("map", map_p(step))
    dag.edge(Edge.between(source, mapped).distributed())
    dag.edge(Edge.from_(mapped, 0).to(dag.new_vertex("sink", collect())))
    dag.edge(Edge.from_(mapped, 1).to(dag.new_vertex("files", files(str(out)))))
    return dag


def test_restartable_error_in_a_batch_job_runs_it_again_from_the_beginning(
    spark: Any, tmp_path: Path
) -> None:
    """Jet (ExecutionLifecycle_RestartableExceptionTest.when_inProcessorProcess_then_jobRestarted):
    a job without a processing guarantee that raises RestartableError runs again from the
    beginning (new RDDs: no stage output of the failed run is reused); the collecting sink and the
    `files` output hold every item once (each run stages its own files, the driver commits the
    successful run's)."""
    out = tmp_path / "out"
    step = functools.partial(fail_once, str(tmp_path / "raised"), 150)
    job = SparkRunner(spark, restart_backoff=0.0).run(
        restart_dag(step, out), JobConfig(member_count=2), timeout=180
    )
    assert (tmp_path / "raised").exists() and job.restarts == 1
    assert sorted(job.result("sink")) == list(range(200))
    lines = [int(line) for f in out.glob("files-*.txt") for line in f.read_text().split()]
    assert sorted(lines) == list(range(200))
    assert (out / "_SUCCESS").exists()
    wait_until(lambda: not (out / "_temporary").exists(), timeout=30)
    assert active_jobs(spark) == []


def always_restartable(x: int) -> int:
    if x == 5:
        raise RestartableError("still broken")
    return x


def test_a_batch_job_raising_restartable_error_every_time_fails_after_max_restarts(
    spark: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    runner = SparkRunner(spark, max_restarts=1, restart_backoff=0.0)
    job = runner.submit(restart_dag(always_restartable, out), JobConfig(member_count=2))
    with pytest.raises(JobFailedError) as raised:
        job.join(180)
    assert isinstance(raised.value.__cause__, RestartableError)
    assert raised.value.vertex == "map"
    assert "restarted 1 times" in str(raised.value)
    assert job.status is JobStatus.FAILED and job.restarts == 1
    assert not (out / "_SUCCESS").exists() and not list(out.glob("files-*.txt"))
    assert active_jobs(spark) == []


def key_of_or_fail(item: int) -> int:
    return 10 // (item - 5)


def test_a_failing_key_function_names_the_edge_on_spark(spark: Any) -> None:
    """The error of a partitioned edge's key function reaches the driver naming the edge and the
    key function, chained to a PartitioningError whose cause is the original error."""
    dag = DAG()
    source = dag.new_vertex("source", from_iterable(range(10)))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, sink).partitioned(key_of_or_fail).distributed())
    job = SparkRunner(spark).submit(dag, JobConfig(member_count=2))
    with pytest.raises(JobFailedError) as raised:
        job.join(120)
    message = str(raised.value)
    assert "edge source[0] -> sink[0]: key function" in message and "key_of_or_fail" in message, message
    assert "ZeroDivisionError" in message and "item 5" in message, message
    assert isinstance(raised.value.__cause__, PartitioningError)
    assert active_jobs(spark) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_under_a_users_own_session_a_failed_task_logs_its_traceback_once_and_readably() -> None:
    """Issue 11: under a session jetspark did not configure, a failed task's traceback showed twice
    (the executor's ERROR and the lost task's WARN), each with a multi-KB base64 record."""
    script = Path(__file__).with_name("user_session_failure.py")
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    done = subprocess.run(
        [sys.executable, str(script)], cwd=root, env=env, capture_output=True, text=True, timeout=280
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cause: ValueError: item 7 is bad" in done.stdout  # the driver still gets the exception
    assert "remote traceback names check(): True" in done.stdout
    log = done.stderr
    assert log.count('raise ValueError("item 7 is bad")') == 1, log  # the traceback, once
    assert "ERROR Executor" not in log
    records = [line for line in log.splitlines() if "JETSPARK_FAILURE[" in line]
    assert len(records) == 1 and len(records[0]) < 600, records
    errors = [line for line in log.splitlines() if " ERROR " in line]
    assert errors and all("JETSPARK_FAILURE" not in line and len(line) < 300 for line in errors), errors


class MarkAt:
    """The source's step: appends a line to `path` each time item `at` is made (once a run)."""

    def __init__(self, at: int, path: str) -> None:
        self.at, self.path = at, path

    def __call__(self, seq: int) -> int:
        if seq == self.at:
            with open(self.path, "a", encoding="ascii") as file:
                file.write("reached\n")
        return seq


def test_restart_runs_a_batch_job_again_from_the_beginning(spark: Any, tmp_path: Path) -> None:
    """Jet's `Job.restart()` on a batch job: the running Spark job is cancelled and the job runs
    again from the beginning; the sink keeps the new run's items only, and no failure is counted."""
    from tests.gates import Gate, gated_stream

    count, marks = 400, tmp_path / "marks"
    gate = Gate(tmp_path / "gate", hold_at=count // 2)
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=count, fn=MarkAt(count // 2 - 1, str(marks))))
    dag.edge(Edge.between(source, dag.new_vertex("sink", collect())))
    job = SparkRunner(spark).submit(dag, JobConfig(member_count=2))

    def runs_at_gate() -> int:
        return len(marks.read_text().splitlines()) if marks.exists() else 0

    wait_until(lambda: runs_at_gate() == 1, "the first run at the gate")
    job.restart()
    wait_until(lambda: runs_at_gate() == 2, "a second run at the gate")
    assert job.status is JobStatus.RUNNING
    gate.open()
    job.join(120)
    assert sorted(job.result("sink")) == list(range(count))  # the first run's items are gone
    assert job.restarts == 0
    with pytest.raises(ValueError, match="only a running job restarts"):
        job.restart()


def gated_batch_job(spark: Any, tmp_path: Path, count: int = 400) -> tuple[Any, Any, Callable[[], int]]:
    """A batch job whose source stops at a gate half-way; `runs_at_gate()` counts the runs that
    reached it."""
    from tests.gates import Gate, gated_stream

    marks = tmp_path / "marks"
    gate = Gate(tmp_path / "gate", hold_at=count // 2)
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=count, fn=MarkAt(count // 2 - 1, str(marks))))
    dag.edge(Edge.between(source, dag.new_vertex("sink", collect())))
    job = SparkRunner(spark).submit(dag, JobConfig(member_count=2))

    def runs_at_gate() -> int:
        return len(marks.read_text().splitlines()) if marks.exists() else 0

    return job, gate, runs_at_gate


def test_suspend_and_resume_run_a_batch_job_again_from_the_beginning(spark: Any, tmp_path: Path) -> None:
    """Jet's `Job.suspend()` / `resume()` on a job without a processing guarantee (as the local
    runner's): the Spark job is cancelled, the job waits SUSPENDED, and resume() runs it again
    from the beginning; the sink keeps the new run's items only."""
    job, gate, runs_at_gate = gated_batch_job(spark, tmp_path)
    wait_until(lambda: runs_at_gate() == 1, "the first run at the gate")
    job.suspend()
    assert job.status is JobStatus.SUSPENDED
    assert job.join(5, until_suspended=True) is job
    with pytest.raises(JobTimeoutError, match="still suspended"):
        job.join(0.5)  # a suspended job has not ended
    assert active_jobs(spark) == []
    with pytest.raises(ValueError, match="only a running job can be suspended"):
        job.suspend()
    job.resume()
    wait_until(lambda: runs_at_gate() == 2, "a second run at the gate")
    assert job.status is JobStatus.RUNNING
    gate.open()
    job.join(120)
    assert sorted(job.result("sink")) == list(range(400))  # the suspended run's items are gone
    assert job.restarts == 0 and job.status is JobStatus.COMPLETED
    with pytest.raises(ValueError, match="is completed, not suspended"):
        job.resume()


def test_a_suspended_batch_job_can_be_cancelled(spark: Any, tmp_path: Path) -> None:
    job, gate, runs_at_gate = gated_batch_job(spark, tmp_path)
    wait_until(lambda: runs_at_gate() == 1, "the first run at the gate")
    job.suspend()
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(60)
    assert job.status is JobStatus.CANCELLED and runs_at_gate() == 1
    gate.open()
    assert active_jobs(spark) == []

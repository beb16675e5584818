"""Restarts without a snapshot: a job with processing guarantee NONE that raises RestartableError
runs again from the beginning, as in Jet, and its sinks keep only the last run's output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, RestartableError
from jetspark.core.errors import JobFailedError
from jetspark.runners.local import JobStatus, LocalRunner


def restart_dag(step: Callable[[int], int], out: Path, count: int = 200) -> DAG:
    """from_iterable(range(count)) -> map(step) -> both a collecting sink and a files sink."""
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(count)))
    mapped = dag.new_vertex("map", P.map(step))
    collect = dag.new_vertex("sink", P.collect())
    written = dag.new_vertex("files", P.files(str(out)))
    dag.edge(Edge.between(source, mapped).distributed())
    dag.edge(Edge.from_(mapped, 0).to(collect))
    dag.edge(Edge.from_(mapped, 1).to(written))
    return dag


def test_restartable_error_without_a_guarantee_restarts_the_job_from_the_beginning(tmp_path: Path) -> None:
    """Jet (ExecutionLifecycle_RestartableExceptionTest.when_inProcessorProcess_then_jobRestarted):
    with processing guarantee NONE there is no snapshot, so a RestartableError runs the job again
    from the beginning; the sinks hold the new run's output only, each item once (collected items
    and `files` output of the failed run are discarded)."""
    state = {"raised": 0}

    def fail_once(x: int) -> int:
        if x == 150 and not state["raised"]:
            state["raised"] += 1
            raise RestartableError("transient")
        return x

    out = tmp_path / "out"
    job = LocalRunner(3).run(restart_dag(fail_once, out), JobConfig(), timeout=60)
    assert state["raised"] == 1 and job.restarts == 1
    assert sorted(job.result("sink")) == list(range(200))
    lines = [int(line) for f in out.glob("files-*.txt") for line in f.read_text().split()]
    assert sorted(lines) == list(range(200))
    assert (out / "_SUCCESS").exists() and not (out / "_temporary").exists()


def test_restartable_error_without_a_guarantee_fails_after_max_restarts(tmp_path: Path) -> None:
    """A job that raises RestartableError on every run fails after `max_restarts` restarts, with a
    JobFailedError naming the processor, chained to the RestartableError; no output is published."""

    def always(x: int) -> int:
        if x == 5:
            raise RestartableError("still broken")
        return x

    out = tmp_path / "out"
    job = LocalRunner(max_restarts=2).submit(restart_dag(always, out), JobConfig())
    with pytest.raises(JobFailedError) as caught:
        job.join(60)
    assert isinstance(caught.value.__cause__, RestartableError)
    assert caught.value.vertex == "map"
    assert "restarted 2 times" in str(caught.value)
    assert job.status is JobStatus.FAILED and job.restarts == 2
    assert not (out / "_SUCCESS").exists() and not list(out.glob("files-*.txt"))

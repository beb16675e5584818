"""Defects a first-time user ran into (a review from the docs, README onwards).

Each test reproduces one defect and is marked xfail(strict=True): it fails today, and passes
(turning the run red until the marker is removed) once the defect is fixed. None starts Spark.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import attrs
import pytest

from jetspark import DAG, DagValidationError, Edge, JobConfig, ProcessingGuarantee
from jetspark import processors as P
from jetspark.runners.local import LocalRunner
from tests.waiting import wait_until

EO = ProcessingGuarantee.EXACTLY_ONCE


def _small_dag() -> DAG:
    dag = DAG()
    source = dag.new_vertex("src", P.from_iterable([1, 2, 3]))
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.collect())))
    return dag


def test_jetspark_run_checks_a_config_mistake_before_it_starts_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    from jetspark import api
    from jetspark.runners.spark import runner as spark_runner
    from jetspark.runners.spark import session as spark_session

    started: list[bool] = []

    def no_session(*args: object, **kwargs: object) -> object:
        started.append(True)
        raise RuntimeError("a Spark session was started before the checks that need no Spark")

    monkeypatch.setenv("JETSPARK_RUNNER", "spark")  # what `jetspark run job.py` sets
    monkeypatch.setenv("JETSPARK_PROGRESS", "auto")  # ... and this, unless --quiet
    monkeypatch.setattr(spark_session, "session_running", lambda: False)
    monkeypatch.setattr(spark_runner, "get_session", no_session)
    # EXACTLY_ONCE without checkpoint_root: docs/getting-started.md, "When something is wrong":
    # "DagValidationError saying which to set, before Spark starts"
    with pytest.raises(DagValidationError, match="checkpoint_root"):
        api.run(_small_dag(), JobConfig(name="no-root", processing_guarantee=EO))
    assert not started


def test_start_over_keeps_the_files_write_jsonl_committed_in_the_earlier_run(tmp_path: Path) -> None:
    out = tmp_path / "out"

    def job(run: int) -> DAG:
        dag = DAG()
        source = dag.new_vertex("src", P.from_iterable([{"run": run, "n": n} for n in range(3)]))
        dag.edge(Edge.between(source, dag.new_vertex("sink", P.write_jsonl(str(out)))))
        return dag

    config = JobConfig(name="rows", processing_guarantee=EO, checkpoint_root=str(tmp_path / "checkpoints"))
    LocalRunner(1).run(job(1), config, timeout=120)
    first = sorted(p.name for p in out.rglob("*.jsonl"))
    LocalRunner(1).run(job(2), attrs.evolve(config, start_over=True), timeout=120)
    rows = sorted(
        (row["run"], row["n"])
        for path in out.rglob("*.jsonl")
        for row in map(json.loads, path.read_text().splitlines())
    )
    assert rows == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)], f"first run's files: {first}"


def test_directory_stream_of_a_missing_directory_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = str(tmp_path / "no-such-dir")
    caplog.set_level(logging.WARNING)
    try:
        source = P.directory_stream(missing, poll_millis=10)
    except (FileNotFoundError, ValueError) as error:  # an early error naming the directory is fine too
        assert missing in str(error)
        return
    dag = DAG()
    lines = dag.new_vertex("lines", source)
    dag.edge(Edge.between(lines, dag.new_vertex("sink", P.collect())))
    try:
        job = LocalRunner(1).submit(dag)
    except (FileNotFoundError, DagValidationError) as error:
        assert missing in str(error)
        return
    try:
        wait_until(
            lambda: any(missing in record.getMessage() for record in caplog.records),
            "a warning naming the missing directory",
            timeout=10,
        )
    finally:
        job.cancel()


def test_a_cycles_error_names_only_the_vertices_on_the_cycle() -> None:
    dag = DAG()
    a = dag.new_vertex("a", P.map(str))
    b = dag.new_vertex("b", P.map(str))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(a, b))
    dag.edge(Edge.from_(b, 0).to(a))
    dag.edge(Edge.from_(b, 1).to(sink))
    with pytest.raises(DagValidationError, match="cycle") as error:
        LocalRunner(1).submit(dag)
    assert "sink" not in str(error.value), str(error.value)


def test_a_completed_job_submitted_again_to_spark_starts_no_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jetspark.runners.spark import SparkRunner
    from jetspark.runners.spark import runner as spark_runner

    config = JobConfig(name="done", processing_guarantee=EO, checkpoint_root=str(tmp_path / "checkpoints"))
    LocalRunner(1).run(_small_dag(), config, timeout=120)

    def no_session(*args: object, **kwargs: object) -> object:
        raise RuntimeError("a Spark session was started for a job that completed before")

    monkeypatch.setattr(spark_runner, "get_session", no_session)
    job = SparkRunner(member_count=1).submit(_small_dag(), config)
    assert job.status.name == "COMPLETED"

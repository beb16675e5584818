"""A new user's review (session 13): a data engineer from PySpark / Bytewax / Beam following the
README and docs, writing a keyed stateful job over files, and making the usual mistakes.

Each test reproduces one defect and is marked xfail(strict=True): it fails today, and passes
(turning the run red until the marker is removed) once the defect is fixed. Only the last two
start Spark: one on the suite's shared session (jetspark's pytest plugin fixture), one as a user
would, `jetspark run` in a subprocess (as tests/spark/test_cli.py does).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, DagValidationError, Edge, JobConfig, JobFailedError, ProcessingGuarantee
from jetspark import processors as P
from jetspark.runners.local import LocalRunner

EO = ProcessingGuarantee.EXACTLY_ONCE


def _parquet_file(path: Path, rows: int = 50_000) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"n": list(range(rows)), "s": [f"row {i}" for i in range(rows)]})
    pq.write_table(table, path, row_group_size=10_000)


def _read_all(source: Any) -> list[Any]:
    dag = DAG()
    dag.edge(Edge.between(dag.new_vertex("src", source), dag.new_vertex("sink", P.collect())))
    return LocalRunner(1).run(dag, JobConfig(), timeout=60).result("sink")


@pytest.mark.xfail(
    strict=True,
    reason="read_parquet over a directory with a file that is not Parquet (or was cut short) raises "
    "pyarrow's bare ArrowInvalid 'Parquet magic bytes not found in footer...' without naming the file "
    "(jetspark/processors/file_sources.py:parquet_source calls pq.read_metadata unguarded)",
)
def test_read_parquet_of_a_file_that_is_not_parquet_names_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    _parquet_file(folder / "good.parquet", rows=10)
    bad = folder / "cut.parquet"
    bad.write_bytes((folder / "good.parquet").read_bytes()[:100])  # a copy that was cut short
    with pytest.raises(Exception) as error:
        _read_all(P.read_parquet(str(folder)))
    assert str(bad) in str(error.value), f"{type(error.value).__name__}: {error.value}"


@pytest.mark.xfail(
    strict=True,
    reason="a Parquet file whose row group is damaged fails the job with 'vertex 'src' processor #0 "
    "failed: OSError: Corrupt snappy compressed data.', naming neither the file nor the row group, "
    "where a bad line of text/JSON/CSV names file and byte offset "
    "(jetspark/processors/split_readers.py:ParquetSplitReader reads without saying which split)",
)
def test_a_damaged_parquet_row_group_fails_naming_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    path = folder / "part.parquet"
    _parquet_file(path)
    with path.open("r+b") as file:  # the footer stays intact: the damage shows only when read
        file.seek(100)
        file.write(b"\xff" * 4000)
    with pytest.raises(JobFailedError) as error:
        _read_all(P.read_parquet(str(folder)))
    assert str(path) in str(error.value), str(error.value)


@pytest.mark.xfail(
    strict=True,
    reason="job.result('snk') (a typo of the collecting sink 'sink') returns [] as if the sink had "
    "received nothing, instead of an error naming the collecting sinks there are "
    "(jetspark/runners/local.py:LocalJob.result; the same in runners/spark/handle.py:SparkJob.result)",
)
def test_result_of_a_vertex_name_that_is_not_a_collecting_sink_says_so() -> None:
    dag = DAG()
    dag.edge(
        Edge.between(dag.new_vertex("src", P.from_iterable([1, 2, 3])), dag.new_vertex("sink", P.collect()))
    )
    job = LocalRunner(1).run(dag, JobConfig(), timeout=60)
    assert sorted(job.result("sink")) == [1, 2, 3]
    with pytest.raises((KeyError, ValueError), match="sink"):
        job.result("snk")


@pytest.mark.xfail(
    strict=True,
    reason="running a batch job (no guarantee, no checkpoint root) a second time into the same "
    "write_jsonl directory silently adds a second copy of every row beside the first run's part "
    "files, while files() refuses a directory holding output and Spark's writer defaults to "
    "errorifexists; no error and no warning names the directory",
)
def test_a_batch_job_run_twice_into_one_write_jsonl_directory_does_not_silently_duplicate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "out"

    def job() -> DAG:
        dag = DAG()
        source = dag.new_vertex("src", P.from_iterable([{"n": n} for n in range(5)]))
        dag.edge(Edge.between(source, dag.new_vertex("sink", P.write_jsonl(str(out)))))
        return dag

    LocalRunner(1).run(job(), JobConfig(name="daily"), timeout=60)
    caplog.set_level(logging.WARNING)
    try:
        LocalRunner(1).run(job(), JobConfig(name="daily"), timeout=60)
    except DagValidationError as refused:  # refusing, naming the directory, is a fix
        assert str(out) in str(refused)
        return
    warned = any(str(out) in record.getMessage() for record in caplog.records)
    rows = [json.loads(line) for path in out.glob("part-*.jsonl") for line in path.read_text().splitlines()]
    assert warned or len(rows) == 5, f"{len(rows)} rows, no warning naming {out}"


@pytest.mark.xfail(
    strict=True,
    reason="Edge.between('words', 'count') with vertex names (as Beam/Bytewax users write) fails with "
    "\"AttributeError: 'str' object has no attribute 'name'\" instead of saying an edge takes the "
    "Vertex objects dag.new_vertex returned (jetspark/core/dag.py:Edge / DAG.edge)",
)
def test_an_edge_between_vertex_names_says_it_needs_vertices() -> None:
    dag = DAG()
    dag.new_vertex("words", P.from_iterable(["a"]))
    dag.new_vertex("count", P.collect())
    with pytest.raises((TypeError, DagValidationError), match="Vertex"):
        dag.edge(Edge.between("words", "count"))  # type: ignore[arg-type]


@pytest.mark.spark
@pytest.mark.xfail(
    strict=True,
    reason="under EXACTLY_ONCE on Spark a bad record with errors='fail' (deterministic: it is there "
    "on every replay) aborts the epoch max_restarts+1 times with back-off (27 s and 19 tracebacks "
    "with the defaults) and fails as \"job 'x': epoch 0 aborted 6 times in a row; last cause: ...\"; "
    "the local runner fails at once with the bad-record message docs/files.md shows "
    "(jetspark/runners/spark/epochs.py: every task failure is treated as transient)",
)
def test_a_bad_record_fails_an_exactly_once_spark_job_without_replaying_the_epoch(
    jetspark_spark_session: Any, tmp_path: Path
) -> None:
    from jetspark.runners.spark import SparkRunner

    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text("user,amount\nu1,5\nu2,x\n")
    dag = DAG()
    source = dag.new_vertex("source", P.read_csv(str(data), types={"amount": int}))
    dag.edge(Edge.between(source, dag.new_vertex("out", P.write_jsonl(str(tmp_path / "out")))))
    config = JobConfig(name="bad-record", processing_guarantee=EO, checkpoint_root=str(tmp_path / "ck"))
    runner = SparkRunner(jetspark_spark_session, member_count=1, max_restarts=2, restart_backoff=0.01)
    with pytest.raises(JobFailedError) as error:
        runner.run(dag, config)
    assert str(error.value).startswith("vertex 'source': bad record in "), str(error.value)


HELPER = """
from jetspark import AbstractProcessor


class Upper(AbstractProcessor):
    def try_process_item(self, ordinal, item):
        return self.try_emit(item.upper())
"""

JOB = """
from jetspark import DAG, Edge, JobConfig
from jetspark import processors as P
from jetspark.api import run

from helpers import Upper  # a module beside the job file

dag = DAG()
words = dag.new_vertex("words", P.from_iterable(["ab", "cd", "ef"]))
upper = dag.new_vertex("upper", Upper)
dag.edge(Edge.between(words, upper).distributed())
dag.edge(Edge.between(upper, dag.new_vertex("sink", P.collect())).distributed())

if __name__ == "__main__":
    print(sorted(run(dag, JobConfig(member_count=2)).result("sink")))
"""


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.xfail(
    strict=True,
    reason="`jetspark run /path/to/job.py` started from another directory fails when the job file "
    "imports a module beside it ('stage 0, member 1: the job's suppliers cannot be unpickled in the "
    "Spark task (ModuleNotFoundError: No module named 'helpers')'), after Spark started; the same "
    "command from the job's directory works, and so does `--local` from anywhere (the driver has "
    "the job's directory on sys.path, the Python workers only their working directory; "
    "jetspark/cli run/submit do not pass the job's directory to the executors)",
)
def test_jetspark_run_of_a_job_importing_a_module_beside_it_works_from_another_directory(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "helpers.py").write_text(HELPER)
    (project / "job.py").write_text(JOB)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "jetspark"),
            "run",
            "--quiet",
            "--master",
            "local[2]",
            str(project / "job.py"),
        ],
        cwd=elsewhere,
        env={**os.environ, "JETSPARK_RUNNER": "spark"},
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "['AB', 'CD', 'EF']" in done.stdout

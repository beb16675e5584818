"""A new user's review (session 13): a data engineer from PySpark / Bytewax / Beam following the
README and docs, writing a keyed stateful job over files, and making the usual mistakes.

Each test reproduced one defect (as a strict xfail, failing) and now checks its fix. Two of them
start Spark (marked `spark`): one on the suite's shared session (jetspark's pytest plugin
fixture), one as a user would, `jetspark run` in a subprocess (as tests/spark/test_cli.py does).
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


def test_read_parquet_of_a_file_that_is_not_parquet_names_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    _parquet_file(folder / "good.parquet", rows=10)
    bad = folder / "cut.parquet"
    bad.write_bytes((folder / "good.parquet").read_bytes()[:100])  # a copy that was cut short
    with pytest.raises(Exception) as error:
        _read_all(P.read_parquet(str(folder)))
    assert str(bad) in str(error.value), f"{type(error.value).__name__}: {error.value}"


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


def test_result_of_a_vertex_name_that_is_not_a_collecting_sink_says_so() -> None:
    dag = DAG()
    dag.edge(
        Edge.between(dag.new_vertex("src", P.from_iterable([1, 2, 3])), dag.new_vertex("sink", P.collect()))
    )
    job = LocalRunner(1).run(dag, JobConfig(), timeout=60)
    assert sorted(job.result("sink")) == [1, 2, 3]
    with pytest.raises((KeyError, ValueError), match="sink"):
        job.result("snk")


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


def test_an_edge_between_vertex_names_says_it_needs_vertices() -> None:
    dag = DAG()
    dag.new_vertex("words", P.from_iterable(["a"]))
    dag.new_vertex("count", P.collect())
    with pytest.raises((TypeError, DagValidationError), match="Vertex"):
        dag.edge(Edge.between("words", "count"))  # type: ignore[arg-type]


@pytest.mark.spark
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


def test_a_supplier_too_large_to_ship_is_refused_before_spark_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from jetspark import api
    from jetspark.runners.spark import runner as spark_runner
    from jetspark.runners.spark import session as spark_session

    started: list[bool] = []

    def no_session(*args: object, **kwargs: object) -> object:
        started.append(True)
        raise RuntimeError("a Spark session was started before the checks that need no Spark")

    monkeypatch.setenv("JETSPARK_RUNNER", "spark")  # what `jetspark run job.py` sets
    monkeypatch.setattr(spark_session, "session_running", lambda: False)
    monkeypatch.setattr(spark_runner, "get_session", no_session)
    big = [bytes([n % 251]) * 1000 for n in range(20_000)]  # about 20 MB pickled
    dag = DAG()
    source = dag.new_vertex("src", P.from_iterable(big))
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.write_jsonl(str(tmp_path / "out")))))
    with pytest.raises(DagValidationError, match="MiB"):
        api.run(dag, JobConfig())
    assert not started


def test_read_csv_of_a_file_with_a_byte_order_mark_names_the_first_column_without_it(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_bytes(b"\xef\xbb\xbfuser,amount\r\nann,5\r\nbob,6\r\n")
    rows = _read_all(P.read_csv(str(path), types={"amount": int}))
    assert sorted(rows, key=lambda row: row.get("amount", 0)) == [
        {"user": "ann", "amount": 5},
        {"user": "bob", "amount": 6},
    ]


def test_a_csv_file_whose_header_is_not_utf8_fails_naming_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.csv").write_text("user,amount\nann,5\n")
    bad = folder / "export.csv"
    bad.write_bytes(b"\x1f\x8b\x08\x00 not text\nann,5\n")  # gzip's magic bytes, as a .csv.gz renamed
    with pytest.raises(JobFailedError) as error:
        _read_all(P.read_csv(str(folder)))
    assert str(bad) in str(error.value), str(error.value)


def test_the_readme_test_command_installs_what_ci_installs_and_what_the_suite_imports() -> None:
    """README's test command (`pip install -e '.[test]' && python -m pytest`) stopped at collection
    without mkdocs, which only the `docs` extra had and only `.ci/run` installed: now `.ci/run`
    installs exactly the README's extras, and the `test` extra has mkdocs."""
    import configparser
    import re

    root = Path(__file__).resolve().parents[2]
    readme_extras = re.findall(
        r"pip install -e '\.\[([a-z,]+)\]' && \.venv/bin/python -m pytest", (root / "README.md").read_text()
    )
    ci_extras = re.findall(r"install [^\n]*-e '\.\[([a-z,]+)\]'", (root / ".ci" / "run").read_text())
    assert readme_extras == ["test"] and ci_extras == ["test"], (readme_extras, ci_extras)
    setup = configparser.ConfigParser()
    setup.read(root / "setup.cfg")
    test_extra = setup["options.extras_require"]["test"]
    for needed in ("mkdocs", "mkdocstrings", "pytest", "hypothesis", "psycopg", "playwright", "pyarrow"):
        assert needed in test_extra, needed


def test_start_over_from_the_command_line_reaches_a_job_that_submits_through_a_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jetspark.api import START_OVER_ENV

    def dag() -> DAG:
        graph = DAG()
        source = graph.new_vertex("src", P.from_iterable([1, 2, 3]))
        graph.edge(Edge.between(source, graph.new_vertex("sink", P.collect())))
        return graph

    config = JobConfig(name="again", processing_guarantee=EO, checkpoint_root=str(tmp_path / "ck"))
    LocalRunner(1).run(dag(), config, timeout=60)
    monkeypatch.setenv(START_OVER_ENV, "1")  # what `jetspark run --start-over` sets
    job = LocalRunner(1).submit(dag(), config)
    job.join(timeout=60)
    assert sorted(job.result("sink")) == [1, 2, 3], type(job).__name__


def test_write_parquet_of_an_item_that_is_not_a_record_says_what_it_takes(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    dag = DAG()
    source = dag.new_vertex("src", P.from_iterable([1, 2]))
    dag.edge(Edge.between(source, dag.new_vertex("out", P.write_parquet(str(tmp_path / "out")))))
    with pytest.raises(JobFailedError) as error:
        LocalRunner(1).run(dag, JobConfig(), timeout=60)
    assert "dict" in str(error.value), str(error.value)

"""How `jetspark run` and `dag` report an error that ends the job file: the error on one line and
the user's own frame; the full traceback only with --verbose; a Py4J error reduced to its Java
cause; a bad --master refused in one line before anything starts."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jetspark.api import RUNNER_ENV
from jetspark.cli.errors import describe
from jetspark.cli.main import main
from jetspark.runners.spark.session import MASTER_ENV

FAILING_JOB = """\
from jetspark import DAG, AbstractProcessor, Edge, JobConfig
from jetspark import processors as P
from jetspark.api import run


class Divide(AbstractProcessor):
    def try_process_item(self, ordinal, item):
        return self.try_emit(1 / item)


dag = DAG()
source = dag.new_vertex("source", P.from_iterable(range(3)))
divide = dag.new_vertex("divide", Divide)
dag.edge(Edge.between(source, divide))
run(dag, JobConfig())
"""


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """`main` sets the runner's environment and runs the job file with its own argv and path."""
    monkeypatch.setenv(RUNNER_ENV, "local")
    monkeypatch.delenv(MASTER_ENV, raising=False)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))


def write(tmp_path: Path, text: str, name: str = "job.py") -> Path:
    job = tmp_path / name
    job.write_text(textwrap.dedent(text))
    return job


def test_a_failed_job_shows_one_line_and_the_users_frame(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = write(tmp_path, FAILING_JOB)
    assert main(["run", "--local", "--quiet", str(job)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert (
        lines[0]
        == "jetspark: JobFailedError: vertex 'divide' processor #0 failed in try_process_item(): ZeroDivisionError: division by zero"
    )
    assert lines[1] == f"  at {job}:8 in try_process_item: return self.try_emit(1 / item)"
    assert lines[2] == "  (--verbose shows the full traceback)"
    assert len(lines) == 3  # no traceback through runpy, jetspark and the engine


def test_verbose_shows_the_full_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = write(tmp_path, FAILING_JOB)
    assert main(["run", "--local", "--quiet", "--verbose", str(job)]) == 1
    error = capsys.readouterr().err
    assert "Traceback (most recent call last):" in error
    assert "The above exception was the direct cause of the following exception:" in error
    assert "jetspark/engine/" in error.replace(os.sep, "/")


def test_an_error_in_the_job_file_itself_points_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = write(
        tmp_path, "from jetspark import JobConfig\n\nconfig = JobConfig(snapshot_interval_millis=-5)\n"
    )
    assert main(["run", "--local", str(job)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("jetspark: ValueError: JobConfig.snapshot_interval_millis must be an int")
    assert lines[1] == f"  at {job}:3 in <module>: config = JobConfig(snapshot_interval_millis=-5)"


def test_dag_reports_the_job_files_error_the_same_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = write(tmp_path, "raise RuntimeError('no input file given')\n")
    assert main(["dag", str(job)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[:2] == [
        "jetspark: RuntimeError: no input file given",
        f"  at {job}:1 in <module>: raise RuntimeError('no input file given')",
    ]


class Py4JJavaError(Exception):
    """Stands for py4j.protocol.Py4JJavaError: its message holds the Java stack trace."""


Py4JJavaError.__module__ = "py4j.protocol"


def test_a_py4j_error_is_reduced_to_its_innermost_java_cause() -> None:
    error = Py4JJavaError(
        "An error occurred while calling o42.collectAndServe.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed\n"
        "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2785)\n"
        "\tat scala.Option.foreach(Option.scala:407)\n"
        "Caused by: java.io.FileNotFoundException: /data/in.csv (No such file or directory)\n"
        "\tat java.base/java.io.FileInputStream.open0(Native Method)\n"
    )
    assert (
        describe(error)
        == "Py4JJavaError: java.io.FileNotFoundException: /data/in.csv (No such file or directory)"
    )
    without_cause = Py4JJavaError(
        "An error occurred while calling o7.start.\n: java.net.BindException: Address already in use\n\tat x.y(z)\n"
    )
    assert describe(without_cause) == "Py4JJavaError: java.net.BindException: Address already in use"


@pytest.mark.parametrize(
    ("master", "cause"),
    [
        ("lokal[2]", "is not a master URL; expected one of local[*], local[4]"),
        ("local[0]", "is not a master URL"),
        ("spark://127.0.0.1:1", "cannot be reached (127.0.0.1:1: Connection refused)"),
        ("spark://nohost", "'nohost' is not host:port"),
    ],
)
def test_a_bad_master_is_one_line_naming_it_and_the_cause_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], master: str, cause: str
) -> None:
    job = write(tmp_path, "raise AssertionError('the job file must not run')\n")
    started = time.monotonic()
    assert main(["run", "--master", master, str(job)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"jetspark: Spark master {master!r}")
    assert cause in error
    assert len(error.strip().splitlines()) == 1
    assert time.monotonic() - started < 5


def test_a_bad_master_from_the_environment_is_refused_before_a_session_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python job.py` with JETSPARK_MASTER set, or `jetspark run` with it: the session is not
    started (Spark would print 58 lines for lokal[2])."""
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_active_spark_context", None)  # as in a fresh process
    monkeypatch.setenv(MASTER_ENV, "lokal[2]")
    job = write(tmp_path, FAILING_JOB)
    assert main(["run", "--quiet", str(job)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("jetspark: Spark master 'lokal[2]' is not a master URL")
    assert len(error.strip().splitlines()) == 1
    assert SparkContext._active_spark_context is None  # no session was started


def test_a_task_failure_names_the_users_line_in_the_task(capsys: pytest.CaptureFixture[str]) -> None:
    """A JobFailedError from Spark carries the task's traceback as text: the report shows the
    innermost frame of the user's code in it, with its source line, before the driver's frame."""
    from jetspark.cli.errors import remote_users_frame, report
    from jetspark.core.errors import JobFailedError

    error = JobFailedError("vertex 'check' processor #0 failed: ValueError: item 7 is bad")
    jetspark_file = str(Path(__file__).resolve().parents[3] / "jetspark" / "engine" / "tasklet.py")
    error.remote_traceback = (  # type: ignore[attr-defined]
        "Traceback (most recent call last):\n"
        f'  File "{jetspark_file}", line 243, in _process_inbox\n'
        "    self.processor.process(stream.ordinal, inbox)\n"
        '  File "<jetspark generated run(check) 054c9726>", line 3, in run\n'
        "    item = _step0(item)\n"
        '  File "/home/me/jobs/failing_job.py", line 15, in check\n'
        '    raise ValueError("item 7 is bad")\n'
        "ValueError: item 7 is bad\n"
    )
    expected = '/home/me/jobs/failing_job.py:15 in check: raise ValueError("item 7 is bad")'
    assert remote_users_frame(error) == expected
    report(error)
    assert f"  in a Spark task, at {expected}" in capsys.readouterr().err.splitlines()

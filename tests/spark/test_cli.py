"""The `jetspark` command, `jetspark.api.run`, and the word-count example.

Only `test_word_count_runs_on_embedded_spark_like_in_process` starts Spark (in a subprocess, as a
user would); the rest checks the command lines and errors without Spark.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from jetspark.api import default_runner
from jetspark.cli.main import submit_command
from jetspark.cli.pyfiles import build_zip
from jetspark.runners.local import LocalRunner
from jetspark.runners.spark import SparkRunner
from jetspark.runners.spark.session import JavaNotFoundError, check_java

ROOT = Path(__file__).resolve().parents[2]
JETSPARK = Path(sys.executable).parent / "jetspark"
EXAMPLE = ROOT / "examples" / "word_count.py"


def jetspark(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    assert JETSPARK.exists(), f"{JETSPARK} is missing: pip install -e ."
    return subprocess.run(
        [str(JETSPARK), *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def top_ten(output: str) -> list[str]:
    lines = output.splitlines()
    start = lines.index("top 10:") + 1
    return lines[start : start + 10]


def test_run_local_needs_no_spark_and_prints_the_top_ten() -> None:
    done = jetspark("run", "--local", str(EXAMPLE), "--lines", "300", env={"JAVA_HOME": "/nonexistent"})
    assert done.returncode == 0, done.stderr
    assert "on LocalJob with 1 member(s)" in done.stdout
    example = runpy.run_path(str(EXAMPLE))  # not as __main__: just its functions
    counts = Counter(word for line in example["corpus"](300) for word in example["tokenize"](line))
    expected = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    assert [line.split()[1:] for line in top_ten(done.stdout)] == [[w, str(c)] for w, c in expected]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_word_count_runs_on_embedded_spark_like_in_process() -> None:
    on_spark = jetspark("run", "--master", "local[2]", str(EXAMPLE), "--lines", "3000", timeout=280)
    assert on_spark.returncode == 0, on_spark.stderr
    assert "on SparkJob with 2 member(s)" in on_spark.stdout
    local = jetspark("run", "--local", str(EXAMPLE), "--lines", "3000")
    assert top_ten(on_spark.stdout) == top_ten(local.stdout)


def test_missing_java_is_a_clear_error_before_spark_starts(tmp_path: Path) -> None:
    done = jetspark("run", str(EXAMPLE), env={"JAVA_HOME": str(tmp_path)})
    assert done.returncode == 2
    assert "Spark needs Java 17 or newer" in done.stderr and "has no bin/java" in done.stderr
    assert "openjdk-17" in done.stderr and "jetspark run --local" in done.stderr
    assert "Traceback" not in done.stderr


def test_check_java_without_java_home_or_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match="no `java` on PATH and JAVA_HOME is not set"):
        check_java()


def test_default_runner_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JETSPARK_RUNNER", "local")
    assert isinstance(default_runner(), LocalRunner)
    monkeypatch.setenv("JETSPARK_RUNNER", "spark")
    assert isinstance(default_runner(), SparkRunner)  # the session starts only when a job is submitted
    monkeypatch.setenv("JETSPARK_RUNNER", "yarn")
    with pytest.raises(ValueError, match="expected 'local' or 'spark'"):
        default_runner()


def test_submit_to_a_local_master_runs_workers_on_this_python(tmp_path: Path) -> None:
    command, env = submit_command(["--master", "local[2]", "job.py", "--lines", "5"], tmp_path)
    assert Path(command[0]).name == "spark-submit" and Path(command[0]).exists()
    assert command[-4:] == ["local[2]", "job.py", "--lines", "5"]
    assert "--py-files" not in command
    assert env["PYSPARK_PYTHON"] == sys.executable or "PYSPARK_PYTHON" in os.environ
    assert env["JETSPARK_RUNNER"] == "spark"


def test_submit_still_understands_the_older_form_with_a_double_dash(tmp_path: Path) -> None:
    command, _env = submit_command(["job.py", "--master", "local[2]", "--", "--lines", "5"], tmp_path)
    assert command[-4:] == ["local[2]", "job.py", "--lines", "5"]


def test_submit_to_a_cluster_ships_jetspark_as_py_files(tmp_path: Path) -> None:
    command, _env = submit_command(
        ["--master", "spark://host:7077", "--py-files", "mine.zip", "job.py"], tmp_path
    )
    files = command[command.index("--py-files") + 1].split(",")
    assert files[0] == "mine.zip" and Path(files[1]).name == "jetspark-pyfiles.zip"
    assert command[-1] == "job.py"


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_submit_passes_the_arguments_after_the_job_file_to_the_job() -> None:
    """Issue 11: `jetspark submit job.py --lines 300` once made spark-submit look for a main class
    in a JAR; the arguments now reach the job as with `jetspark run`."""
    done = jetspark("submit", "--quiet", "--master", "local[1]", str(EXAMPLE), "--lines", "300", timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Failed to get main class" not in done.stderr
    local = jetspark("run", "--local", "--quiet", str(EXAMPLE), "--lines", "300")
    assert top_ten(done.stdout) == top_ten(local.stdout)
    assert "3600 words" in done.stdout  # 300 lines of 12 words: --lines reached the job


def test_the_py_files_zip_alone_makes_jetspark_importable(tmp_path: Path) -> None:
    bundle = build_zip(tmp_path / "bundle.zip")
    names = zipfile.ZipFile(bundle).namelist()
    assert "jetspark/runners/spark/task.py" in names and not any(n.endswith(".pyc") for n in names)
    code = (
        f"import sys; sys.path.insert(0, {str(bundle)!r}); "
        "import jetspark.runners.spark.task as t, jetspark.processors, cloudpickle, attrs; print(t.__file__)"
    )
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(str(bundle))


LOGGING_JOB = """
import logging, os
from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.api import run

def levels(n):
    logger = logging.getLogger("jetspark.vertex.levels")
    logger.debug("worker saw %d", n)
    return (os.getpid(), logger.getEffectiveLevel())

dag = DAG()
numbers = dag.new_vertex("numbers", P.from_iterable(range(4)))
seen = dag.new_vertex("levels", P.map(levels))
sink = dag.new_vertex("sink", P.collect())
dag.edge(Edge.between(numbers, seen).distributed()).edge(Edge.between(seen, sink))
for pid, level in sorted(set(run(dag).result("sink"))):
    print(pid != os.getpid(), logging.getLevelName(level))
"""


@pytest.mark.slow
def test_log_level_reaches_the_python_workers_of_the_executors(tmp_path: Path) -> None:
    """The processors run in Spark's Python workers (other processes than the driver): their
    jetspark loggers take `--log-level`, and their debug records reach standard error."""
    job = tmp_path / "job.py"
    job.write_text(LOGGING_JOB)
    done = jetspark("run", "--master", "local[2]", "--quiet", "--log-level", "debug", str(job), timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(done.stdout.split("\n")) - {""} == {"True DEBUG"}, done.stdout
    logged = [line for line in done.stderr.splitlines() if "DEBUG jetspark.vertex.levels: worker saw" in line]
    assert sorted(line.rsplit(" ", 1)[1] for line in logged) == ["0", "1", "2", "3"]

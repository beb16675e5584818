"""`jetspark run/submit --log-level` and the `print` sink, run as a person would (a subprocess of
`jetspark run --local`): the level reaches the processors' loggers, `print` prints each item."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jetspark.cli.main import _own_options, main

JOB = """
import logging
from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.api import run

dag = DAG()
source = dag.new_vertex("numbers", P.from_iterable(range(3)))
printed = dag.new_vertex("printed", P.print(lambda n: f"n={n}"))
logged = dag.new_vertex("logged", P.logger(logging.DEBUG))
dag.edge(Edge.between(source, printed))
dag.edge(Edge.from_(source, 1).to(logged))
run(dag)
"""


def jetspark_run(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    command = [sys.executable, "-m", "jetspark.cli.main", "run", "--local", "--quiet", *options, str(job)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_log_level_debug_shows_the_processors_debug_logs_and_print_prints_every_item(tmp_path: Path) -> None:
    done = jetspark_run(tmp_path, "--log-level", "debug")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == ["n=0", "n=1", "n=2"]
    logged = [line for line in done.stderr.splitlines() if "DEBUG jetspark.vertex.logged:" in line]
    assert sorted(line.rsplit(" ", 1)[1] for line in logged) == ["0", "1", "2"]


def test_without_log_level_debug_logs_stay_hidden(tmp_path: Path) -> None:
    done = jetspark_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "jetspark.vertex.logged" not in done.stderr
    assert sorted(done.stdout.split()) == ["n=0", "n=1", "n=2"]


def test_an_unknown_level_is_refused_naming_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--log-level", "loud", "job.py"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.replace("'", "")  # Python versions differ in quoting the choices
    assert "--log-level: invalid choice: LOUD (choose from DEBUG, INFO, WARNING, ERROR, CRITICAL)" in error


def test_submit_takes_log_level_as_its_own_option() -> None:
    own, rest = _own_options(["--log-level", "INFO", "--master", "local[2]", "job.py", "--log-level", "x"])
    assert own == ["--log-level", "INFO"]
    assert rest == ["--master", "local[2]", "job.py", "--log-level", "x"]


def test_the_level_goes_to_executors_environment_through_spark_submit_and_embedded_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jetspark.cli.main import submit_command
    from jetspark.runners.spark.session import embedded_conf

    monkeypatch.delenv("JETSPARK_LOG_LEVEL", raising=False)
    command, _ = submit_command(["--master", "spark://h:7077", "job.py"], tmp_path)
    assert not any("executorEnv" in word for word in command)
    assert not any("executorEnv" in key for key in embedded_conf("local[2]"))
    monkeypatch.setenv("JETSPARK_LOG_LEVEL", "DEBUG")
    command, _ = submit_command(["--master", "spark://h:7077", "job.py"], tmp_path)
    at = command.index("spark.executorEnv.JETSPARK_LOG_LEVEL=DEBUG")
    assert command[at - 1] == "--conf" and at < command.index("job.py")
    assert embedded_conf("local[2]")["spark.executorEnv.JETSPARK_LOG_LEVEL"] == "DEBUG"
    mine = ["--conf", "spark.executorEnv.JETSPARK_LOG_LEVEL=ERROR", "job.py"]
    command, _ = submit_command(["--master", "local[2]", *mine], tmp_path)
    assert [w for w in command if "JETSPARK_LOG_LEVEL" in w] == ["spark.executorEnv.JETSPARK_LOG_LEVEL=ERROR"]

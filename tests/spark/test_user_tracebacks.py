"""Issue 19: a function of the user's job file that fails on an executor shows the user's file,
line and source line in the traceback, with every cloudpickle version setup.cfg allows (3.1.3 and
later rename shipped code `<dynamic-code>`), whichever way the job file is started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("failing_job.py")
BIN = Path(sys.executable).parent
#: The line of failing_job.py that raises, as the traceback must show it.
RAISE = 'raise ValueError("item 7 is bad")'


def _line_of(text: str) -> int:
    return JOB.read_text().splitlines().index(f"        {text}") + 1


def _started(command: list[str]) -> str:
    """Run a job file as a user would (the venv's bin first on PATH, as after `activate`), and
    return everything it wrote."""
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    assert done.returncode != 0, "the job should have failed on item 7"
    return done.stdout + done.stderr


def _assert_names_the_users_line(log: str) -> None:
    assert f'File "{JOB}", line {_line_of(RAISE)}, in check' in log, log[-4000:]
    assert RAISE in log, log[-4000:]
    assert "<dynamic-code>" not in log


@pytest.mark.timeout(300)
def test_jetspark_run_shows_the_users_file_and_line() -> None:
    log = _started([str(BIN / "jetspark"), "run", "--master", "local[1]", str(JOB)])
    _assert_names_the_users_line(log)
    # the command's own short report names the line in the task too, not only Spark's log
    assert f"  in a Spark task, at {JOB}:{_line_of(RAISE)} in check: {RAISE}" in log, log[-3000:]


@pytest.mark.timeout(300)
def test_jetspark_submit_shows_the_users_file_and_line() -> None:
    _assert_names_the_users_line(
        _started([str(BIN / "jetspark"), "submit", "--quiet", "--master", "local[1]", str(JOB)])
    )


@pytest.mark.timeout(300)
def test_plain_spark_submit_shows_the_users_file_and_line() -> None:
    _assert_names_the_users_line(_started([str(BIN / "spark-submit"), "--master", "local[1]", str(JOB)]))

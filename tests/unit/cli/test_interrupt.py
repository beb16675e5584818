"""Ctrl-C at any moment of `jetspark run` ends with one line (issue 19): while the command loads,
while Spark starts (the JVM being started, which ignores SIGINT, is killed instead of printing a
Java trace over the terminal), and while the job runs (cancelled, or suspended with a guarantee)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from jetspark import _command
from jetspark.api import run
from jetspark.core import DAG, JobConfig, ProcessingGuarantee
from jetspark.runners.job import Capabilities, JobHandle, JobStatus
from jetspark.runners.spark import session
from tests.waiting import wait_until


def test_an_interrupt_while_the_command_loads_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    _command._interrupted_quietly(KeyboardInterrupt, KeyboardInterrupt(), None)
    assert capsys.readouterr().err == "jetspark: interrupted\n"


def test_an_interrupt_in_the_job_file_is_one_line_and_exit_130(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text("raise KeyboardInterrupt\n")
    jetspark = Path(sys.executable).parent / "jetspark"
    done = subprocess.run(
        [str(jetspark), "run", "--local", "--quiet", str(job)], capture_output=True, text=True
    )
    assert done.returncode == 130
    assert done.stderr == "jetspark: interrupted\n"


class Job(JobHandle):
    def __init__(self) -> None:
        super().__init__()
        self.name = "counts"
        self.status = JobStatus.RUNNING
        self.calls: list[str] = []

    def join(self, timeout: Any = None) -> Any:
        raise KeyboardInterrupt

    def capabilities(self) -> Capabilities:
        return Capabilities(can_suspend=True)

    def cancel(self) -> None:
        self.calls.append("cancel")

    def suspend(self) -> None:
        self.calls.append("suspend")


class Runner:
    def __init__(self) -> None:
        self.job = Job()

    def submit(self, dag: DAG, config: JobConfig) -> Job:
        return self.job


@pytest.mark.parametrize(
    ("guarantee", "root", "called", "said"),
    [
        (ProcessingGuarantee.NONE, False, "cancel", "job 'counts' cancelled"),
        (ProcessingGuarantee.EXACTLY_ONCE, True, "suspend", "job 'counts' suspended: run it again to resume"),
        (
            ProcessingGuarantee.EXACTLY_ONCE,
            False,
            "suspend",
            "job 'counts' suspended: its snapshot is kept in this process only (no checkpoint_root), "
            "so running it again starts from the beginning",
        ),
    ],
)
def test_an_interrupt_while_the_job_runs_stops_it_and_says_how(
    guarantee: ProcessingGuarantee,
    root: bool,
    called: str,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.delenv("JETSPARK_PROGRESS", raising=False)
    runner = Runner()
    config = JobConfig(
        name="counts", processing_guarantee=guarantee, checkpoint_root=str(tmp_path) if root else None
    )
    with pytest.raises(KeyboardInterrupt) as caught:
        run(DAG(), config, runner=runner)
    assert runner.job.calls == [called]
    assert str(caught.value) == said


IGNORES_SIGINT = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="children are found in /proc")
def test_an_interrupt_while_spark_starts_kills_the_jvm_being_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """The JVM stands here for a child process that ignores SIGINT, as pyspark starts it."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    monkeypatch.setattr(SparkContext, "_active_spark_context", None)  # as in a fresh process
    # a mark of this test's own: a real Spark JVM of this process (another test's session) is left alone
    monkeypatch.setattr(session, "_SPARK_JVM_MARK", f"jetspark-test-jvm-{os.getpid()}".encode())
    started: list[subprocess.Popen[bytes]] = []

    def interrupted_start(_builder: Any) -> None:
        child = subprocess.Popen([sys.executable, "-c", IGNORES_SIGINT, session._SPARK_JVM_MARK.decode()])
        started.append(child)
        cmdline = Path(f"/proc/{child.pid}/cmdline")
        wait_until(lambda: session._SPARK_JVM_MARK in cmdline.read_bytes(), "the child to run")
        raise KeyboardInterrupt

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", interrupted_start)
    monkeypatch.setattr(session, "check_java", lambda: "java")
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    with pytest.raises(KeyboardInterrupt):
        session.get_session("local[1]")
    [child] = started
    wait_until(lambda: child.poll() is not None, "the child to be killed", timeout=10)
    assert child.returncode == -9


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="children are found in /proc")
def test_only_this_processs_spark_jvm_children_are_killed(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import subprocess, sys, time
        from jetspark.runners.spark.session import _kill_child_processes
        jvm = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "org.apache.spark.deploy.SparkSubmit"])
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        _kill_child_processes()
        print(jvm.wait(timeout=10), other.poll())
        other.kill()
        """
    )
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert done.stdout.strip() == "-9 None", done.stderr  # the JVM killed, the other child not
        assert sibling.poll() is None  # not a child of that process: left alone
    finally:
        sibling.kill()
        sibling.wait()

"""The `files` sink's output is exact, line for line, whatever Spark does with task attempts.

Spark may run a task more than once: a retry after a processor raised or a Python worker died,
or a speculative copy racing a slow original, each attempt writing part or all of its output.
Whatever happened, a completed job must leave exactly `sink-<index>.txt` files holding each item
once, plus `_SUCCESS`; a failed job no committed files. The jobs and faults are in `faults.py`;
each scenario runs its jobs in a subprocess (a process holds one SparkContext, and the test
session's is `local[2]`). Speculation needs two hosts (a copy never runs on the original's host),
so its scenario starts a standalone master and two workers on 127.0.0.2 and 127.0.0.3.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jetspark.runners.spark.session import pyspark_home
from tests.spark import faults
from tests.spark.faults import Attempt, attempts, committed_problems, failed_problems
from tests.spark.processes import ROOT, run_driver_script, with_root_on_path

pytestmark = [pytest.mark.spark, pytest.mark.slow]

EXPECTED = [str(n) for n in range(faults.COUNT)]
WORKER_HOSTS = ("127.0.0.2", "127.0.0.3")
#: Speculate as soon as one of the stage's two tasks is done and the other runs 1.5x longer.
SPECULATION = {
    "spark.speculation": "true",
    "spark.speculation.interval": "100ms",
    "spark.speculation.multiplier": "1.5",
    "spark.speculation.quantile": "0.5",
    "spark.speculation.minTaskRuntime": "100ms",
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    "spark.executor.memory": "512m",
    "spark.locality.wait": "0",  # no waiting for a preferred host: the copy starts at once
    "spark.driver.host": "127.0.0.1",
}

Job = dict[str, Any]


def job(base: Path, fault: str, **options: int) -> Job:
    """A job spec for `faults.main`, with its own output and side directories under `base`."""
    side = base / f"{fault}-side"
    side.mkdir(parents=True)
    return {"fault": fault, "output": str(base / f"{fault}-out"), "side": str(side), **options}


def run_jobs(master: str, jobs: list[Job], executors: int = 0, conf: dict[str, str] | None = None) -> None:
    """Run `jobs` in one subprocess on `master`; adds each job's report under "report"."""
    spec = {"master": master, "jobs": jobs, "executors": executors, "conf": conf or {}}
    env = with_root_on_path({**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    done = subprocess.run(
        [sys.executable, str(Path(faults.__file__)), json.dumps(spec)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    for spec_job, report in zip(jobs, json.loads(done.stdout.strip().splitlines()[-1]), strict=True):
        spec_job["report"] = report
        assert report["quiesced"], f"{report}: an attempt still ran 30 s after the job ended"


def of_partition_0(spec: Job) -> list[Attempt]:
    """The attempts of partition 0 of the sink stage (the one with the fault), in order."""
    return [a for a in attempts(spec["side"]) if a.partition == 0]


# ---- retries: local[2,4] and local-cluster ---------------------------------------------------


@pytest.fixture(scope="module")
def retried(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Job]:
    """On `local[2,4]` (4 attempts per task): a task that raises once, and one that always raises."""
    base = tmp_path_factory.mktemp("retried")
    jobs = [job(base, "raise"), job(base, "raise-always")]
    run_jobs("local[2,4]", jobs)
    return {j["fault"]: j for j in jobs}


@pytest.mark.timeout(300)
def test_a_task_retried_after_its_gate_raised_leaves_exact_output(retried: dict[str, Job]) -> None:
    spec = retried["raise"]
    assert spec["report"]["status"] == "completed"
    first, retry = of_partition_0(spec)
    assert {"partial", "fault"} <= first.events.keys(), "the failed attempt wrote output, then raised"
    assert retry.number == 1 and "done" in retry.events
    assert committed_problems(spec["output"], EXPECTED) == []


@pytest.mark.timeout(300)
def test_a_job_whose_task_fails_every_attempt_leaves_no_committed_output(retried: dict[str, Job]) -> None:
    spec = retried["raise-always"]
    assert spec["report"]["status"].startswith("failed: JobFailedError")
    assert [a.number for a in of_partition_0(spec)] == [0, 1, 2, 3]
    assert all({"partial", "fault"} <= a.events.keys() for a in of_partition_0(spec))
    assert failed_problems(spec["output"]) == []


@pytest.mark.timeout(300)
def test_a_task_retried_after_its_python_worker_died_leaves_exact_output(tmp_path: Path) -> None:
    """local-cluster: separate executor JVMs, where a worker's death fails the task (4 attempts)."""
    spec = job(tmp_path, "exit")
    run_jobs("local-cluster[2,1,1024]", [spec], executors=2)
    assert spec["report"]["status"] == "completed"
    assert spec["report"]["executors"] == 2
    crashed, retry = of_partition_0(spec)
    assert {"partial", "fault"} <= crashed.events.keys()
    assert "closed" not in crashed.events, "the worker died without closing anything"
    assert "done" in retry.events
    assert committed_problems(spec["output"], EXPECTED) == []


# ---- speculation: a standalone cluster of two hosts --------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def bindable(host: str) -> bool:
    try:
        with socket.socket() as probe:
            probe.bind((host, 0))
    except OSError:
        return False
    return True


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a daemon and its process group (a worker's executors are in it)."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def alive_workers(webui: int) -> list[str]:
    """The hosts of the workers the master's UI lists as alive; none while the UI starts (it may
    answer with a broken response or a page that is not JSON yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=5) as response:
            state = json.load(response)
    except (OSError, ValueError, http.client.HTTPException):
        return []
    return sorted(w["host"] for w in state.get("workers", []) if w.get("state") == "ALIVE")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone master on 127.0.0.1 and a 1-core worker on each of 127.0.0.2 and 127.0.0.3;
    yields the master URL and kills every daemon's process group afterwards."""
    if not all(bindable(host) for host in WORKER_HOSTS):
        pytest.skip(f"needs loopback addresses {WORKER_HOSTS} (Linux has them)")
    base = tmp_path_factory.mktemp("standalone")
    home = pyspark_home()
    port, webui = free_port(), free_port()
    env = {
        **with_root_on_path(dict(os.environ)),
        "SPARK_HOME": home,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",  # its port is fixed (6066)
    }
    daemons: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(args: list[str], host: str, log: Path) -> None:
        with log.open("wb") as out:
            process = subprocess.Popen(
                [f"{home}/bin/spark-class", *args],
                env={**env, "SPARK_LOCAL_IP": host},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        daemons.append((process, log))

    try:
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        start([*master, "--port", str(port), "--webui-port", str(webui)], "127.0.0.1", base / "master.log")
        for host in WORKER_HOSTS:
            work = base / host
            work.mkdir()
            worker = ["org.apache.spark.deploy.worker.Worker", "--host", host, "--cores", "1"]
            args = [*worker, "--memory", "1g", "--webui-port", "0", "--work-dir", str(work)]
            start([*args, f"spark://127.0.0.1:{port}"], host, base / f"worker-{host}.log")
        deadline = time.monotonic() + 120
        while alive_workers(webui) != list(WORKER_HOSTS):
            dead = [log.name for process, log in daemons if process.poll() is not None]
            if dead or time.monotonic() > deadline:
                tails = "\n".join(f"{log.name}: {log.read_text()[-1500:]}" for _, log in daemons)
                pytest.fail(f"the standalone cluster did not come up (exited: {dead})\n{tails}")
            time.sleep(0.5)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for process, _ in reversed(daemons):
            stop(process)


@pytest.fixture(scope="module")
def speculated(standalone: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Job]:
    """Two speculated jobs: the original of partition 0 (about 10 000 items) stalls after 4000
    items until a copy has done all its work (the copy wins); or it passes 8500 and waits for a
    copy that stalls after 4000 (the original wins, the copy is killed with part of its output
    written, less than the original's)."""
    base = tmp_path_factory.mktemp("speculated")
    jobs = [job(base, "slow-original"), job(base, "slow-copy", after=8500, copy_after=4000)]
    run_jobs(standalone, jobs, executors=2, conf=SPECULATION)
    return {j["fault"]: j for j in jobs}


@pytest.mark.timeout(420)
def test_a_speculative_copy_that_wins_leaves_exact_output(speculated: dict[str, Job]) -> None:
    spec = speculated["slow-original"]
    assert spec["report"]["status"] == "completed"
    original, *copies = of_partition_0(spec)
    assert copies, "Spark launched no speculative copy"
    assert {"partial", "fault"} <= original.events.keys()
    finished = [c for c in copies if "closed" in c.events]
    assert finished, "no copy finished"
    if "woke" in original.events:  # the loser went on writing: only after the copy had finished
        assert original.events["woke"] > min(c.events["closed"] for c in finished)
    assert committed_problems(spec["output"], EXPECTED) == []


@pytest.mark.timeout(420)
def test_a_speculative_copy_that_loses_leaves_exact_output(speculated: dict[str, Job]) -> None:
    spec = speculated["slow-copy"]
    assert spec["report"]["status"] == "completed"
    original, *copies = of_partition_0(spec)
    assert copies, "Spark launched no speculative copy"
    assert "done" in original.events and "closed" in original.events
    killed = [c for c in copies if {"partial", "fault"} <= c.events.keys() and "closed" not in c.events]
    assert killed, "no copy was killed after writing part of its output"
    assert committed_problems(spec["output"], EXPECTED) == []


@pytest.mark.timeout(540)
def test_a_speculative_copy_in_an_epoch_aborts_it_and_the_output_stays_exact(
    standalone: str, tmp_path: Path
) -> None:
    # Only the task held at item 2501 may be speculated: an epoch's ordinary tasks, which a busy
    # machine can slow to several seconds, would each abort their epoch too, until the job gave up.
    conf = {**SPECULATION, "spark.speculation.minTaskRuntime": "20s"}
    spec = {"master": standalone, "conf": conf, "work": str(tmp_path)}
    script = Path(__file__).with_name("epoch_speculation_job.py")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    report = run_driver_script(script, json.dumps(spec), timeout=480, env=env)
    assert report["slowed"], report
    # Spark speculated: a copy refuses to run a task again, or a consumer sees the input of a producer
    # whose task was stopped or retried; which of them aborts the last epoch depends on timing
    reasons = ("again (attempt", "stopped or retried")
    assert report["aborted"] >= 1 and any(r in str(report["last_abort"]) for r in reasons), report
    assert report["exact"], report

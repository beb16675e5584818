"""Helpers for tests that start a Spark driver in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def with_root_on_path(env: dict[str, str]) -> dict[str, str]:
    """`env` with the repository root first on PYTHONPATH: drivers and executors import this
    checkout's jetspark, whatever is installed."""
    path = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path}


def run_driver_script(script: Path, *args: str, timeout: float, env: dict[str, str] | None = None) -> Any:
    """Run a driver script (its own SparkContext) in a subprocess from the repository root and
    return the JSON of the last line it printed; a non-zero exit fails with its stderr's tail."""
    done = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=ROOT,
        env=with_root_on_path(dict(env if env is not None else os.environ)),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_for_executors(spark: Any, count: int, timeout: float = 120) -> None:
    """Wait until `count` executors (besides the driver) have registered."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout
    while len(tracker.getExecutorInfos()) < count + 1 and time.monotonic() < deadline:
        time.sleep(0.2)


def epoch_report(job: Any, out: str, count: int) -> dict[str, Any]:
    """What a driver script reports of an epochs job of `examples/streaming_counts.py`."""
    from examples.streaming_counts import expected_rows
    from jetspark.processors.transactional import read_lines

    rows = sorted(read_lines(out))
    return {
        "exact": rows == expected_rows(count),
        "rows": len(rows),
        "committed": job.epochs_committed,
        "aborted": job.epochs_aborted,
        "last_abort": job.last_abort,
    }


def session_processes(sid: int) -> list[int]:
    """The live processes of session `sid` (a driver started with `start_new_session=True` and
    everything it started: its JVM, `pyspark.daemon`, the Python workers), zombies excluded."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            found.append(int(entry))
    return found


def kill_tree(driver: subprocess.Popen[Any], timeout: float = 30) -> None:
    """SIGKILL the driver and every process of its session at once, as a machine that loses
    power (or an OOM killer taking the cgroup) would; return when none is left."""
    deadline = time.monotonic() + timeout
    while True:
        left = session_processes(driver.pid)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        driver.poll()
        if not left:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"processes {left} of the killed driver's session are still alive")
        time.sleep(0.01)

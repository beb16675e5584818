"""Helpers for tests that start a Spark driver in a subprocess."""

from __future__ import annotations

import json
import os
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

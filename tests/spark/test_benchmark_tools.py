"""The benchmarks that docs/benchmarks.md quotes still run: each at a tiny size, in its own process.

They patch the engine's classes to time its steps (`benchmarks/epoch_timeline.py`), so a change of
an engine method's signature breaks them without breaking any other test; this catches that."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (
        f"{args[0]} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    )
    return done.stdout


def test_epoch_state_bench_times_every_step_of_a_quiet_epoch(tmp_path: Path) -> None:
    timeline = tmp_path / "timeline.jsonl"
    out = _run(
        [
            "benchmarks/epoch_state_bench.py",
            "--keys", "200",
            "--items", "4000",
            "--rate", "0",
            "--keyed-state",
            "--quiet-epochs", "2",
            "--timeline", str(timeline),
        ]
    )  # fmt: skip
    assert "throughput EO/NONE" in out
    assert "fixed cost" in out
    assert "(sum: an epoch, start to start)" in out
    assert "stage 1: processors save (offer + pickle)" in out
    assert timeline.read_text().count("\n") >= 6  # a line per task: 3 stages x 2 quiet epochs

"""Seed 004 audit: the quiescence check as a user of `jetspark run --local` meets it.

docs/getting-started.md's table of errors: "nothing in the job can move, items pending ->
`QuiescenceError` with every processor's state"; docs/quiescence.md: "The message lists every
processor not done with its state, its three watermarks and its pending counts"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STUCK_JOB = """
from jetspark import DAG, Edge, JobConfig
from jetspark.api import run
from jetspark.core import AbstractProcessor
from jetspark.processors import collect, from_iterable


class Stuck(AbstractProcessor):
    def try_process_item(self, ordinal, item):
        return True

    def complete(self):
        return False


dag = DAG()
numbers = dag.new_vertex("numbers", from_iterable(range(5)))
stuck = dag.new_vertex("stuck", Stuck)
sink = dag.new_vertex("sink", collect())
dag.edge(Edge.between(numbers, stuck)).edge(Edge.between(stuck, sink))
run(dag, JobConfig(name="stuck", quiescence_timeout_seconds=0.3))
print("not reached")
"""


def run_stuck_job(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    job = tmp_path / "stuck_job.py"
    job.write_text(STUCK_JOB)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "jetspark.cli.main", "run", "--local", "--quiet", *options, str(job)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_stuck_job_ends_the_command_with_status_1_and_the_quiescence_error(tmp_path: Path) -> None:
    result = run_stuck_job(tmp_path)
    assert result.returncode == 1
    assert "not reached" not in result.stdout
    assert "jetspark: QuiescenceError: nothing in progress for 0.3 s" in result.stderr


def test_with_verbose_the_dump_names_the_stuck_processor(tmp_path: Path) -> None:
    result = run_stuck_job(tmp_path, "--verbose")
    assert result.returncode == 1
    assert "vertex 'stuck' processor #0: state=complete" in result.stderr
    assert "every input ended, not completed" in result.stderr


def test_without_verbose_the_error_still_names_the_stuck_processor(tmp_path: Path) -> None:
    result = run_stuck_job(tmp_path)
    assert result.returncode == 1
    assert "vertex 'stuck' processor #0" in result.stderr, result.stderr

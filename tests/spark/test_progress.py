"""The progress display and the web UI's Spark figures on a Spark job: the stages of the job's Spark
job with their task counts (from Spark's status tracker), and the per-vertex figures once it ends."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, Edge, JobConfig
from jetspark.cli.progress import progress_display
from jetspark.processors import collect
from jetspark.runners.job import JobStatus
from jetspark.runners.spark import SparkRunner
from tests.gates import Gate, gated_stream
from tests.unit.cli.test_progress import ANSI, figures_in, numbers_job
from tests.waiting import wait_until

pytestmark = pytest.mark.spark


def test_spark_stages_and_the_final_figures_are_shown(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # one line per stage
    job = SparkRunner(spark, member_count=2).submit(numbers_job(3000), JobConfig(name="squares"))
    out = io.StringIO()
    with progress_display(job, force_terminal=True, file=out, refresh=0.05):
        job.join(120)
    stages = job.spark_stages()
    assert stages and all(s["completed"] == s["tasks"] == 2 for s in stages), stages
    assert any(s["name"] == "jetspark squares: stage 0 [numbers] -> stage 1" for s in stages), stages
    shown = ANSI.sub("", out.getvalue())
    for stage in stages:
        short = stage["name"].removeprefix("jetspark squares: ")
        assert f"Spark stage {stage['stage_id']}: {short}" in shown, shown  # brackets and all
        assert re.search(rf"Spark stage {stage['stage_id']}: .*2/2 tasks", shown), shown
    metrics = job.metrics()
    assert figures_in(out.getvalue()) == {v: (m["received"], m["emitted"]) for v, m in metrics.items()}
    assert job.spark_ui_links() == []  # the test session runs without Spark's web UI


def test_a_running_batch_jobs_counts_reach_the_driver_before_it_ends(spark: Any, tmp_path: Path) -> None:
    """The tasks report their members' counts while they run: with the source held at item 300,
    the driver sees 300 items out of `numbers` while the Spark job is still running."""
    gate = Gate(tmp_path / "gate", hold_at=300)
    dag = DAG()
    numbers = dag.new_vertex("numbers", gated_stream(gate, count=1000))
    dag.edge(Edge.between(numbers, dag.new_vertex("sink", collect())).distributed())
    job = SparkRunner(spark, member_count=2).submit(dag, JobConfig(name="held"))
    try:
        wait_until(lambda: job.live_metrics().get("numbers", {}).get("emitted") == 300, "300 out", 120)
        assert job.metrics() == {} and job.status is JobStatus.RUNNING
        assert 0 <= job.live_metrics().get("sink", {}).get("received", 0) <= 300
    finally:
        gate.open()
    job.join(120)
    assert job.live_metrics() == {}  # ended: metrics() has the exact figures
    assert job.metrics()["numbers"]["emitted"] == job.metrics()["sink"]["received"] == 1000

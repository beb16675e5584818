"""The progress display and the web UI's Spark figures on a Spark job: the stages of the job's Spark
job with their task counts (from Spark's status tracker), and the per-vertex figures once it ends."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from jetspark import JobConfig
from jetspark.cli.progress import progress_display
from jetspark.runners.spark import SparkRunner
from tests.unit.cli.test_progress import ANSI, figures_in, numbers_job

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

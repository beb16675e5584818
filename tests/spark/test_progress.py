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
from tests.gates import Gate, gated_pass, gated_stream
from tests.unit.cli.test_progress import ANSI, figures_in, numbers_job, run_on_a_terminal
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
        assert f"{short} (Spark stage {stage['stage_id']})" in shown, shown  # brackets and all
        assert re.search(rf"\(Spark stage {stage['stage_id']}\) .*2/2 tasks", shown), shown
    metrics = job.metrics()
    assert figures_in(out.getvalue()) == {v: (m["received"], m["emitted"]) for v, m in metrics.items()}
    assert job.spark_ui_links() == []  # the test session runs without Spark's web UI


def test_a_running_batch_jobs_counts_reach_the_driver_before_it_ends(spark: Any, tmp_path: Path) -> None:
    """The tasks report their members' counts while they run, and once more as they end: with the
    source held at item 300 the driver sees 300 items out of `numbers`; with the source's stage
    done and the next one held, all 1000; the Spark job is running all along."""
    source_gate = Gate(tmp_path / "source", hold_at=300)
    sink_gate = Gate(tmp_path / "sink", hold_at=0)
    dag = DAG()
    numbers = dag.new_vertex("numbers", gated_stream(source_gate, count=1000))
    held = dag.new_vertex("held", gated_pass(sink_gate))
    dag.edge(Edge.between(numbers, held).distributed())
    dag.edge(Edge.between(held, dag.new_vertex("sink", collect())))
    job = SparkRunner(spark, member_count=2).submit(dag, JobConfig(name="held"))
    try:
        wait_until(lambda: job.live_metrics().get("numbers", {}).get("emitted") == 300, "300 out", 120)
        assert job.metrics() == {} and job.status is JobStatus.RUNNING
        source_gate.open()  # stage 0 ends; its tasks' last reports count every item
        wait_until(lambda: job.live_metrics().get("numbers", {}).get("emitted") == 1000, "1000 out", 120)
        assert job.status is JobStatus.RUNNING
    finally:
        source_gate.open()
        sink_gate.open()
    job.join(120)
    assert job.live_metrics() == {}  # ended: metrics() has the exact figures
    assert job.metrics()["numbers"]["emitted"] == job.metrics()["sink"]["received"] == 1000


EPOCH_JOB = """
import sys

from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark import processors as P
from jetspark.api import run

dag = DAG()
numbers = dag.new_vertex("numbers", P.generator_stream(count=3000, items_per_second=1000))
counts = P.aggregate_by_key(dag, "counts", numbers, lambda n: n % 3, P.counting())
dag.edge(Edge.between(counts, dag.new_vertex("sink", P.collect())))
config = JobConfig(
    name="epochs",
    processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
    snapshot_interval_millis=500,
    checkpoint_root=sys.argv[1],
)
job = run(dag, config)
print("committed", job.epochs_committed)
"""


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_jetspark_run_on_a_terminal_says_spark_is_starting_and_shows_the_epochs(tmp_path: Path) -> None:
    """A fresh `jetspark run` on Spark (its own JVM, not the test session) on a pseudo-terminal:
    the session's start is announced and timed, then the epoch job's table names its epochs."""
    job_file = tmp_path / "epochs.py"
    job_file.write_text(EPOCH_JOB)
    shown = ANSI.sub(
        "", run_on_a_terminal("run", "--master", "local[2]", str(job_file), str(tmp_path / "cp"), timeout=360)
    )
    assert "Starting Spark (local[2]) ... " in shown, shown
    assert re.search(r"Spark \(local\[2\]\) started in \d+\.\d s", shown), shown
    assert re.search(r"epoch \d+ running \d+\.\d s", shown), shown  # while an epoch ran
    committed = re.findall(r"epoch (\d+) committed in (\d+\.\d) s  (\d+) committed, 0 aborted", shown)
    assert committed, shown
    epoch, seconds, count = committed[-1]
    assert int(count) >= 1 and int(epoch) >= 1 and float(seconds) > 0
    # and the last committed epoch's figures
    assert re.search(r"epoch \d+: [\d,]+ items in, [\d,]+ out, state [\d.,]+ k?B in [\d,]+ entries", shown), (
        shown
    )
    assert re.search(r"vertex\s+received\s+emitted\s+in/s\s+out/s", shown), shown
    assert figures_in(shown)["sink"] == (3, 0)  # the three counts, once

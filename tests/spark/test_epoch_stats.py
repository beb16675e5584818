"""A job in epochs on Spark, as the web UI and the progress display see it (`epoch_stats`): each
epoch's items, snapshot size, sink bytes and commit time, and the running epoch's counts as its
tasks report them, before it commits."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.cli.progress import JobProgress
from jetspark.processors import generator_stream, write_jsonl
from jetspark.runners.job import JobStatus
from jetspark.runners.spark import SparkRunner
from tests.gates import Gate, gated_pass
from tests.unit.cli.test_progress import ANSI, drawn, figures_in
from tests.waiting import wait_until

pytestmark = pytest.mark.spark

ITEMS = 2000


def held_files_job(gate: Gate, out: Path) -> DAG:
    """numbers -> held (passes at most the gate's limit per epoch: the epoch's snapshot barrier
    queues behind the items it holds, so the epoch stays open) -> files (`write_jsonl`)."""
    dag = DAG()
    numbers = dag.new_vertex("numbers", generator_stream(count=ITEMS), local_parallelism=1)
    held = dag.new_vertex("held", gated_pass(gate), local_parallelism=1)
    files = dag.new_vertex("files", write_jsonl(str(out)), local_parallelism=1)
    dag.edge(Edge.between(numbers, held).with_queue_size(16))  # the source soon waits on it
    dag.edge(Edge.between(held, files))
    return dag


def received(job: Any, vertex: str) -> int:
    return int(job.ledger.counts().get(vertex, {}).get("received", 0))


def test_an_epochs_counts_rise_while_it_runs_and_each_epoch_keeps_its_figures(
    spark: Any, tmp_path: Path
) -> None:
    gate = Gate(tmp_path / "gate", hold_at=100)
    config = JobConfig(
        name="live-epochs",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=100,
        checkpoint_root=str(tmp_path / "cp"),
    )
    job = SparkRunner(spark, member_count=1).submit(held_files_job(gate, tmp_path / "out"), config)
    try:
        wait_until(lambda: received(job, "files") == 100, "100 items into the sink, live", 120)
        running = job.ledger.running()
        assert running is not None and running["epoch"] == 0 and running["items_out"] == 100
        assert job.epochs_committed == 0 and job.metrics().get("files", {}).get("received", 0) == 0
        view = JobProgress(job)
        assert figures_in(drawn(view))["files"] == (100, 0)  # the terminal shows the live counts
        gate.hold_at(250)  # the same epoch goes on: its counts rise
        wait_until(lambda: received(job, "files") == 250, "250 items into the sink, live", 120)
        wait_until(
            lambda: job.ledger.counts()["numbers"]["backpressured_ms"] > 0,
            "the source's back-pressure, live",
            120,
        )
        shown = ANSI.sub("", drawn(view))
        assert figures_in(shown)["files"] == (250, 0), shown
        assert re.search(r"epoch 0 running \d+\.\d s  0 committed, 0 aborted", shown), shown
        assert re.search(r"vertex .* back-pressured", shown), shown
        assert job.epochs_committed == 0 and job.ledger.running()["epoch"] == 0
        assert job.status is JobStatus.RUNNING
    finally:
        gate.open()
    job.join(180)
    assert job.status is JobStatus.COMPLETED
    epochs = job.ledger.epochs()
    kept = [e for e in epochs if e["outcome"] in ("committed", "completed")]
    assert kept[-1]["epoch"] == 0 and kept[0]["outcome"] == "completed"
    assert sum(e["items_in"] for e in kept) == sum(e["items_out"] for e in kept) == ITEMS
    committed = [e for e in kept if e["outcome"] == "committed"]
    # epoch 0's snapshot holds the source's position and the sink's transaction; later ones at least the sink's
    assert committed and all(e["state_bytes"] > 0 and e["state_entries"] >= 1 for e in committed), epochs
    assert committed[-1]["state_entries"] >= 2 and committed[-1]["state_files"] >= 2
    assert all(e["commit_ms"] > 0 and e["duration_s"] > 0 for e in committed)
    assert all(e["span_s"] == 0.1 for e in kept), epochs  # each epoch's sources ran the interval
    written = sum(f.stat().st_size for f in (tmp_path / "out").glob("part-*.jsonl"))
    assert written > 0 and sum(e["sink_bytes"] for e in kept) == written
    totals = job.metrics()
    assert job.ledger.counts()["files"]["received"] == totals["files"]["received"] == ITEMS
    assert job.live_metrics() == {}  # ended

"""A job in epochs on Spark, as the web UI and the progress display see it (`epoch_stats`): each
epoch's items, snapshot size, sink bytes and commit time, and the running epoch's counts as its
tasks report them, before it commits."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.cli.progress import JobProgress
from jetspark.processors import generator_stream, noop, write_jsonl
from jetspark.runners.job import JobStatus
from jetspark.runners.spark import SparkRunner
from jetspark.runners.spark.epoch_span import CAUGHT_UP_IDLE_SHARE, MIN_SPAN_SHARE
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
    # epoch 0's sources ran the whole interval (nothing measured yet); it held items all along,
    # so the sources had a backlog (`epoch_span`); later ones may run less once the source is done
    assert kept[-1]["span_s"] == 0.1 and kept[-1]["sources_idle"] < CAUGHT_UP_IDLE_SHARE, epochs
    assert all(0.1 * MIN_SPAN_SHARE - 1e-3 <= e["span_s"] <= 0.1 for e in kept), [e["span_s"] for e in kept]
    written = sum(f.stat().st_size for f in (tmp_path / "out").glob("part-*.jsonl"))
    assert written > 0 and sum(e["sink_bytes"] for e in kept) == written
    totals = job.metrics()
    assert job.ledger.counts()["files"]["received"] == totals["files"]["received"] == ITEMS
    assert job.live_metrics() == {}  # ended


def streaming(rate: float | None) -> DAG:
    """numbers (at `rate` items per second, or as fast as it can) -> a shuffle -> a sink."""
    dag = DAG()
    numbers = dag.new_vertex("numbers", generator_stream(items_per_second=rate), local_parallelism=1)
    sink = dag.new_vertex("sink", noop(), local_parallelism=1)
    dag.edge(Edge.between(numbers, sink).distributed())
    return dag


def spans_of(
    spark: Any, tmp_path: Path, rate: float | None, interval_ms: int, within_interval: bool = False
) -> list[dict[str, Any]]:
    """The committed epochs of a job over `streaming(rate)`, oldest first, after five commits."""
    config = JobConfig(
        name=f"spans-{rate}",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=interval_ms,
        checkpoint_root=str(tmp_path / "cp"),
        epochs_within_interval=within_interval,
    )
    job = SparkRunner(spark, member_count=2).submit(streaming(rate), config)
    try:
        wait_until(lambda: job.epochs_committed >= 5 or job.status is not JobStatus.RUNNING, "5 epochs", 180)
        assert job.status is JobStatus.RUNNING, job.error
    finally:
        job.cancel()
    return sorted((e for e in job.ledger.epochs() if e["outcome"] == "committed"), key=lambda e: e["epoch"])


def test_caught_up_sources_run_shorter_spans_so_that_an_epoch_lasts_about_its_interval(
    spark: Any, tmp_path: Path
) -> None:
    """A source at 50 items/s waits most of its span: after the first epoch, each runs the
    interval less what the epochs before it took beyond their span (`epoch_span`)."""
    epochs = spans_of(spark, tmp_path, 50.0, 1000)
    assert epochs[0]["span_s"] == 1.0, "nothing measured yet: the whole interval"
    assert all(e["sources_idle"] >= CAUGHT_UP_IDLE_SHARE for e in epochs), epochs
    for before, epoch in itertools.pairwise(epochs):
        if before["epoch"] == epoch["epoch"] - 1:  # the epoch right after a committed one
            assert MIN_SPAN_SHARE - 1e-3 <= epoch["span_s"] < 1.0, epochs


def test_sources_with_a_backlog_run_the_whole_interval(spark: Any, tmp_path: Path) -> None:
    """A source that makes items as fast as it can never waits: a shorter span would only make
    fewer items per epoch, so every epoch runs the interval."""
    epochs = spans_of(spark, tmp_path, None, 300)
    assert all(e["span_s"] == 0.3 and e["sources_idle"] < CAUGHT_UP_IDLE_SHARE for e in epochs), epochs


def test_within_the_interval_sources_with_a_backlog_run_shorter_spans(spark: Any, tmp_path: Path) -> None:
    """`epochs_within_interval`: an epoch of a source with a backlog lasts its span and more (the
    later stages, the commit), so every epoch after a committed one runs a shorter span than the
    interval, and never less than its least share."""
    epochs = spans_of(spark, tmp_path, None, 300, within_interval=True)
    assert epochs[0]["span_s"] == 0.3, "nothing measured yet: the whole interval"
    assert all(e["sources_idle"] < CAUGHT_UP_IDLE_SHARE for e in epochs), epochs
    after = [e for b, e in itertools.pairwise(epochs) if b["epoch"] == e["epoch"] - 1]
    assert after, epochs
    assert all(0.3 * MIN_SPAN_SHARE - 1e-3 <= e["span_s"] < 0.3 for e in after), epochs

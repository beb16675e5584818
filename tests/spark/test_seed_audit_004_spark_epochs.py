"""Seed 004 audit on Spark: the per-vertex watermarks of a job in epochs.

docs/quiescence.md: "on Spark they are the values at the end of the vertex's tasks ..., and in
Spark streaming epochs those of the latest committed epoch". tests/spark/test_quiescence.py checks
a batch job only; this runs a job in epochs across a shuffle on `local[2]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.processors import collect
from jetspark.processors import map as map_p
from jetspark.runners.job import JobStatus
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

pytestmark = pytest.mark.spark


def timed_dag(gate: Gate) -> DAG:
    """source (timestamps = the item, so watermarks follow) -> shuffle -> forward -> sink."""
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=400, timestamp_fn=lambda x: x), 1)
    forward = dag.new_vertex("forward", map_p(lambda x: x), 1)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.between(source, forward).distributed().partitioned(lambda x: x % 7))
    dag.edge(Edge.between(forward, sink))
    return dag


def test_a_job_in_epochs_shows_the_watermarks_of_its_latest_committed_epoch(
    spark: Any, tmp_path: Path
) -> None:
    from jetspark.runners.spark.runner import SparkRunner

    gate = Gate(tmp_path / "gate", hold_at=200)
    config = JobConfig(
        name="timed",
        member_count=2,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=300,
        checkpoint_root=str(tmp_path / "ck"),
    )
    job = SparkRunner(spark).submit(timed_dag(gate), config)
    try:
        wait_until(
            lambda: (
                job.status is not JobStatus.RUNNING
                or (job.epochs_committed >= 1 and "input_watermark" in job.metrics().get("sink", {}))
            ),
            "a committed epoch with the sink's watermark",
        )
        assert job.status is JobStatus.RUNNING
        held = job.metrics()
        assert 0 < held["sink"]["input_watermark"] < 200  # nothing at or past the gate went out
        assert held["forward"]["upstream_watermark"] >= held["forward"]["input_watermark"]
        assert "output_watermark" in held["source"]
        gate.open()
        job.join(240)
        done = job.metrics()
        assert done["sink"]["input_watermark"] >= held["sink"]["input_watermark"]
    finally:
        gate.open()
        if not job.ended:
            job.cancel()

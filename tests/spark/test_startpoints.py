"""Startpoints on the Spark runner in epochs (seed 001), end to end: the fan-out is made at submit,
sources in Spark tasks resolve it, and it goes in the epoch after the first commit (a file that
received nothing keeps the startpoint's offset in the snapshot); one set while the job is
suspended applies when it resumes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from jetspark import processors as P
from jetspark.checkpoint.startpoints import Oldest, SourcePartition, Specific, StartpointStore, Upcoming
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.runners.job import JobStatus
from jetspark.runners.spark.runner import SparkRunner
from tests.waiting import wait_until


def append(path: Path, prefix: str, first: int, last: int) -> None:
    with path.open("a") as file:
        file.write("".join(f"{prefix}{n}\n" for n in range(first, last)))


def test_startpoints_apply_in_spark_tasks_and_go_after_the_first_commit(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    append(source / "a.log", "a", 0, 10)
    append(source / "b.log", "b", 0, 10)
    store = StartpointStore(str(tmp_path / "ck"), "tail")
    store.write(SourcePartition("lines", "a.log"), Specific(len("a0\na1\na2\na3\na4\n")))
    store.write(SourcePartition("lines", "b.log"), Upcoming())
    dag = DAG()
    lines = dag.new_vertex("lines", P.directory_stream(str(source), "*.log", poll_millis=20))
    dag.edge(Edge.between(lines, dag.new_vertex("sink", P.collect())).distributed())
    config = JobConfig(
        name="tail",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=300,
        checkpoint_root=str(tmp_path / "ck"),
    )

    def fanned_out() -> set[str]:
        return {split for splits in store.fan_outs().values() for split in splits}

    job = SparkRunner(spark, member_count=2).submit(dag, config)
    assert fanned_out() == {"a.log", "b.log"}  # made at submit
    wait_until(lambda: "a9" in job.result("sink"), timeout=120)
    # both go after a committed epoch: a.log moved, b.log received nothing and the snapshot holds
    # its resolved offset (seed 001: removed upon commit)
    wait_until(lambda: fanned_out() == set(), timeout=120)
    committed = job.epochs_committed
    wait_until(lambda: job.epochs_committed >= committed + 3, timeout=120)
    append(source / "b.log", "b", 10, 12)  # read from the startpoint's offset, kept in the snapshots
    wait_until(lambda: "b11" in job.result("sink"), timeout=120)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED
    assert Counter(job.result("sink")) == Counter([f"a{n}" for n in range(5, 10)] + ["b10", "b11"])
    store.write(SourcePartition("lines", "a.log"), Oldest())  # set while suspended: applies at resume
    job.resume()
    wait_until(lambda: "a0" in job.result("sink"), timeout=120)
    wait_until(lambda: fanned_out() == set() and Counter(job.result("sink"))["a9"] == 2, timeout=120)
    job.suspend()
    again = [f"a{n}" for n in range(10)]
    assert Counter(job.result("sink")) == Counter([f"a{n}" for n in range(5, 10)] + ["b10", "b11"] + again)

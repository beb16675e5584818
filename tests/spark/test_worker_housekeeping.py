"""The housekeeping around a stage task (`runners.spark.task_entry`) in real PySpark workers of
the installed version: the task finds its worker's TCP socket to the JVM in PySpark's frames (the
frame layout is PySpark's, so a release that changes it fails here), and a worker that keeps a
member's processors between epochs ends its tasks with its objects frozen."""

from __future__ import annotations

import functools
import gc
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.streaming_counts import expected_rows, streaming_dag
from jetspark.core import JobConfig, ProcessingGuarantee
from jetspark.processors.transactional import read_lines
from jetspark.runners.job import JobStatus
from jetspark.runners.spark import state_cache, worker_socket
from jetspark.runners.spark.runner import SparkRunner
from jetspark.runners.spark.task_entry import spark_task
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

pytestmark = pytest.mark.spark


def socket_probe(index: int, records: Iterable[Any]) -> Iterator[Any]:
    list(records)
    sock = worker_socket.jvm_socket()
    yield (
        index,
        None if sock is None else sock.family == socket.AF_UNIX,
        None if sock is None else sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY),
    )


def test_every_task_finds_its_tcp_socket_to_the_jvm_and_sends_without_delay(spark: Any) -> None:
    rdd = spark.sparkContext.parallelize(range(8), 4).mapPartitionsWithIndex(
        functools.partial(spark_task, socket_probe)
    )
    found = sorted(rdd.collect())
    assert [index for index, _, _ in found] == [0, 1, 2, 3]
    assert all(unix is False and nodelay != 0 for _, unix, nodelay in found), found


def freeze_probe(index: int, records: Iterable[Any]) -> Iterator[Any]:
    list(records)
    yield state_cache.size(), gc.get_freeze_count()


def test_a_worker_that_keeps_processors_ends_its_tasks_frozen(spark: Any, tmp_path: Path) -> None:
    """While an exactly-once job runs, a plain Spark job (not wrapped: it changes nothing) sees
    what jetspark's last task in each worker left: a worker that keeps a member's counts has its
    objects frozen (probed once per committed epoch until seen); the job's rows stay exact."""
    out = str(tmp_path / "out")
    gate = Gate(tmp_path / "gate", hold_at=3000)
    config = JobConfig(
        name="frozen",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=100,
        checkpoint_root=str(tmp_path / "ck"),
        member_count=2,
    )
    job = SparkRunner(spark).submit(streaming_dag(out, 6000, source=gated_stream(gate, count=6000)), config)
    seen: list[tuple[int, int]] = []
    try:
        wait_until(lambda: job.epochs_committed >= 3 or job.status is not JobStatus.RUNNING, timeout=180)
        for _ in range(20):
            if job.status is not JobStatus.RUNNING or any(kept > 0 and frozen > 0 for kept, frozen in seen):
                break
            epoch = job.epochs_committed
            seen.extend(
                spark.sparkContext.parallelize(range(4), 4).mapPartitionsWithIndex(freeze_probe).collect()
            )
            wait_until(
                lambda e=epoch: job.epochs_committed > e or job.status is not JobStatus.RUNNING, timeout=120
            )
    finally:
        gate.open()
        job.join(180)
    assert job.status is JobStatus.COMPLETED
    assert sorted(read_lines(out)) == expected_rows(6000)
    assert any(kept > 0 and frozen > 0 for kept, frozen in seen), seen

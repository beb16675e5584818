"""A damaged snapshot file in a job in epochs: an EXACTLY_ONCE job stops at once, naming the file,
whether the damage is found at submit (every file's checksum is checked there) or by a task while
it restores; an AT_LEAST_ONCE job falls back to the previous committed snapshot."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import attrs
import pytest

from jetspark.checkpoint import CheckpointStore, CorruptSnapshotError
from jetspark.core import ProcessingGuarantee
from jetspark.core.errors import JobFailedError
from jetspark.runners.job import JobStatus
from jetspark.runners.spark.epochs import EpochJob
from jetspark.runners.spark.runner import SparkRunner
from tests.e2e.test_snapshots import EXPECTED, counting_dag
from tests.gates import Gate
from tests.spark.test_epochs import epochs
from tests.waiting import wait_until

pytestmark = pytest.mark.spark


def flip_a_bit(root: Path, name: str) -> Path:
    """Flip one bit in the largest source file of the committed snapshot: its size stays the same.
    A source's processors are never kept in a worker between epochs (`state_cache`), so a task
    always restores them from the file: whichever worker runs it, it reads the damage."""
    manifest = CheckpointStore(str(root), name, tidy=False).latest()
    assert manifest is not None
    sources = [Path(manifest.directory) / f.name for f in manifest.files if f.vertex == "source"]
    assert sources, "the source saved no entry"
    victim = max(sources, key=lambda p: p.stat().st_size)
    data = bytearray(victim.read_bytes())
    data[len(data) - 2] ^= 0x10
    victim.write_bytes(bytes(data))
    return victim


def suspended(spark: Any, tmp_path: Path, guarantee: ProcessingGuarantee, commits: int = 1) -> EpochJob:
    """A counting job held at a gate, suspended after `commits` committed epochs."""
    gate = Gate(tmp_path / "gate", hold_at=1500)
    config = attrs.evolve(epochs(tmp_path / "ck", interval=150), processing_guarantee=guarantee)
    job = SparkRunner(spark, max_restarts=5, restart_backoff=2.0).submit(counting_dag(gate=gate), config)
    assert isinstance(job, EpochJob)
    wait_until(lambda: job.epochs_committed >= commits or job.status is not JobStatus.RUNNING, timeout=120)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED
    gate.open()
    return job


def test_a_flipped_bit_is_refused_at_submit_naming_the_file(spark: Any, tmp_path: Path) -> None:
    suspended(spark, tmp_path, ProcessingGuarantee.EXACTLY_ONCE)
    victim = flip_a_bit(tmp_path / "ck", "counting")
    with pytest.raises(CorruptSnapshotError, match="fails its SHA-256 check") as caught:
        SparkRunner(spark).submit(counting_dag(), epochs(tmp_path / "ck"))
    assert caught.value.path == str(victim)


def test_a_flipped_bit_found_by_a_task_stops_an_exactly_once_job_without_restarts(
    spark: Any, tmp_path: Path
) -> None:
    """The damage comes after submit: the tasks of the resumed job find it while they restore.
    With 5 restarts and a 2 s back-off, a job that retried would take 60 s to fail."""
    job = suspended(spark, tmp_path, ProcessingGuarantee.EXACTLY_ONCE)
    victim = flip_a_bit(tmp_path / "ck", "counting")
    started = time.monotonic()
    with pytest.raises(JobFailedError, match="does not fall back") as caught:
        job.resume().join(120)
    assert victim.name in str(caught.value)
    assert job.epochs_aborted == 0, "a damaged file is no reason to run the epoch again"
    assert time.monotonic() - started < 30
    assert isinstance(caught.value.__cause__.__cause__, CorruptSnapshotError)  # type: ignore[union-attr]


def test_an_at_least_once_job_falls_back_past_a_flipped_bit_found_by_a_task(
    spark: Any, tmp_path: Path
) -> None:
    job = suspended(spark, tmp_path, ProcessingGuarantee.AT_LEAST_ONCE, commits=2)
    store = CheckpointStore(str(tmp_path / "ck"), "counting", tidy=False)
    assert len(store.committed_ids()) >= 2
    flip_a_bit(tmp_path / "ck", "counting")
    job.resume().join(180)
    assert job.epochs_aborted == 1
    assert sorted(job.result("sink")) == EXPECTED  # the counts and the offsets fell back together

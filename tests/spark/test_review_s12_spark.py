"""Review of the session-12 changes, on Spark: a defect a review found, written as a failing test
first and fixed since (cancel of a suspended job in epochs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jetspark.checkpoint import CheckpointStore
from jetspark.core.errors import JobCancelledError
from jetspark.runners.job import JobStatus
from jetspark.runners.spark.runner import SparkRunner
from tests.e2e.test_snapshots import counting_dag
from tests.gates import Gate
from tests.spark.test_epochs import epochs
from tests.waiting import wait_until


def test_cancel_of_a_suspended_epoch_job_ends_its_join(spark: Any, tmp_path: Path) -> None:
    """join() waits through a suspension "until the job is resumed and ends, or is cancelled"
    (docs/getting-started.md); the web UI offers cancel for a suspended job. On Spark, cancel()
    of a suspended job returns at once and changes nothing (`EpochJob._ask` sees `_finished`),
    so the job stays SUSPENDED, its snapshots stay, and a join() never returns."""
    gate = Gate(tmp_path / "gate", hold_at=1500)
    job = SparkRunner(spark).submit(counting_dag(gate=gate), epochs(tmp_path / "ck", interval=150))
    store = CheckpointStore(str(tmp_path / "ck"), "counting", tidy=False)
    wait_until(lambda: store.latest_id() is not None, timeout=120)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED
    job.cancel()
    assert job.status is JobStatus.CANCELLED, "cancel() left the suspended job suspended"
    with pytest.raises(JobCancelledError):
        job.join(10)

"""Jet's `SnapshotLargeChunk_IntegrationTest` (hazelcast-jet-core,
`com.hazelcast.jet.impl.execution`), ported: a snapshot entry larger than a chunk of Jet's
snapshot writer is stored whole and restored.

Jet's `LargeStateP` saves an `int[]` of `DEFAULT_CHUNK_SIZE` (128 KiB) bytes under the key "key"
and checks it when restored; here an `array("i")` of as many bytes. Jet's snapshot goes to an
IMap in chunks; jetspark's goes to the checkpoint store under `JobConfig.checkpoint_root`, a
`.snap` file per snapshot and vertex group (docs/fault-tolerance.md): Jet's "one chunk, larger
than the chunk size" is one `.snap` file in the snapshot's directory, larger than the entry.
Jet's `job.restart()` is `suspend()` and `resume()` (jetspark's job handle has no `restart()`),
and Jet's `assertJobStatusEventually(job, RUNNING)` is the processor's first `complete()` call
(an event). Jet's job never completes; the test cancels it. Each test is named after the Jet
case it ports.

Differences: none beyond the names above.

Skipped: none.
"""

from __future__ import annotations

import array
import threading
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, JobCancelledError, JobConfig, ProcessingGuarantee
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

TIMEOUT = 60
#: Jet's `AsyncSnapshotWriterImpl.DEFAULT_CHUNK_SIZE`.
DEFAULT_CHUNK_SIZE = 128 * 1024
DAY_MILLIS = 86_400_000


class Record:
    def __init__(self) -> None:
        self.running = threading.Event()
        self.restored = threading.Event()
        self.restore_errors: list[BaseException] = []


record = Record()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global record
    record = Record()


def large_data() -> array.array[int]:
    return array.array("i", range(DEFAULT_CHUNK_SIZE // array.array("i").itemsize))


class LargeStateP(AbstractProcessor):
    """Jet's `LargeStateP`: saves a large value under "key", checks it when restored."""

    def __init__(self) -> None:
        self.data = large_data()

    def complete(self) -> bool:
        record.running.set()
        return False

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot("key", self.data)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        try:
            assert key == "key"
            assert value == self.data
        except AssertionError as error:
            record.restore_errors.append(error)
            raise
        record.restored.set()


def restarted(config: JobConfig) -> LocalJob:
    """Submit, wait until running, then Jet's `job.restart()`: suspend and resume."""
    dag = DAG()
    dag.new_vertex("src", LargeStateP, 1)
    job = LocalRunner().submit(dag, config)
    assert record.running.wait(TIMEOUT)
    job.suspend(TIMEOUT)
    record.running.clear()
    job = job.resume()
    assert record.running.wait(TIMEOUT)
    assert job.status is JobStatus.RUNNING
    assert record.restored.is_set()
    assert record.restore_errors == []
    return job


def cancel(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)


def test_SnapshotLargeChunk_IntegrationTest__test_snapshotRestoreLargeChunk(tmp_path: Path) -> None:
    config = JobConfig(
        name="large",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=DAY_MILLIS,
        checkpoint_root=str(tmp_path),
    )
    job = restarted(config)
    try:
        snapshot = job.committed_snapshot()
        assert snapshot is not None
        assert snapshot.entries("src") == [("key", large_data())]
        files = sorted((tmp_path / "large" / "snapshots").glob("*/*.snap"))
        assert len(files) == 1, files
        assert files[0].stat().st_size > DEFAULT_CHUNK_SIZE
    finally:
        cancel(job)


def test_SnapshotLargeChunk_IntegrationTest__test_snapshotRestoreLargeChunk__inMemory() -> None:
    """The same without a checkpoint root: the local runner keeps the snapshot in memory."""
    config = JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=DAY_MILLIS
    )
    job = restarted(config)
    try:
        snapshot = job.committed_snapshot()
        assert snapshot is not None
        assert snapshot.entries("src") == [("key", large_data())]
    finally:
        cancel(job)

"""Jet's `SnapshotFailureTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

Jet makes every snapshot fail to be stored (a `MapStore` on the snapshot data maps that throws)
and checks that the job still completes with the right output. jetspark's local runner stores
snapshots in its checkpoint store (`JobConfig.checkpoint_root`, any fsspec URL); here the root is
a file system (an in-memory one) on which writing any file of a snapshot raises `OSError`, while
the job's record and other files are written. The local runner logs such a snapshot as "could not
be stored; it does not count" and goes on (`LocalJob._on_phase1_complete`).

Jet's generator (`SequencesInPartitionsGeneratorP`, 2 partitions of 10 elements, throttled to 2
items a second so that the 100 ms snapshots fall in the middle) emits `(partition, offset)` items
to a map sink that keeps the last offset per partition. Here the generator emits the first half
of each sequence, then waits (its `complete()` returns False) until a snapshot has failed to be
stored, then emits the rest: the failure falls in the middle without a clock. Jet's map sink is
`processors.collect()`, and the map is the items collected, the last per partition. Jet's
`peekOutputP` only logs. As Jet's, the job runs on 2 members with local parallelism 1. The test is
named after the Jet case it ports; `..._notCounted` checks what the local runner does with the
failed snapshots.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any, ClassVar

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from jetspark import (
    DAG,
    AbstractProcessor,
    BroadcastKey,
    Edge,
    JobConfig,
    ProcessingGuarantee,
    ProcessorContext,
)
from jetspark.processors import collect
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

NODE_COUNT = 2
NUM_PARTITIONS = 2
NUM_ELEMENTS = 10
TIMEOUT = 60
PROTOCOL = "jetspark-failing-snapshots"

store_failed = threading.Event()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global store_failed
    store_failed = threading.Event()


class FailingSnapshotFileSystem(MemoryFileSystem):
    """An in-memory file system (its own) on which every file of a snapshot (its entries, its
    manifest) fails to be written."""

    protocol = PROTOCOL
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]

    def pipe_file(self, path: str, value: bytes, *args: Any, **kwargs: Any) -> None:
        if "/snapshots/" in path:
            store_failed.set()
            raise OSError(f"{path}: this file system fails snapshot files")
        super().pipe_file(path, value, *args, **kwargs)


fsspec.register_implementation(PROTOCOL, FailingSnapshotFileSystem, clobber=True)


class SequencesInPartitionsP(AbstractProcessor):
    """Emits `(partition, offset)` for offsets 0 .. NUM_ELEMENTS-1 of each partition it owns
    (`partition % total parallelism == global index`), round robin; saves its offsets."""

    def init_processor(self, context: ProcessorContext) -> None:
        total, index = context.total_parallelism, context.global_processor_index
        self.offsets = {p: 0 for p in range(NUM_PARTITIONS) if p % total == index}
        assert self.offsets, "no assigned partitions"

    def complete(self) -> bool:
        while True:
            partition = min(self.offsets, key=self.offsets.__getitem__)
            offset = self.offsets[partition]
            if offset == NUM_ELEMENTS:
                return True
            if offset == NUM_ELEMENTS // 2 and not store_failed.is_set():
                return False  # the second half waits for a snapshot that could not be stored
            if not self.try_emit((partition, offset)):
                return False
            self.offsets[partition] = offset + 1

    def save_to_snapshot(self) -> bool:
        snapshot = self.offsets.items()
        return all(self.try_emit_to_snapshot(BroadcastKey(p), offset) for p, offset in snapshot)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        raise AssertionError("no snapshot was stored: nothing can be restored")


def run_job() -> LocalJob:
    dag = DAG()
    generator = dag.new_vertex("generator", SequencesInPartitionsP, 1)
    write_map = dag.new_vertex("writeMap", collect(), 1)
    dag.edge(Edge.between(generator, write_map))
    config = JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=1,
        checkpoint_root=f"{PROTOCOL}://{uuid.uuid4().hex}",
    )
    return LocalRunner(NODE_COUNT).submit(dag, config).join(TIMEOUT)


def test_SnapshotFailureTest__when_snapshotFails_then_jobShouldNotFail() -> None:
    job = run_job()
    items = job.result("writeMap")
    results = dict(items)  # Jet's map: the last offset per partition
    assert len(results) == NUM_PARTITIONS, "numPartitions"
    assert results[0] == NUM_ELEMENTS - 1, "offset partition 0"
    assert results[1] == NUM_ELEMENTS - 1, "offset partition 1"
    assert store_failed.is_set(), "no failure occurred in store"
    for partition in range(NUM_PARTITIONS):  # nothing replayed or lost either
        assert [o for p, o in items if p == partition] == list(range(NUM_ELEMENTS))


def test_SnapshotFailureTest__when_snapshotFails_then_jobShouldNotFail__notCounted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """jetspark's side: a snapshot that could not be stored is logged and does not count (the
    job has no snapshot, its store no committed one)."""
    with caplog.at_level(logging.ERROR, logger="jetspark.job"):
        job = run_job()
    assert job.status is JobStatus.COMPLETED
    assert store_failed.is_set()
    assert "could not be stored; it does not count" in caplog.text
    assert job.snapshot_count == 0
    assert job.last_snapshot is None
    assert job.snapshots() == []

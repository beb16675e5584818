"""The coordinator's commit of sinks' transactions right after a snapshot is committed.

On Spark in epochs a sink's processors learn that snapshot `e` was committed only when they
restore it, in epoch `e + 1`'s stage of the sink: after that epoch's whole source span. For a
vertex whose meta supplier gives a `SnapshotCommitter` (the transactional sinks whose transactions
can be committed from any process, `processors.transactional`), the driver commits them itself,
right after it moved `LATEST` and before the next epoch starts, so output is visible one epoch
sooner.

This is an early copy of the restore's commit, never the only one, so nothing here may fail the
job: the restore commits exactly the same transactions (idempotently, skipping those committed
already). A committer that cannot be built or fails is closed and logged, and the driver tries
again only after a back-off of epochs (1, 2, 4, ... up to `MAX_SKIP`), so an unreachable system
does not slow every epoch; meanwhile the restores commit, as without a committer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jetspark.core.suppliers import ProcessorMetaSupplier, SnapshotCommitter
from jetspark.engine.snapshot import decode_entries
from jetspark.runners.snapshot_io import read_snapshot

if TYPE_CHECKING:
    from jetspark.checkpoint import CheckpointStore, Manifest

_log = logging.getLogger("jetspark.sink_commits")
#: The most epochs a failed committer waits before the driver tries it again.
MAX_SKIP = 64


class _Slot:
    """One vertex's committer, built when first needed, and its back-off after failures."""

    def __init__(self) -> None:
        self.committer: SnapshotCommitter | None = None
        #: The meta supplier said it has no committer (or cannot reach the system): never ask again.
        self.never = False
        self.failures = 0
        self.skip = 0


class SinkCommits:
    """The committers of a job's vertices (`ProcessorMetaSupplier.snapshot_committer`), asked
    lazily: `commit` after each committed snapshot, `close` when the job ends."""

    def __init__(
        self, job_id: str, vertices: list[str], meta_supplier: Callable[[str], ProcessorMetaSupplier]
    ) -> None:
        self.job_id = job_id
        self._meta_supplier = meta_supplier
        self._slots = {vertex: _Slot() for vertex in vertices}
        #: Per vertex: transactions committed by the driver, and the driver's failures (tests, logs).
        self.committed: dict[str, int] = {}
        self.failed: dict[str, int] = {}
        #: Seconds the last `commit` took (read, connect, commit), for the epoch's figures.
        self.last_seconds = 0.0

    def commit(self, store: CheckpointStore, manifest: Manifest, partition_count: int) -> None:
        """Commit, vertex by vertex, what the processors will commit when they restore
        `manifest`'s snapshot. Never raises: a failure leaves it to the restore."""
        started = time.monotonic()
        present = manifest.vertices()
        for vertex, slot in self._slots.items():
            if slot.never or vertex not in present:
                continue
            if slot.skip:
                slot.skip -= 1
                continue
            try:
                committer = self._committer(vertex, slot)
                if committer is None:
                    continue
                entries = _vertex_entries(store, manifest, partition_count, vertex)
                self.committed[vertex] = self.committed.get(vertex, 0) + committer.commit(entries)
                slot.failures = 0
            except Exception as failure:
                self._failed(vertex, slot, manifest.snapshot_id, failure)
        self.last_seconds = time.monotonic() - started

    def discard_pending(
        self, store: CheckpointStore, manifest: Manifest | None, partition_count: int
    ) -> None:
        """A cancelled job, whose tasks have ended: vertex by vertex, commit what its last committed
        snapshot (`manifest`, None if it committed none) names once more, then roll back every other
        transaction its processors left pending (`SnapshotCommitter.discard_pending`), since no
        later run of the job will. A vertex whose commit fails keeps its pending transactions. Never
        raises: a failure is logged with what is left and where."""
        present = manifest.vertices() if manifest is not None else set()
        for vertex, slot in self._slots.items():
            if slot.never:
                continue
            try:
                committer = self._committer(vertex, slot)
                if committer is None:
                    continue
                if manifest is not None and vertex in present:
                    committer.commit(_vertex_entries(store, manifest, partition_count, vertex))
                discarded = committer.discard_pending()
            except Exception as failure:
                _log.warning(
                    "job %s: vertex %r: rolling back the cancelled job's pending transactions failed "
                    "(%s: %s); they stay prepared in the sink's system under the prefix %s-",
                    self.job_id,
                    vertex,
                    type(failure).__name__,
                    failure,
                    self.job_id,
                )
                self._drop(vertex, slot)
                continue
            if discarded:
                _log.info(
                    "job %s: vertex %r: rolled back %d transaction(s) left pending",
                    self.job_id,
                    vertex,
                    discarded,
                )

    def close(self) -> None:
        for vertex, slot in self._slots.items():
            self._drop(vertex, slot)

    def _committer(self, vertex: str, slot: _Slot) -> SnapshotCommitter | None:
        if slot.committer is None:
            slot.committer = self._meta_supplier(vertex).snapshot_committer(self.job_id, vertex)
            if slot.committer is None:
                slot.never = True
        return slot.committer

    def _failed(self, vertex: str, slot: _Slot, snapshot_id: int, failure: Exception) -> None:
        self.failed[vertex] = self.failed.get(vertex, 0) + 1
        slot.failures += 1
        slot.skip = min(2 ** (slot.failures - 1), MAX_SKIP)
        _log.warning(
            "job %s: vertex %r: the driver's commit of snapshot %d's transactions failed (%s: %s); "
            "the sink's processors commit them when they restore it; next try in %d epochs",
            self.job_id,
            vertex,
            snapshot_id,
            type(failure).__name__,
            failure,
            slot.skip,
        )
        self._drop(vertex, slot)

    def _drop(self, vertex: str, slot: _Slot) -> None:
        committer, slot.committer = slot.committer, None
        if committer is not None:
            try:
                committer.close()
            except Exception:
                _log.debug("vertex %r: closing its driver-side committer failed", vertex, exc_info=True)


def _vertex_entries(
    store: CheckpointStore, manifest: Manifest, partition_count: int, vertex: str
) -> list[tuple[Any, Any]]:
    """The (key, value) entries `vertex`'s processors saved in `manifest`'s snapshot."""
    snapshot = read_snapshot(store, manifest, partition_count, (vertex,))
    return decode_entries(snapshot.data.get(vertex, []))

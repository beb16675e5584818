"""Between the engine's snapshots and the checkpoint store: save, export and load `SnapshotData`.

The engine hands over entries already serialized with their partitions (`SnapshotEntry`); the
store writes them grouped by partition. Loading gives `SnapshotData` back; a snapshot taken with
another partition count has its keys' partitions computed again.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from jetspark.checkpoint import CheckpointStore, Manifest
from jetspark.checkpoint.store import SnapshotFile
from jetspark.engine.snapshot import (
    BROADCAST_PARTITION,
    Snapshot,
    SnapshotData,
    SnapshotEntry,
    entry_partition,
)
from jetspark.planning.plan import ExecutionPlan


def write_files(
    store: CheckpointStore, snapshot_id: int, data: SnapshotData, writer: str
) -> list[SnapshotFile]:
    """One file per vertex from `writer` (one member, or "all" in the local runner)."""
    files = []
    for index, vertex in enumerate(sorted(data)):
        files.append(store.write_file(snapshot_id, vertex, f"v{index:04d}-{writer}", data[vertex]))
    return files


def save(
    store: CheckpointStore, snapshot_id: int, data: SnapshotData, partition_count: int, extra: dict[str, Any]
) -> Manifest:
    """Write and commit; on failure delete what was written, and re-raise."""
    try:
        files = write_files(store, snapshot_id, data, "all")
        return store.commit(snapshot_id, files, partition_count, extra)
    except BaseException:
        store.abort(snapshot_id)
        raise


def export(
    store: CheckpointStore, snapshot_id: int, data: SnapshotData, partition_count: int, name: str
) -> Manifest:
    """Write a snapshot that is not a commit point (`export_snapshot` without prepare/commit)
    straight to the exported name."""
    try:
        files = write_files(store, snapshot_id, data, "all")
        manifest = store.write_manifest(
            store.snapshot_dir(snapshot_id), snapshot_id, files, partition_count, {}
        )
        return store.export(manifest, name)
    finally:
        store.abort(snapshot_id)


def load(
    store: CheckpointStore,
    manifest: Manifest,
    partition_count: int,
    vertices: Collection[str] | None = None,
) -> Snapshot:
    """Every entry of the snapshot (of `vertices` only, if given), checked while read."""
    data: SnapshotData = {}
    for vertex in sorted(manifest.vertices()):
        if vertices is not None and vertex not in vertices:
            continue
        entries = [SnapshotEntry._make(raw) for raw in store.read(manifest, vertex)]
        if manifest.partition_count != partition_count:
            entries = [_repartitioned(entry, partition_count) for entry in entries]
        data[vertex] = entries
    return Snapshot(manifest.snapshot_id, data, manifest.extra.get("exported_name"), dict(manifest.extra))


def load_shares(
    store: CheckpointStore, manifest: Manifest, plan: ExecutionPlan, vertices: Collection[str], member: int
) -> SnapshotData:
    """The entries member `member`'s processors of `vertices` restore: the partitions they own and
    the broadcast entries, read without the rest of the file (a snapshot taken with another
    partition count is read whole and its keys' partitions computed again)."""
    partition_count = plan.arrangement.partition_count
    if manifest.partition_count != partition_count:
        return load(store, manifest, partition_count, vertices).data
    data: SnapshotData = {}
    present = manifest.vertices()
    for vertex in vertices:
        if vertex not in present:
            continue
        lp = plan.vertices[vertex].local_parallelism
        owned = {BROADCAST_PARTITION}
        for index in range(lp):
            owned.update(plan.arrangement.processor_partitions(member, index, lp))
        data[vertex] = [SnapshotEntry._make(raw) for raw in store.read(manifest, vertex, owned)]
    return data


def _repartitioned(entry: SnapshotEntry, partition_count: int) -> SnapshotEntry:
    if entry.partition < 0:
        return entry
    key, _ = entry.decode()
    return entry._replace(partition=entry_partition(key, partition_count))

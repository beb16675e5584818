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
from jetspark.planning.partitions import PartitionArrangement
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
    store: CheckpointStore,
    manifest: Manifest,
    plan: ExecutionPlan,
    vertices: Collection[str],
    member: int,
    completed: Collection[tuple[str, int]] = (),
) -> SnapshotData:
    """The entries member `member`'s processors of `vertices` restore: the partitions they own and
    the broadcast entries, read without the rest of the file (a snapshot taken with another
    partition count is read whole and its keys' partitions computed again).

    `completed` names processors (vertex, global index) that completed in an earlier epoch. The
    entries their partitions hold (saved by live processors, such as a source's slices that a
    restore once handed to it) are adopted by a live processor of the vertex, chosen the same way
    in every task (`adopters`), and re-addressed to one of its partitions so that it restores them.
    """
    partition_count = plan.arrangement.partition_count
    whole = manifest.partition_count != partition_count
    everything = load(store, manifest, partition_count, vertices).data if whole else {}
    data: SnapshotData = {}
    present = manifest.vertices()
    arrangement = plan.arrangement
    for vertex in vertices:
        if vertex not in present:
            continue
        lp = plan.vertices[vertex].local_parallelism
        adopted = adopters(vertex, lp * plan.member_count, completed)
        wanted = {BROADCAST_PARTITION}
        for index in range(lp):
            wanted.update(arrangement.processor_partitions(member, index, lp))
        mine = range(member * lp, (member + 1) * lp)
        for orphan, adopter in adopted.items():
            if adopter in mine:
                wanted.update(arrangement.processor_partitions(orphan // lp, orphan % lp, lp))
        if whole:
            entries = [e for e in everything.get(vertex, ()) if e.partition in wanted]
        else:
            entries = [SnapshotEntry._make(raw) for raw in store.read(manifest, vertex, wanted)]
        if adopted:
            entries = [_readdressed(e, adopted, arrangement, lp) for e in entries]
        data[vertex] = entries
    return data


def adopters(vertex: str, total: int, completed: Collection[tuple[str, int]]) -> dict[int, int]:
    """For each completed processor of `vertex`: the live processor that adopts its entries."""
    done = sorted(index for name, index in completed if name == vertex)
    live = [index for index in range(total) if index not in set(done)]
    if not live:
        return {}
    return {orphan: live[orphan % len(live)] for orphan in done}


def _readdressed(
    entry: SnapshotEntry, adopted: dict[int, int], arrangement: PartitionArrangement, lp: int
) -> SnapshotEntry:
    if entry.partition < 0:
        return entry
    adopter = adopted.get(arrangement.global_owner(entry.partition, lp))
    if adopter is None:
        return entry
    return entry._replace(partition=arrangement.processor_partitions(adopter // lp, adopter % lp, lp)[0])


def _repartitioned(entry: SnapshotEntry, partition_count: int) -> SnapshotEntry:
    if entry.partition < 0:
        return entry
    key, _ = entry.decode()
    return entry._replace(partition=entry_partition(key, partition_count))

"""Snapshot I/O: the one place that names, writes and reads snapshot files of the checkpoint
store, and decides which entries each processor restores. The local runner, the Spark epoch
driver and the epoch tasks all go through it.

**Ownership.** `restorer` says which processor restores an entry: the owner of the entry's key
partition under the plan (`PartitionArrangement.global_owner`), or every processor for the
broadcast partition. `restored_partitions` is the same rule read the other way (the partitions
some processors restore), so routing entries in memory (`runners.wiring`), reading a member's
share from a file, and checking that a member's file holds only its own partitions agree.

**Names.** A snapshot has one file per vertex per writer, named `v<vertex>-<writer>.snap`
(`FileName`): `<vertex>` is the vertex's position in the plan (names of vertices may be anything,
file names may not), `<writer>` is `all` for the local runner (every member's entries in one
file) or `m<member>-a<attempt>` for one Spark task attempt (unique per attempt, so a retried task
never overwrites a file the first attempt wrote). A file's vertex and member are read back from
its name (`FileName.parse`) only to find a member's own file of the committed snapshot; what a
restore reads is named by the manifest, so files written under older names restore too.

**Writing** (`write_file`, `commit_snapshot`, `export_snapshot`, `commit_reported`) and
**reading** (`read_snapshot`: everything; `read_shares`: one member's share). A snapshot taken
with another partition count is read whole and its keys' partitions computed again.

This module imports no fsspec (the checkpoint store needs it; executors of batch jobs have not
got it): the store comes in as an argument.
"""

from __future__ import annotations

import functools
import itertools
import logging
import operator
import re
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from jetspark.core.context import adopting_processor
from jetspark.engine.gc_pause import gc_paused
from jetspark.engine.snapshot import (
    BROADCAST_PARTITION,
    Snapshot,
    SnapshotData,
    SnapshotEntry,
    repartitioned,
)
from jetspark.planning.partitions import PartitionArrangement

if TYPE_CHECKING:
    from jetspark.checkpoint import CheckpointStore, Manifest
    from jetspark.checkpoint.store import SnapshotFile
    from jetspark.planning.plan import ExecutionPlan

_log = logging.getLogger("jetspark.snapshots")
_PARTITION = operator.itemgetter(0)
#: A read entry as a `SnapshotEntry`, without the Python-level `_make` per entry.
_as_entry = functools.partial(tuple.__new__, SnapshotEntry)

#: An incremental file's chain (`checkpoint.deltas`): (snapshot id, file), oldest first.
Chain = tuple[tuple[int, "SnapshotFile"], ...]

# ---- ownership -------------------------------------------------------------------------------


def restorer(partition: int, arrangement: PartitionArrangement, local_parallelism: int) -> int | None:
    """The global index of the processor that restores the entries of `partition` (a vertex of
    `local_parallelism` processors per member), or None for the broadcast partition: every
    processor restores those."""
    if partition == BROADCAST_PARTITION:
        return None
    return arrangement.global_owner(partition, local_parallelism)


def route_entries(
    entries: Iterable[SnapshotEntry], arrangement: PartitionArrangement, local_parallelism: int
) -> tuple[dict[int, list[SnapshotEntry]], list[SnapshotEntry]]:
    """`entries` split by `restorer`: the keyed ones per restoring processor (global index), and
    the broadcast ones (for every processor). Partitions are those of `arrangement`."""
    owners = _owners(arrangement, local_parallelism)
    keyed: dict[int, list[SnapshotEntry]] = {}
    broadcast: list[SnapshotEntry] = []
    # A run of one partition at a time (a file's segments hold one each): a Python step per
    # run, not per entry.
    for partition, run in itertools.groupby(entries, key=_PARTITION):
        if partition == BROADCAST_PARTITION:
            broadcast.extend(run)
        else:
            keyed.setdefault(owners[partition], []).extend(run)
    return keyed, broadcast


@functools.lru_cache(maxsize=256)
def _owners(arrangement: PartitionArrangement, lp: int) -> tuple[int, ...]:
    """`restorer` of every key partition, looked up by index on the restore path."""
    owners = []
    for partition in range(arrangement.partition_count):
        owner = restorer(partition, arrangement, lp)
        assert owner is not None, "only the broadcast partition is everyone's"
        owners.append(owner)
    return tuple(owners)


def member_processors(member: int, local_parallelism: int) -> range:
    """The global indexes of `member`'s processors of a vertex."""
    return range(member * local_parallelism, (member + 1) * local_parallelism)


def restored_partitions(
    arrangement: PartitionArrangement, local_parallelism: int, processors: Iterable[int]
) -> frozenset[int]:
    """The key partitions whose entries `processors` (global indexes) restore, by `restorer`; the
    broadcast partition is not among them."""
    return _restored(arrangement, local_parallelism, frozenset(processors))


@functools.lru_cache(maxsize=1024)
def _restored(arrangement: PartitionArrangement, lp: int, processors: frozenset[int]) -> frozenset[int]:
    return frozenset(
        p for p in range(arrangement.partition_count) if restorer(p, arrangement, lp) in processors
    )


def member_partitions(arrangement: PartitionArrangement, member: int) -> frozenset[int]:
    """The key partitions whose entries `member`'s processors restore, whatever their number."""
    return restored_partitions(arrangement, 1, (member,))


# ---- names -----------------------------------------------------------------------------------

_NAME = re.compile(r"v(\d+)-(?:all|m(\d+)-a(\d+))(?:\.snap)?")


@attrs.frozen
class FileName:
    """The name of one snapshot file (without `.snap`, which the store adds)."""

    #: The vertex's position among the plan's vertices.
    vertex_index: int
    #: The member whose entries the file holds; None: every member's (the local runner).
    member: int | None = None
    #: The Spark task attempt that wrote it (0 for the local runner).
    attempt: int = 0

    @classmethod
    def of(
        cls, vertices: Sequence[str], vertex: str, member: int | None = None, attempt: int = 0
    ) -> FileName:
        """The name of `vertex`'s file (`vertices`: the plan's, in order) from one writer."""
        try:
            index = list(vertices).index(vertex)
        except ValueError:
            raise ValueError(
                f"vertex {vertex!r} saved snapshot entries but is not in the job's plan"
            ) from None
        return cls(index, member, attempt)

    @classmethod
    def parse(cls, name: str) -> FileName | None:
        """The name read back; None for a name this scheme did not make."""
        match = _NAME.fullmatch(name)
        if match is None:
            return None
        vertex, member, attempt = match.groups()
        if member is None:
            return cls(int(vertex))
        return cls(int(vertex), int(member), int(attempt))

    def __str__(self) -> str:
        if self.member is None:
            return f"v{self.vertex_index:04d}-all"
        return f"v{self.vertex_index:04d}-m{self.member:05d}-a{self.attempt}"

    def same_writer(self, name: str) -> bool:
        """`name` is a file of the same vertex from the same member (any attempt of it)."""
        other = FileName.parse(name)
        return (
            other is not None
            and self.member is not None
            and (other.vertex_index, other.member) == (self.vertex_index, self.member)
        )


def member_files(manifest: Manifest, vertex: str, name: FileName) -> list[SnapshotFile]:
    """The files of `vertex` in `manifest` written by the member `name` names."""
    return [f for f in manifest.files if f.vertex == vertex and name.same_writer(f.name)]


def holds_only_its_writers_partitions(
    manifest: Manifest, vertex: str, arrangement: PartitionArrangement, broadcast: bool = False
) -> bool:
    """Every file of `vertex` (chains too) holds only entries of partitions its writer member
    restores, none broadcast: then a member's restore reads its own file and nothing else. With
    `broadcast`, broadcast entries are allowed too: a delta applies on its file's keyed entries
    and writes all the broadcast ones again (`deltas.merge`), but a kept processor would miss the
    other members' broadcast entries a restore gives it."""
    for file in manifest.files:
        if file.vertex != vertex:
            continue
        name = FileName.parse(file.name)
        if name is None or name.member is None:
            return False
        owned = set(member_partitions(arrangement, name.member))
        if broadcast:
            owned.add(BROADCAST_PARTITION)
        for one in (file, *(f for _, f in file.chain)):
            if any(segment.partition not in owned for segment in one.segments):
                return False
    return True


# ---- writing ---------------------------------------------------------------------------------


def write_file(
    store: CheckpointStore,
    snapshot_id: int,
    vertex: str,
    name: FileName,
    entries: Iterable[SnapshotEntry],
    chain: Chain = (),
) -> SnapshotFile:
    """Write one file of snapshot `snapshot_id`: `vertex`'s entries from one writer; with
    `chain`, only what changed since those files (`checkpoint.deltas`)."""
    return store.write_file(snapshot_id, vertex, str(name), entries, chain)


def _write_all(
    store: CheckpointStore, snapshot_id: int, data: SnapshotData, vertices: Sequence[str]
) -> list[SnapshotFile]:
    """One file per vertex of every member's entries (the local runner)."""
    return [
        write_file(store, snapshot_id, vertex, FileName.of(vertices, vertex), data[vertex])
        for vertex in sorted(data)
    ]


def commit_snapshot(
    store: CheckpointStore,
    snapshot_id: int,
    data: SnapshotData,
    vertices: Sequence[str],
    partition_count: int,
    extra: dict[str, Any],
) -> Manifest:
    """Write every vertex's entries and commit them; on failure delete what was written, and
    re-raise. `vertices`: the plan's, in order (they name the files)."""
    try:
        return store.commit(
            snapshot_id, _write_all(store, snapshot_id, data, vertices), partition_count, extra
        )
    except BaseException:
        store.abort(snapshot_id)
        raise


def export_snapshot(
    store: CheckpointStore,
    snapshot_id: int,
    data: SnapshotData,
    vertices: Sequence[str],
    partition_count: int,
    name: str,
) -> Manifest:
    """Write a snapshot that is not a commit point (`export_snapshot` without prepare/commit)
    straight to the exported `name`."""
    try:
        files = _write_all(store, snapshot_id, data, vertices)
        manifest = store.write_manifest(
            store.snapshot_dir(snapshot_id), snapshot_id, files, partition_count, {}
        )
        return store.export(manifest, name)
    finally:
        store.abort(snapshot_id)


def commit_reported(
    store: CheckpointStore,
    snapshot_id: int,
    reported: Iterable[dict[str, Any]],
    partition_count: int,
    extra: dict[str, Any],
) -> Manifest:
    """Commit the files tasks wrote and reported (`SnapshotFile.to_json`), and only those.

    A commit that raises after `LATEST` was replaced (the directory's fsync that follows the
    rename) has committed: the snapshot's manifest is returned then (with the error logged), so
    that the caller does not take a committed epoch for an aborted one."""
    from jetspark.checkpoint.store import SnapshotFile

    try:
        return store.commit(
            snapshot_id, [SnapshotFile.from_json(f) for f in reported], partition_count, extra
        )
    except Exception as failure:
        try:
            moved = store.latest_id() == snapshot_id
            manifest = store.load_manifest(store.snapshot_dir(snapshot_id)) if moved else None
        except Exception:
            manifest = None
        if manifest is None:
            raise  # LATEST did not move: not committed
        _log.error(
            "snapshot %d of job %r: its commit raised after LATEST named it (%s: %s); it counts as committed",
            snapshot_id,
            store.job,
            type(failure).__name__,
            failure,
        )
        return manifest


# ---- reading ---------------------------------------------------------------------------------


def _entries(
    store: CheckpointStore,
    manifest: Manifest,
    vertex: str,
    partition_count: int,
    wanted: frozenset[int] | None,
) -> list[SnapshotEntry]:
    """`vertex`'s entries of the partitions `wanted` (None: all), checked as they are read, each
    with its key's partition under `partition_count`."""
    if manifest.partition_count == partition_count:
        with gc_paused():
            return list(map(_as_entry, store.read(manifest, vertex, wanted)))
    entries = [
        new for raw in store.read(manifest, vertex) for new in repartitioned(_as_entry(raw), partition_count)
    ]
    return entries if wanted is None else [e for e in entries if e.partition in wanted]


#: (job name, snapshot id) whose dropped state was warned about, in this process.
_warned_dropped: set[tuple[str, int]] = set()


def warn_of_dropped_state(job: str, manifest: Manifest, vertices: Collection[str]) -> list[str]:
    """The vertices whose state the snapshot a job restores holds but whose DAG has them no more
    (renamed or removed): nothing reads that state, so it is dropped. As in Jet that is what an
    upgrade that removes a stage wants; after a rename it silently restarts a count from zero,
    so one warning names them (once per job and snapshot in this process)."""
    dropped = sorted(set(manifest.vertices()) - set(vertices))
    if dropped and (job, manifest.snapshot_id) not in _warned_dropped:
        _warned_dropped.add((job, manifest.snapshot_id))
        _log.warning(
            "job %r: snapshot %d holds the state of %s, which this DAG has no more: that state is "
            "dropped (a renamed vertex starts empty; keep the vertex's name to keep its state)",
            job,
            manifest.snapshot_id,
            ", ".join(f"vertex {name!r}" for name in dropped),
        )
    return dropped


def read_snapshot(
    store: CheckpointStore,
    manifest: Manifest,
    partition_count: int,
    vertices: Collection[str] | None = None,
) -> Snapshot:
    """Every entry of the snapshot (of `vertices` only, if given), checked while read."""
    data: SnapshotData = {}
    for vertex in sorted(manifest.vertices()):
        if vertices is None or vertex in vertices:
            data[vertex] = _entries(store, manifest, vertex, partition_count, None)
    return Snapshot(manifest.snapshot_id, data, manifest.extra.get("exported_name"), dict(manifest.extra))


def read_shares(
    store: CheckpointStore,
    manifest: Manifest,
    plan: ExecutionPlan,
    vertices: Collection[str],
    member: int,
    completed: Collection[tuple[str, int]] = (),
) -> SnapshotData:
    """The entries member `member`'s processors of `vertices` restore: the partitions they
    restore (`restored_partitions`) and the broadcast entries, read without the rest of the file.

    `completed` names processors (vertex, global index) that completed in an earlier epoch. The
    entries their partitions hold (saved by live processors, such as a source's slices that a
    restore once handed to it) are adopted by a live processor of the vertex, chosen the same way
    in every task (`adopters`), and re-addressed to one of its partitions so that it restores them.
    """
    arrangement = plan.arrangement
    data: SnapshotData = {}
    present = manifest.vertices()
    for vertex in vertices:
        if vertex not in present:
            continue
        vp = plan.vertices[vertex]
        lp = vp.local_parallelism
        # members that run no processor of the vertex (FirstMemberOnly): their share is adopted too
        absent = [
            (vertex, m * lp + i) for m in range(plan.member_count) if m not in vp.members() for i in range(lp)
        ]
        adopted = adopters(vertex, lp * plan.member_count, [*completed, *absent])
        mine = member_processors(member, lp)
        whose = {*mine, *(orphan for orphan, adopter in adopted.items() if adopter in mine)}
        wanted = restored_partitions(arrangement, lp, whose) | {BROADCAST_PARTITION}
        entries = _entries(store, manifest, vertex, arrangement.partition_count, wanted)
        if adopted:
            entries = [_readdressed(e, adopted, arrangement, lp) for e in entries]
        data[vertex] = entries
    return data


def adopters(vertex: str, total: int, completed: Collection[tuple[str, int]]) -> dict[int, int]:
    """For each completed processor of `vertex`: the live processor that adopts its entries."""
    done = sorted({index for name, index in completed if name == vertex})
    live = [index for index in range(total) if index not in set(done)]
    if not live:
        return {}
    return {orphan: adopting_processor(orphan, live) for orphan in done}


def _readdressed(
    entry: SnapshotEntry, adopted: dict[int, int], arrangement: PartitionArrangement, lp: int
) -> SnapshotEntry:
    owner = restorer(entry.partition, arrangement, lp)
    adopter = None if owner is None else adopted.get(owner)
    if adopter is None:
        return entry
    return entry._replace(partition=min(restored_partitions(arrangement, lp, (adopter,))))

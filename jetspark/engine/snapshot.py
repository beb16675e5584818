"""Snapshot coordination shared by the tasklets of one execution, and the in-memory snapshot.

Phase 1 of snapshot N is requested by `start`; source tasklets see it and take their snapshot,
other tasklets take theirs when the barrier has arrived on all inputs. Each tasklet reports with
`phase1_done`; a tasklet that ends first reports with `tasklet_done`, so it is not waited for.
When every expected tasklet reported, the `on_phase1_complete` callback decides success (the
coordinator stores the snapshot) and phase 2 is requested; tasklets that took part call
`snapshot_commit_finish(success)` and report with `phase2_done`.
"""

from __future__ import annotations

import operator
import pickle
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import attrs

from jetspark.core.errors import ProcessorContractError
from jetspark.core.partitioner import default_partitioner
from jetspark.core.snapshot_block import any_blocks, block_key, block_pairs, block_value, is_block
from jetspark.core.watermark import BroadcastKey
from jetspark.engine.gc_pause import gc_paused

#: The partition of an entry whose key is a `BroadcastKey`: restored by every processor.
BROADCAST_PARTITION = -1


class SnapshotEntry(NamedTuple):
    """One saved key/value pair, serialized when it was offered (Jet: the processor may mutate
    both as soon as `offer_to_snapshot` returns). `partition` is the key's partition, computed then
    too, so a key that cannot be routed is refused at offer time, not found at restore."""

    partition: int
    key: bytes
    value: bytes

    def decode(self) -> tuple[Any, Any]:
        """Fresh objects for the restoring processor (of an entry that is not a block)."""
        if is_block(self.key):
            raise ValueError("a block of snapshot entries decodes to many: use decode_entries")
        return pickle.loads(self.key), pickle.loads(self.value)


def entry_partition(key: Any, partition_count: int) -> int:
    """The partition a restore routes `key` by; raises TypeError for a key that cannot be routed."""
    return BROADCAST_PARTITION if isinstance(key, BroadcastKey) else default_partitioner(key, partition_count)


#: The value bytes of a deletion in an incremental snapshot (a pickle is never empty).
DELETED = b""


def changed_keys(processor: Any) -> set[Any]:
    """The processor's optional `changed_snapshot_keys()`: the snapshot keys whose entries it
    changed or removed since its last `save_to_snapshot` (or its restore), as a set."""
    keys = processor.changed_snapshot_keys()
    if keys is None or isinstance(keys, (str, bytes)):
        raise ProcessorContractError(
            f"{type(processor).__name__}.changed_snapshot_keys() returned {keys!r}: it must return "
            "a collection of the snapshot keys that changed or were removed since the last save"
        )
    return set(keys)


def saves_incrementally(processor: Any) -> bool:
    """Whether the processor names the keys that changed (`changed_snapshot_keys`)."""
    return callable(getattr(processor, "changed_snapshot_keys", None))


def encode_entry(key: Any, value: Any, partition: int) -> SnapshotEntry:
    """Serialize one entry (raises pickle's error)."""
    protocol = pickle.HIGHEST_PROTOCOL
    return SnapshotEntry(partition, pickle.dumps(key, protocol), pickle.dumps(value, protocol))


def encode_blocks(partitions: list[int], keys: Sequence[Any], values: Sequence[Any]) -> list[SnapshotEntry]:
    """A block entry (`core.snapshot_block`) per partition of the entries `(keys[i], values[i])`
    of partition `partitions[i]`, each in the entries' order, the blocks in the order of their
    first entries (where every partition has one entry, a restore sees them in offer order, as
    without blocks); raises pickle's error."""
    # One Python step per entry to group them: measured faster than sorting the indices by
    # partition and gathering each run (the gathers touch every key and value once more).
    groups: dict[int, tuple[list[Any], list[Any]]] = {}
    get = groups.get
    for partition, key, value in zip(partitions, keys, values):
        group = get(partition)
        if group is None:
            groups[partition] = group = ([], [])
        group[0].append(key)
        group[1].append(value)
    return [
        SnapshotEntry(partition, block_key(len(run_keys)), block_value(run_keys, run_values))
        for partition, (run_keys, run_values) in groups.items()
    ]


def repartitioned(entry: SnapshotEntry, partition_count: int) -> list[SnapshotEntry]:
    """`entry` with its key's partition under `partition_count` (a snapshot restored with
    another partition count); a block's entries in new blocks, by their new partitions."""
    if entry.partition == BROADCAST_PARTITION:
        return [entry]
    if not is_block(entry.key):
        return [entry._replace(partition=entry_partition(pickle.loads(entry.key), partition_count))]
    keys, values = pickle.loads(entry.value)
    partitions = [entry_partition(key, partition_count) for key in keys]
    return encode_blocks(partitions, keys, values)


def opened_entries(entries: Iterable[SnapshotEntry]) -> list[SnapshotEntry]:
    """`entries` with each block replaced by its entries, each key and value pickled alone (for
    tools and tests that look at entries one by one; a restore opens blocks in `decode_entries`)."""
    opened: list[SnapshotEntry] = []
    for entry in entries:
        if not is_block(entry.key):
            opened.append(entry)
            continue
        for key, value in block_pairs(entry.value):
            opened.append(
                SnapshotEntry(
                    entry.partition,
                    pickle.dumps(key, pickle.HIGHEST_PROTOCOL),
                    pickle.dumps(value, pickle.HIGHEST_PROTOCOL),
                )
            )
    return opened


_KEY, _VALUE = operator.itemgetter(1), operator.itemgetter(2)


def decode_entries(entries: Iterable[SnapshotEntry]) -> list[tuple[Any, Any]]:
    """Fresh (key, value) objects of `entries`, unpickled by C-level loops (`map`, `zip`), a
    block's by one call: a restore on a cache miss unpickles every entry of the member's share."""
    loads = pickle.loads
    with gc_paused():
        listed = entries if isinstance(entries, list) else list(entries)
        if not any_blocks(listed):
            return list(zip(map(loads, map(_KEY, listed)), map(loads, map(_VALUE, listed))))
        decoded: list[tuple[Any, Any]] = []
        for _, key, value in listed:  # blocks (`core.snapshot_block`) open into their entries
            if is_block(key):
                decoded.extend(block_pairs(value))
            else:
                decoded.append((loads(key), loads(value)))
        return decoded


#: vertex name -> entries, from every processor of the vertex.
SnapshotData = dict[str, list[SnapshotEntry]]


@attrs.define
class Snapshot:
    """A committed snapshot held in memory."""

    snapshot_id: int
    data: SnapshotData
    name: str | None = None
    #: What the runner recorded with it (for example the job id, which a resumed job keeps).
    extra: dict[str, Any] = attrs.field(factory=dict)

    def entries(self, vertex: str) -> list[tuple[Any, Any]]:
        """The vertex's entries, decoded (fresh copies)."""
        return decode_entries(self.data.get(vertex, ()))


class SnapshotContext:
    def __init__(
        self, active_tasklets: int, last_snapshot_id: int = -1, phase2_deferred: bool = False
    ) -> None:
        self._lock = threading.Lock()
        #: Phase 2 happens in a later execution (Spark epochs: the driver commits after the task
        #: ended, and the next epoch's restore commits); here phase 1 is the end of a snapshot.
        self.phase2_deferred = phase2_deferred
        self.active_tasklets = active_tasklets
        #: Id of the snapshot whose phase 1 is requested (or ran last).
        self.phase1_id = last_snapshot_id
        self.terminal = False
        self.export_only = False
        self._phase1_remaining = 0
        self._phase1_participants = 0
        self.phase1_in_progress = False
        self.phase2_id = last_snapshot_id
        self.phase2_success = True
        self._phase2_remaining = 0
        self.phase2_in_progress = False
        self.data: SnapshotData = {}
        #: Vertices whose processors may save only what changed (`Processor` docs:
        #: `changed_snapshot_keys`); set by the runner for each snapshot it can take incrementally.
        self.incremental: set[str] = set()
        #: Of those, vertices where some processor saved everything: their snapshot is a full one.
        self.full_saves: set[str] = set()
        #: Per vertex of `incremental`: above how many changed keys (its processors here together)
        #: its snapshot is a full one after all; set by the runner, see `many_changed`.
        self.delta_limits: dict[str, int] = {}
        self.on_phase1_complete: Callable[[int, SnapshotData], bool] = lambda _id, _data: True
        self.on_phase2_complete: Callable[[int], None] = lambda _id: None

    def many_changed(self, vertex: str, changed: int) -> bool:
        """Whether `vertex`'s snapshot is a full one although it could be incremental: its first
        processor to save estimates the changed keys of all of them here (`changed`) and decides
        for every one (a file is full or incremental as a whole): above the vertex's limit, full."""
        with self._lock:
            limit = self.delta_limits.pop(vertex, None)
            if limit is not None and changed > limit:
                self.incremental.discard(vertex)
                self.full_saves.add(vertex)
            return vertex not in self.incremental

    @property
    def in_progress(self) -> bool:
        return self.phase1_in_progress or self.phase2_in_progress

    def start(self, snapshot_id: int, terminal: bool = False, export_only: bool = False) -> None:
        with self._lock:
            assert not self.in_progress, "a snapshot is already in progress"
            self.phase1_id = snapshot_id
            self.terminal = terminal
            self.export_only = export_only
            self.data = {}
            self.full_saves = set()
            self._phase1_remaining = self.active_tasklets
            self._phase1_participants = 0
            self.phase1_in_progress = True
            if self._phase1_remaining == 0:
                self._complete_phase1()

    def add_entries(self, vertex: str, entries: list[SnapshotEntry]) -> None:
        with self._lock:
            self.data.setdefault(vertex, []).extend(entries)

    def phase1_done(self, snapshot_id: int) -> None:
        with self._lock:
            assert snapshot_id == self.phase1_id and self.phase1_in_progress
            self._phase1_participants += 1
            self._phase1_remaining -= 1
            if self._phase1_remaining == 0:
                self._complete_phase1()

    def tasklet_done(self, last_phase1_id: int) -> None:
        """A tasklet ended (or will take no further snapshot); `last_phase1_id` is its last snapshot."""
        with self._lock:
            self.active_tasklets -= 1
            if self.phase1_in_progress and last_phase1_id < self.phase1_id:
                self._phase1_remaining -= 1
                if self._phase1_remaining == 0:
                    self._complete_phase1()

    def _complete_phase1(self) -> None:
        # `in_progress` stays true throughout (phase 2 is marked before phase 1 is unmarked): the
        # coordinator reads it without the lock, and storing the snapshot may take a while.
        success = self.on_phase1_complete(self.phase1_id, self.data)
        if self.phase2_deferred:
            self.phase1_in_progress = False
            return
        if self.export_only:
            self.phase1_in_progress = False
            self.on_phase2_complete(self.phase1_id)
            return
        self.phase2_success = success
        self._phase2_remaining = self._phase1_participants
        self.phase2_id = self.phase1_id
        self.phase2_in_progress = True
        self.phase1_in_progress = False
        if self._phase2_remaining == 0:
            self.phase2_in_progress = False
            self.on_phase2_complete(self.phase2_id)

    def phase2_done(self, snapshot_id: int) -> None:
        with self._lock:
            assert snapshot_id == self.phase2_id
            self._phase2_remaining -= 1
            if self._phase2_remaining == 0:
                self.phase2_in_progress = False
                self.on_phase2_complete(snapshot_id)

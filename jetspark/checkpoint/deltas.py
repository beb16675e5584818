"""Incremental snapshot files: what changed since the last committed snapshot, and how a restore
applies them.

A full file holds every entry a member's processors of one vertex saved. An incremental file
holds only the entries of the keys that changed since the snapshot it follows (a processor names
them with `changed_snapshot_keys`), a deletion (empty value bytes) for each key removed, and all
the broadcast entries (not per key: they replace the chain's). Its
manifest entry lists its *chain*: the files it applies on, oldest first, starting with a full one
(`SnapshotFile.chain`). A restore reads the chain's files and the incremental one and keeps, per
key, the last entry (`merge`); deletions remove the key. Retention keeps every snapshot a
retained one's chain names, and the integrity checks cover chain files too (`CheckpointStore`).

`plan_chain` decides, per (vertex, member), whether the next file may be incremental: a full one
every `FULL_EVERY` snapshots, or as soon as the chain's incremental bytes outgrow `MAX_DELTA_RATIO`
of its full file, so that a restore never reads much more than the state. When the save starts,
`delta_limit` may still make it full: when more than that share of a large state's keys changed.
"""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from jetspark.checkpoint.entries import Entry
from jetspark.core.snapshot_block import block_key, block_value, is_block

if TYPE_CHECKING:
    from jetspark.checkpoint.store import SnapshotFile

#: Value bytes of a deletion (a pickle is never empty; `engine.snapshot.DELETED`).
DELETED = b""
#: The partition of `BroadcastKey` entries (`engine.snapshot.BROADCAST_PARTITION`).
BROADCAST_PARTITION = -1
#: A full file at least every this many snapshots of a (vertex, member).
FULL_EVERY = 10
#: A full file when the chain's incremental files together exceed this share of its full file.
MAX_DELTA_RATIO = 0.5
#: A state of at least this many keys (its full file's) saves in full when more than
#: `MAX_DELTA_RATIO` of them changed (`delta_limit`); a smaller one saves what changed anyway.
LIMITED_FROM_KEYS = 10_000


def merge(layers: Iterable[Iterable[Entry]]) -> Iterator[Entry]:
    """The entries of `layers` (oldest first) with, per key, only the newest; deletions drop it.
    A key keeps the position of its first appearance, so segment order holds within a layer.

    Keys are compared by their bytes. A block (`core.snapshot_block`) is opened: each of its keys
    is pickled alone, as a deletion's key was, and the entries that survive from blocks come out
    in new blocks, one per partition, after the others.

    Broadcast entries (partition -1) are not per key: several processors of a member may save
    the same broadcast key (each its own watermark, say), and every save writes all of its
    broadcast entries. So they come from the newest layer alone, all of them, first (as the
    broadcast segment is first in a file)."""
    #: key bytes -> the entry as written, or [partition, key, value] when it came from a block
    merged: dict[bytes, Any] = {}
    broadcast: list[Entry] = []
    for layer in layers:
        broadcast = []
        for entry in layer:
            partition, key, value = entry
            if partition == BROADCAST_PARTITION:
                broadcast.append(entry)
            elif is_block(key):
                keys, values = pickle.loads(value)
                key_bytes = map(pickle.dumps, keys, itertools.repeat(pickle.HIGHEST_PROTOCOL))
                merged.update(zip(key_bytes, map(list, zip(itertools.repeat(partition), keys, values))))
            elif value == DELETED:
                merged.pop(key, None)
            else:
                merged[key] = entry
    singles: list[Entry] = []
    opened: dict[int, tuple[list[Any], list[Any]]] = {}
    for held in merged.values():
        if held.__class__ is list:
            keys, values = opened.setdefault(held[0], ([], []))
            keys.append(held[1])
            values.append(held[2])
        else:
            singles.append(held)
    blocks = [(p, block_key(len(keys)), block_value(keys, values)) for p, (keys, values) in opened.items()]
    return itertools.chain(broadcast, singles, blocks)


def delta_limit(chain: tuple[tuple[int, SnapshotFile], ...]) -> int | None:
    """Above how many changed keys the next file of `chain` is a full one after all: more than
    `MAX_DELTA_RATIO` of the keys of its full file. An incremental file of most of a large state
    costs more to save than a full one (each changed key is looked up and tracked as well), and a
    restore would read the state about twice; `plan_chain`'s byte rule only makes the file after
    it full. None (no limit): the full file holds fewer than `LIMITED_FROM_KEYS` keys, or is of an
    earlier release (its key count is not recorded)."""
    keys = chain[0][1].keys
    if keys is None or keys < LIMITED_FROM_KEYS:
        return None
    return int(MAX_DELTA_RATIO * keys)


def plan_chain(snapshot_id: int, base: SnapshotFile | None) -> tuple[tuple[int, SnapshotFile], ...] | None:
    """The chain of the next file after `base` (the member's file of committed snapshot
    `snapshot_id`), or None when the next file must be a full one."""
    if base is None:
        return None
    chain = (*base.chain, (snapshot_id, base.without_chain()))
    if len(chain) >= FULL_EVERY:
        return None
    full = chain[0][1]
    deltas = sum(file.size for _, file in chain[1:])
    if deltas > MAX_DELTA_RATIO * max(full.size, 1):
        return None
    return chain

"""Where input items and snapshot entries go when several processors run (redistribution modes).

Input follows the edge the user declared: partitioned (owner of the key's partition), broadcast
(every processor) or, undeclared, round-robin like a unicast edge. Snapshot entries follow the
runner's restore rule (`jetspark.runners.snapshot_io.restorer`): a `BroadcastKey` entry to
every processor, any other to the owner of its key's partition under the new layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from jetspark.core.partitioner import Partitioner, default_partitioner
from jetspark.engine.snapshot import SnapshotEntry, decode_entries
from jetspark.planning.partitions import PartitionArrangement
from jetspark.runners.snapshot_io import restorer
from jetspark.testing._context import Layout


@attrs.frozen
class InputRouting:
    """How one input ordinal reaches several processors: `key_fn` set = partitioned."""

    key_fn: Callable[[Any], Any] | None = None
    partitioner: Partitioner = default_partitioner
    broadcast: bool = False

    def describe(self) -> str:
        if self.broadcast:
            return "broadcast"
        return "partitioned" if self.key_fn is not None else "round-robin"


class Router:
    """Routes one layout's input; processors are addressed by position = global processor index."""

    def __init__(self, layout: Layout, partition_count: int, routings: Sequence[InputRouting]) -> None:
        self.layout = layout
        self.arrangement = PartitionArrangement(partition_count, layout.member_count)
        self.routings = list(routings)
        self._next = [0] * len(self.routings)

    def owner(self, key: Any, partitioner: Partitioner = default_partitioner) -> int:
        partition = partitioner(key, self.arrangement.partition_count)
        return self.arrangement.global_owner(partition, self.layout.local_parallelism)

    def split(self, ordinal: int, items: Sequence[Any]) -> list[list[Any]]:
        """The items of one batch per processor, each list in input order."""
        count = self.layout.total_parallelism
        out: list[list[Any]] = [[] for _ in range(count)]
        routing = self.routings[ordinal]
        for item in items:
            if routing.broadcast:
                for target in out:
                    target.append(item)
            elif routing.key_fn is not None:
                out[self.owner(routing.key_fn(item), routing.partitioner)].append(item)
            else:
                out[self._next[ordinal]].append(item)
                self._next[ordinal] = (self._next[ordinal] + 1) % count
        return out

    def entries_for(self, entries: Sequence[SnapshotEntry], global_index: int) -> list[SnapshotEntry]:
        """The entries a restore gives processor `global_index`: broadcast ones and those whose
        partition (computed when offered) it owns."""
        lp = self.layout.local_parallelism
        return [
            entry
            for entry in entries
            if restorer(entry.partition, self.arrangement, lp) in (None, global_index)
        ]


def unpickle_entries(entries: Sequence[SnapshotEntry]) -> list[tuple[Any, Any]]:
    """Snapshot entries as a restore sees them: key and value as serialized when offered."""
    return decode_entries(entries)

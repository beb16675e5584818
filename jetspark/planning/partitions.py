"""Partition arrangement: which member, and which processor of it, owns each partition.

Partition p belongs to member `p % member_count`. Within a member, processor i of a vertex with
local parallelism LP owns the member's partitions at positions i, i + LP, i + 2LP, ... of the
member's sorted partition list. For a local (non-distributed) partitioned edge every member sees
all partitions, so processor i owns the partitions p with `p % LP == i`. Global processor index =
member index * LP + local index.
"""

from __future__ import annotations

from functools import lru_cache

import attrs


@attrs.frozen
class PartitionArrangement:
    partition_count: int
    member_count: int

    def owner_member(self, partition: int) -> int:
        return partition % self.member_count

    def member_partitions(self, member: int) -> tuple[int, ...]:
        return _member_partitions(self.partition_count, self.member_count, member)

    def assignment(self) -> dict[int, tuple[int, ...]]:
        return {m: self.member_partitions(m) for m in range(self.member_count)}

    def processor_partitions(self, member: int, local_index: int, local_parallelism: int) -> tuple[int, ...]:
        """Partitions owned by processor `local_index` of `member` on a distributed edge."""
        return self.member_partitions(member)[local_index::local_parallelism]

    def local_owner(self, partition: int, local_parallelism: int, distributed: bool) -> int:
        """Local index of the processor owning `partition` (within its owning member if distributed)."""
        if not distributed:
            return partition % local_parallelism
        return (partition // self.member_count) % local_parallelism

    def global_owner(self, partition: int, local_parallelism: int) -> int:
        """Global processor index owning `partition` on a distributed edge."""
        member = self.owner_member(partition)
        return member * local_parallelism + self.local_owner(partition, local_parallelism, True)


@lru_cache(maxsize=256)
def _member_partitions(partition_count: int, member_count: int, member: int) -> tuple[int, ...]:
    return tuple(range(member, partition_count, member_count))

"""Jet's `PartitionArrangementTest` (hazelcast-jet-core, `impl.execution.init`), ported.

Jet's `PartitionArrangement` is built from the cluster's partition table (an owner address per
partition) and the local member's address; jetspark's (`planning.partitions`) from the partition
and member counts alone. Jet's fixture: 7 partitions owned by `[a0, a2, a1, a0, a1, a2, a0]`, the
local member `a0`. Here: 7 partitions on 3 members, the local member 0. Each test is named after
the Jet case it ports.

Differences:
- `testRemotePartitionAssignment`: jetspark's partition `p` belongs to member `p % M`
  (docs/architecture.md, "Partition -> member is `p % M`": every Spark task and the driver must
  agree without talking to each other), so Jet's owner table cannot be given. The local member
  owns the same partitions as Jet's `a0` (0, 3 and 6); the remote members own {1, 4} and {2, 5}
  where Jet's `a1` and `a2` own {2, 4} and {1, 5}. `assignment()` lists every member, the local
  one too; Jet's `getRemotePartitionAssignment()` only the remote ones, which the port takes.
- `testAssignPartitionsToProcessors`: Jet's `assignPartitionsToProcessors(n, distributed)` is
  `processor_partitions(member, i, n)` for a distributed edge; for a local edge jetspark has
  `local_owner(p, n, distributed=False)` per partition, from which the port lists each
  processor's partitions.
"""

from __future__ import annotations

from jetspark.planning.partitions import PartitionArrangement

PARTITION_COUNT = 7
MEMBER_COUNT = 3
LOCAL_MEMBER = 0

arrangement = PartitionArrangement(PARTITION_COUNT, MEMBER_COUNT)


def assign_partitions_to_processors(count: int, distributed: bool) -> list[list[int]]:
    """Jet's `assignPartitionsToProcessors(count, distributed)` on the local member: the
    partitions of each of `count` processors, in order."""
    if distributed:
        return [list(arrangement.processor_partitions(LOCAL_MEMBER, index, count)) for index in range(count)]
    owners = [arrangement.local_owner(p, count, distributed=False) for p in range(PARTITION_COUNT)]
    return [[p for p, owner in enumerate(owners) if owner == index] for index in range(count)]


def test_PartitionArrangementTest__testRemotePartitionAssignment() -> None:
    remote = {m: ps for m, ps in arrangement.assignment().items() if m != LOCAL_MEMBER}
    assert len(remote) == 2  # only remote members are included
    assert remote[1] == (1, 4)  # Jet's a1: [2, 4] (see the module docstring)
    assert remote[2] == (2, 5)  # Jet's a2: [1, 5]
    assert arrangement.member_partitions(LOCAL_MEMBER) == (0, 3, 6)  # as Jet's a0
    assert all(arrangement.owner_member(p) == m for m, ps in remote.items() for p in ps)


def test_PartitionArrangementTest__testAssignPartitionsToProcessors() -> None:
    assert assign_partitions_to_processors(1, False) == [[0, 1, 2, 3, 4, 5, 6]]
    assert assign_partitions_to_processors(2, False) == [[0, 2, 4, 6], [1, 3, 5]]
    assert assign_partitions_to_processors(3, False) == [[0, 3, 6], [1, 4], [2, 5]]
    assert assign_partitions_to_processors(1, True) == [[0, 3, 6]]
    assert assign_partitions_to_processors(2, True) == [[0, 6], [3]]
    assert assign_partitions_to_processors(3, True) == [[0], [3], [6]]


def test_PartitionArrangementTest__testAssignPartitionsToProcessors__ownersAgree() -> None:
    """The per-partition owners (`local_owner`, `global_owner`), which the routing uses, agree
    with the lists of Jet's case for a distributed edge."""
    for count in (1, 2, 3):
        for index, partitions in enumerate(assign_partitions_to_processors(count, True)):
            for p in partitions:
                assert arrangement.local_owner(p, count, distributed=True) == index
                assert arrangement.global_owner(p, count) == LOCAL_MEMBER * count + index

"""PartitionArrangement on small pinned cases: the formulas docs/architecture.md states."""

from __future__ import annotations

from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.planning.partitions import PartitionArrangement


def test_partition_p_belongs_to_member_p_mod_m() -> None:
    arrangement = PartitionArrangement(10, 3)
    assert [arrangement.owner_member(p) for p in range(10)] == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
    assert arrangement.assignment() == {0: (0, 3, 6, 9), 1: (1, 4, 7), 2: (2, 5, 8)}


def test_processors_of_a_member_take_its_partitions_in_turn() -> None:
    arrangement = PartitionArrangement(10, 3)
    # member 0 owns 0, 3, 6, 9: with two processors, #0 takes positions 0, 2 and #1 positions 1, 3
    assert arrangement.processor_partitions(0, 0, 2) == (0, 6)
    assert arrangement.processor_partitions(0, 1, 2) == (3, 9)
    assert arrangement.processor_partitions(1, 1, 2) == (4,)
    assert [arrangement.global_owner(p, 2) for p in (0, 3, 6, 9, 4)] == [0, 1, 0, 1, 3]


def test_a_local_edge_splits_every_partition_over_the_local_processors() -> None:
    arrangement = PartitionArrangement(10, 3)
    assert [arrangement.local_owner(p, 2, distributed=False) for p in range(6)] == [0, 1, 0, 1, 0, 1]
    assert [arrangement.local_owner(p, 2, distributed=True) for p in (0, 3, 6, 9)] == [0, 1, 0, 1]


def test_more_members_than_partitions_leaves_some_members_without_any() -> None:
    arrangement = PartitionArrangement(2, 4)
    assert arrangement.assignment() == {0: (0,), 1: (1,), 2: (), 3: ()}
    assert arrangement.processor_partitions(3, 0, 1) == ()


def test_the_default_partition_count_is_271() -> None:
    assert DEFAULT_PARTITION_COUNT == 271
    arrangement = PartitionArrangement(DEFAULT_PARTITION_COUNT, 4)
    assert [len(arrangement.member_partitions(m)) for m in range(4)] == [68, 68, 68, 67]


def test_arrangements_are_values() -> None:
    assert PartitionArrangement(271, 3) == PartitionArrangement(271, 3)
    assert PartitionArrangement(271, 3) != PartitionArrangement(271, 4)

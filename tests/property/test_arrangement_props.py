"""Properties of the partition arrangement (planning/partitions.py) and of the plan built on it.

For any partition count, member count and local parallelism: each partition has exactly one owner
member and, on a distributed edge, exactly one owner processor; the processors' partition sets
split the partition range exactly; `global_owner`, `local_owner`, `processor_partitions` and the
plan's routing table all tell the same story; and the answer never depends on anything but the
three numbers.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from jetspark.core import DAG, AbstractProcessor, Edge, JobConfig
from jetspark.planning.partitions import PartitionArrangement
from jetspark.planning.pipeline import build_plan

partition_counts = st.integers(min_value=1, max_value=600)
member_counts = st.integers(min_value=1, max_value=16)
parallelisms = st.integers(min_value=1, max_value=8)


@given(partition_counts, member_counts)
def test_each_partition_has_exactly_one_owner_member(partitions: int, members: int) -> None:
    arrangement = PartitionArrangement(partitions, members)
    owned = Counter(p for m in range(members) for p in arrangement.member_partitions(m))
    assert owned == Counter(range(partitions))
    for member in range(members):
        assert all(arrangement.owner_member(p) == member for p in arrangement.member_partitions(member))
        assert list(arrangement.member_partitions(member)) == sorted(arrangement.member_partitions(member))
    assert arrangement.assignment() == {m: arrangement.member_partitions(m) for m in range(members)}
    sizes = [len(arrangement.member_partitions(m)) for m in range(members)]
    assert max(sizes) - min(sizes) <= 1, "partitions are spread evenly over members"


@given(partition_counts, member_counts, parallelisms)
def test_processor_partitions_split_the_range_exactly(partitions: int, members: int, lp: int) -> None:
    arrangement = PartitionArrangement(partitions, members)
    owner_of: dict[int, int] = {}
    for member in range(members):
        sizes = []
        for local in range(lp):
            mine = arrangement.processor_partitions(member, local, lp)
            sizes.append(len(mine))
            for p in mine:
                assert p not in owner_of, f"partition {p} owned twice"
                owner_of[p] = member * lp + local
                assert arrangement.owner_member(p) == member
        assert max(sizes) - min(sizes) <= 1, "a member's partitions are spread evenly over its processors"
    assert sorted(owner_of) == list(range(partitions))
    for p, owner in owner_of.items():
        assert arrangement.global_owner(p, lp) == owner
        assert arrangement.local_owner(p, lp, distributed=True) == owner % lp


@given(partition_counts, member_counts, parallelisms)
def test_local_edge_ownership_splits_every_partition_per_member(
    partitions: int, members: int, lp: int
) -> None:
    # On a local partitioned edge each member sees every partition; processor i takes p % lp == i.
    arrangement = PartitionArrangement(partitions, members)
    owners = [arrangement.local_owner(p, lp, distributed=False) for p in range(partitions)]
    assert all(0 <= owner < lp for owner in owners)
    assert owners == [p % lp for p in range(partitions)]


@given(partition_counts, member_counts, parallelisms)
def test_arrangement_is_deterministic(partitions: int, members: int, lp: int) -> None:
    one = PartitionArrangement(partitions, members)
    two = PartitionArrangement(partitions, members)
    assert one == two
    for p in range(partitions):
        assert one.global_owner(p, lp) == two.global_owner(p, lp)
    for member in range(members):
        for local in range(lp):
            assert one.processor_partitions(member, local, lp) == two.processor_partitions(member, local, lp)


class Noop(AbstractProcessor):
    pass


@given(
    st.integers(min_value=1, max_value=60),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=1, max_value=3),
    st.integers(min_value=1, max_value=3),
    st.booleans(),
)
def test_plan_routes_partitioned_edges_to_the_arrangement_owner(
    partitions: int, members: int, lp_up: int, lp_down: int, distributed: bool
) -> None:
    dag = DAG()
    up = dag.new_vertex("up", Noop, lp_up)
    down = dag.new_vertex("down", Noop, lp_down)
    edge = Edge.between(up, down).partitioned(lambda item: item)
    if distributed:
        edge.distributed()
    dag.edge(edge)
    plan = build_plan(dag, JobConfig(), members, partition_count=partitions)
    arrangement = plan.arrangement
    for producer in plan.vertex_plan("up").processor_ids():
        targets = plan.consumers_of(plan.edge_def(edge), producer)
        assert targets.partition_to_consumer is not None
        for p, index in enumerate(targets.partition_to_consumer):
            member, local = targets.consumers[index]
            if distributed:
                assert member * lp_down + local == arrangement.global_owner(p, lp_down)
                context = plan.processor_context("down", member, local)
                assert p in context.processor_partitions
                assert context.global_processor_index == member * lp_down + local
            else:
                assert (member, local) == (producer[0], p % lp_down)
    for consumer in plan.vertex_plan("down").processor_ids():
        producers = plan.producers_of(plan.edge_def(edge), consumer)
        expected = plan.vertex_plan("up").processor_ids()
        if not distributed:
            expected = [p for p in expected if p[0] == consumer[0]]
        assert producers == expected

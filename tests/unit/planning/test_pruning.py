"""Processor, member and constant-key pruning in the plan, on the local runner, and in explain()."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from jetspark.core import (
    DAG,
    AbstractProcessor,
    Edge,
    JobConfig,
    ProcessingGuarantee,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    Vertex,
)
from jetspark.core.partitioner import default_partitioner
from jetspark.core.suppliers import MemberSuppliers
from jetspark.planning.explain import explain
from jetspark.planning.pipeline import build_plan
from jetspark.processors import sinks, transforms
from jetspark.runners.local import LocalRunner

CREATED: list[tuple[str, int]] = []


class Numbers(AbstractProcessor):
    """Emits 0..9 on the first processor of the last member only."""

    def init_processor(self, context):  # type: ignore[no-untyped-def]
        last = context.member_index == context.member_count - 1 and context.local_processor_index == 0
        self.items = list(range(10)) if last else []

    def complete(self) -> bool:
        while self.items:
            if not self.try_emit(self.items[0]):
                return False
            self.items.pop(0)
        return True


class OnlyOn(ProcessorMetaSupplier):
    """A source that runs on the given members only (its supplier is None elsewhere)."""

    def __init__(self, members: Sequence[int]) -> None:
        self.only = set(members)

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        supplier = ProcessorSupplier.of(Numbers)
        return {m: supplier if m in self.only else None for m in member_indexes}


class Counting(ProcessorSupplier):
    """Records each member it makes processors on; optionally does no work without input."""

    def __init__(self, name: str, works_alone: bool) -> None:
        self.name = name
        self.works_alone = works_alone

    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        self.member = context.member_index

    def get(self, count: int) -> list[AbstractProcessor]:
        CREATED.append((self.name, self.member))
        return [Forward() for _ in range(count)]

    def does_work_without_input(self) -> bool:
        return self.works_alone


class Forward(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: object) -> bool:
        return self.try_emit(item)


def chain(source_members: Sequence[int], distributed: bool = False, works_alone: bool = False) -> DAG:
    dag = DAG()
    source = dag.vertex(Vertex("source", OnlyOn(source_members), 1))
    step = dag.new_vertex("step", Counting("step", works_alone), 1)
    sink = dag.new_vertex("sink", sinks.collect(), 1)
    first = Edge.between(source, step)
    dag.edge(first.distributed() if distributed else first)
    dag.edge(Edge.between(step, sink))
    return dag


def test_vertices_without_input_on_a_member_are_not_created_there() -> None:
    plan = build_plan(chain([1]), JobConfig(), 3)
    assert plan.vertex_plan("step").members() == [1]
    assert plan.vertex_plan("sink").members() == [1]
    assert plan.pruning.deployed == (1,)
    assert plan.pruning.metrics() == {
        "members": 3,
        "members_deployed": 1,
        "members_pruned": 2,
        "processors_pruned": 4,
        "source_partitions_read": 0,
        "source_partitions_pruned": 0,
    }


def test_a_vertex_that_works_without_input_is_kept() -> None:
    plan = build_plan(chain([1], works_alone=True), JobConfig(), 3)
    assert plan.vertex_plan("step").members() == [0, 1, 2]
    assert plan.vertex_plan("sink").members() == [0, 1, 2], "the sink has a producer on every member"


def test_a_distributed_edge_feeds_every_member() -> None:
    plan = build_plan(chain([1], distributed=True), JobConfig(), 3)
    assert plan.vertex_plan("step").members() == [0, 1, 2]
    assert plan.pruning.metrics()["members_pruned"] == 0


def test_a_vertex_without_inbound_edges_that_needs_input_is_pruned_everywhere() -> None:
    dag = DAG()
    dag.new_vertex("lonely", sinks.noop(), 2)
    dag.new_vertex("numbers", Numbers, 1)
    plan = build_plan(dag, JobConfig(), 2)
    assert plan.vertex_plan("lonely").members() == []
    assert (
        "vertex 'lonely': 4 processor(s) pruned on members 0, 1: it does no work without input and has no inbound edge"
        in explain(dag, JobConfig(), 2)
    )


@pytest.mark.parametrize(
    ("config", "why"),
    [
        (JobConfig(pruning=False), "JobConfig.pruning is False"),
        (
            JobConfig(processing_guarantee=ProcessingGuarantee.AT_LEAST_ONCE),
            "processing guarantee at_least_once",
        ),
    ],
)
def test_pruning_can_be_off(config: JobConfig, why: str) -> None:
    plan = build_plan(chain([1]), config, 3)
    assert plan.vertex_plan("step").members() == [0, 1, 2]
    assert plan.pruning.disabled is not None and why in plan.pruning.disabled


def constant_key_dag(works_alone: bool = False) -> tuple[DAG, Edge]:
    dag = DAG()
    source = dag.new_vertex("source", Numbers, 2)
    total = dag.new_vertex("total", Counting("total", works_alone), 2)
    sink = dag.new_vertex("sink", sinks.collect(), 1)
    edge = Edge.between(source, total).all_to_one("k").distributed()
    dag.edge(edge)
    dag.edge(Edge.between(total, sink))
    return dag, edge


def test_a_constant_key_edge_needs_only_its_keys_member() -> None:
    dag, edge = constant_key_dag()
    plan = build_plan(dag, JobConfig(), 4, partition_count=271)
    partition = default_partitioner("k", 271)
    owner = (partition % 4, (partition // 4) % 2)
    assert plan.vertex_plan("total").members() == [owner[0]]
    assert plan.vertex_plan("sink").members() == [owner[0]]
    for producer in plan.vertex_plan("source").processor_ids():
        assert plan.consumers_of(plan.edge_def(edge), producer).consumers == (owner,)
    text = explain(dag, JobConfig(), 4)
    assert (
        f"edge source[0] -> total[0]: constant key 'k' (partition {partition}): only its owner consumes"
        in text
    )


def test_a_constant_key_edge_into_a_vertex_that_works_alone_keeps_its_members() -> None:
    dag, _ = constant_key_dag(works_alone=True)
    plan = build_plan(dag, JobConfig(), 4)
    assert plan.vertex_plan("total").members() == [0, 1, 2, 3]


@pytest.mark.parametrize("members", [1, 3])
def test_pruned_and_unpruned_runs_give_the_same_results(members: int) -> None:
    # the chain runs on its source's member alone; the constant-key DAG's source runs everywhere
    for dag, deployed in ((chain([members - 1]), 1), (constant_key_dag()[0], members)):
        runner = LocalRunner(member_count=members)
        CREATED.clear()
        pruned = runner.run(dag, JobConfig())
        created_pruned = sorted(CREATED)
        CREATED.clear()
        unpruned = runner.run(dag, JobConfig(pruning=False))
        assert sorted(pruned.result("sink")) == sorted(unpruned.result("sink")) == list(range(10))
        assert pruned.metrics() == unpruned.metrics()
        assert len(created_pruned) == 1, "one member makes processors of the pruned vertex"
        assert len(CREATED) == members
        assert pruned.plan_metrics()["members_deployed"] == deployed
        assert unpruned.plan_metrics()["members_pruned"] == 0


def test_builtin_transforms_and_collecting_sinks_do_no_work_without_input() -> None:
    for supplier in (transforms.map(str), transforms.filter(bool), sinks.collect(), sinks.noop()):
        assert not ProcessorMetaSupplier.of(supplier).does_work_without_input()
    assert ProcessorMetaSupplier.of(Numbers).does_work_without_input()


def test_explain_lists_stages_members_and_reasons() -> None:
    text = explain(chain([1]), JobConfig(), 3)
    assert "vertex 'step': 2 processor(s) pruned on members 0, 2: it does no work without input" in text
    assert "members 0, 2 pruned: no processor of any vertex runs there" in text
    assert "stage 0 [source, step, sink]: 1 task(s) on Spark, 1 of 3 members (1)" in text

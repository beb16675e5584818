"""Pruning never changes what a batch job computes (planning/pruning.py), on the local runner.

For random chains of three vertices (a source present on some members, then two vertices that
may or may not work without input), with random edges (local or distributed; unicast,
partitioned or with a constant key) and member counts: the pruned job collects exactly what the
unpruned one does, every pruned member had no producer, and a pruned vertex is one that does no
work without input.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark.core import (
    DAG,
    AbstractProcessor,
    Edge,
    JobConfig,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    Vertex,
)
from jetspark.core.suppliers import MemberSuppliers
from jetspark.planning.pipeline import build_plan
from jetspark.processors import collect
from jetspark.runners.local import LocalRunner


class Items(AbstractProcessor):
    def init_processor(self, context):  # type: ignore[no-untyped-def]
        self.items = [(context.global_processor_index, i) for i in range(3)]

    def complete(self) -> bool:
        while self.items:
            if not self.try_emit(self.items[0]):
                return False
            self.items.pop(0)
        return True


class Source(ProcessorMetaSupplier):
    def __init__(self, members: frozenset[int]) -> None:
        self.members = members

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        supplier = ProcessorSupplier.of(Items)
        return {m: supplier if m in self.members else None for m in member_indexes}


class Pass(AbstractProcessor):
    """Forwards items; emits one marker at the end when it works without input."""

    def __init__(self, marker: bool) -> None:
        super().__init__()
        self.marker = marker
        self.sent = False

    def try_process_item(self, ordinal: int, item: object) -> bool:
        return self.try_emit(item)

    def complete(self) -> bool:
        if self.marker and not self.sent:
            self.sent = self.try_emit(
                ("marker", self.context.vertex_name, self.context.global_processor_index)
            )
            return self.sent
        return True


def middle(marker: bool) -> ProcessorSupplier:
    return ProcessorSupplier.of(lambda: Pass(marker), does_work_without_input=marker)


edges = st.tuples(st.booleans(), st.sampled_from(["unicast", "partitioned", "constant"]))


def wire(edge: Edge, shape: tuple[bool, str]) -> Edge:
    distributed, routing = shape
    if routing == "partitioned":
        edge.partitioned(lambda item: item[1])
    elif routing == "constant":
        edge.all_to_one("k")
    return edge.distributed() if distributed else edge


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=1, max_value=4),
    st.data(),
    st.booleans(),
    st.booleans(),
    edges,
    edges,
)
def test_pruning_keeps_every_result(
    members: int,
    data: st.DataObject,
    first_works: bool,
    second_works: bool,
    e1: tuple[bool, str],
    e2: tuple[bool, str],
) -> None:
    present = data.draw(st.frozensets(st.integers(min_value=0, max_value=members - 1), max_size=members))
    dag = DAG()
    source = dag.vertex(Vertex("source", Source(present), 1))
    a = dag.new_vertex("a", middle(first_works), 2)
    b = dag.new_vertex("b", middle(second_works), 1)
    dag.edge(wire(Edge.between(source, a), e1))
    dag.edge(wire(Edge.between(a, b), e2))
    dag.edge(Edge.between(b, dag.new_vertex("sink", collect())))
    runner = LocalRunner(member_count=members)
    pruned = runner.run(dag, JobConfig())
    unpruned = runner.run(dag, JobConfig(pruning=False))
    assert sorted(map(repr, pruned.result("sink"))) == sorted(map(repr, unpruned.result("sink")))
    assert pruned.metrics() == unpruned.metrics()
    plan = build_plan(dag, JobConfig(), members)
    for record in plan.pruning.vertices:
        assert record.vertex in {"a", "b", "sink"}
        assert not {"a": first_works, "b": second_works, "sink": False}[record.vertex]

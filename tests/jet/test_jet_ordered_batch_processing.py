"""Jet's `OrderedBatchProcessingTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported.

Jet runs each pipeline with `setPreserveOrder(true)` on one member. jetspark has no Pipeline API;
each pipeline is the DAG Jet's planner makes of it with `preserveOrder`: every transform gets the
local parallelism of its upstream (Jet's `determineLocalParallelism(..., preserveOrder)` ignores
the stage's own `setLocalParallelism`, the "high" 11 and "low" 2 of the parameters) and is fed by
an isolated edge; Jet's `Assertions.assertOrdered` sink has total parallelism one and is fed by a
distributed all-to-one edge. Here the sink is `collect()` on that edge, and its list (one
processor: arrival order) is compared with the expected list after the job, as Jet's sink does in
`complete()`. The local runner runs one member (Jet's `Jet.newJetInstance()`).

Jet's `TestSources.items(sequence)` is `from_iterable` with local parallelism 1; Jet's test source
`itemsParallel(iterables)` (a processor per iterable, local parallelism = their count, processor
`i` emitting iterable `i` in order) is `ParallelBatchP` below.

Parameters: `map` is `P.map`, `flatMap(Traversers::singleton)` is `P.flat_map` of a 1-tuple,
`filter(alwaysTrue())` is `P.filter`, `customTransform(mapP(identity()))` is `IdentityP` (a
processor of our own, which the planner cannot fuse). Each is run with the "high" and "low"
setting Jet has (the same DAG here, as in Jet's plan), and Jet's two two-stage parameters
`map-high-filter-low` and `map-low-filter-high`.

Skipped parameters (no counterpart in jetspark): `map-using-imap-*` and
`map-using-replicated-map-*` (no IMap, no replicated map), `map-stateful-global-*` (no stateful
mapping stage).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jetspark import DAG, Edge, JobConfig, Vertex
from jetspark import processors as P
from jetspark.core import AbstractProcessor
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.runners.local import LocalRunner

HIGH_LOCAL_PARALLELISM = 11
LOW_LOCAL_PARALLELISM = 2
ITEM_COUNT = 250
TIMEOUT = 120


def identity(item: Any) -> Any:
    return item


def always_true(_item: Any) -> bool:
    return True


def singleton(item: Any) -> tuple[Any]:
    return (item,)


class IdentityP(AbstractProcessor):
    """Jet's `Processors.mapP(FunctionEx.identity())` as a custom transform."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)


class ParallelBatchP(AbstractProcessor):
    """Jet's `ParallelBatchP`: processor `i` of the vertex emits `iterables[i]`, in order."""

    def __init__(self, iterables: list[list[Any]]) -> None:
        self.iterables = iterables
        self.pending: list[Any] = []
        self.position = 0

    def init_processor(self, context: Any) -> None:
        self.pending = list(self.iterables[context.global_processor_index])

    def complete(self) -> bool:
        while self.position < len(self.pending):
            if not self.try_emit(self.pending[self.position]):
                return False
            self.position += 1
        return True


class Stage:
    """A vertex and the local parallelism Jet's planner gave it (that of its source)."""

    def __init__(self, dag: DAG, vertex: Vertex, parallelism: int) -> None:
        self.dag = dag
        self.vertex = vertex
        self.parallelism = parallelism
        self.outbound = 0
        self.count = 0

    def then(self, name: str, supplier: Any, _requested_parallelism: int = -1) -> Stage:
        """A transform behind this stage: with `preserveOrder` Jet ignores the requested local
        parallelism and uses this stage's, on an isolated edge."""
        self.count += 1
        vertex = self.dag.new_vertex(f"{name}-{self.vertex.name}-{self.count}", supplier, self.parallelism)
        self.dag.edge(Edge.from_(self.vertex, self.outbound).to(vertex).isolated())
        self.outbound += 1
        return Stage(self.dag, vertex, self.parallelism)

    def assert_ordered(self, name: str) -> str:
        """Jet's `Assertions.assertOrdered`: a sink of total parallelism one, all-to-one edge."""
        sink = self.dag.new_vertex(name, P.collect(), 1)
        self.dag.edge(Edge.from_(self.vertex, self.outbound).to(sink).all_to_one(name).distributed())
        self.outbound += 1
        return name


Transform = Callable[[Stage], Stage]


def _one(name: str, supplier_fn: Callable[[], Any], lp: int) -> Transform:
    return lambda stage: stage.then(name, supplier_fn(), lp)


TRANSFORMS: list[tuple[str, Transform]] = [
    ("map-high", _one("map", lambda: P.map(identity), HIGH_LOCAL_PARALLELISM)),
    ("flat-map-high", _one("flat-map", lambda: P.flat_map(singleton), HIGH_LOCAL_PARALLELISM)),
    ("filter-high", _one("filter", lambda: P.filter(always_true), HIGH_LOCAL_PARALLELISM)),
    (
        "custom-transform-high",
        _one("custom-transform", lambda: ProcessorSupplier.of(IdentityP), HIGH_LOCAL_PARALLELISM),
    ),
    ("map-low", _one("map", lambda: P.map(identity), LOW_LOCAL_PARALLELISM)),
    ("flat-map-low", _one("flat-map", lambda: P.flat_map(singleton), LOW_LOCAL_PARALLELISM)),
    ("filter-low", _one("filter", lambda: P.filter(always_true), LOW_LOCAL_PARALLELISM)),
    (
        "custom-transform-low",
        _one("custom-transform", lambda: ProcessorSupplier.of(IdentityP), LOW_LOCAL_PARALLELISM),
    ),
    (
        "map-high-filter-low",
        lambda stage: stage.then("map", P.map(identity), HIGH_LOCAL_PARALLELISM).then(
            "filter", P.filter(always_true), LOW_LOCAL_PARALLELISM
        ),
    ),
    (
        "map-low-filter-high",
        lambda stage: stage.then("map", P.map(identity), LOW_LOCAL_PARALLELISM).then(
            "filter", P.filter(always_true), HIGH_LOCAL_PARALLELISM
        ),
    ),
]


@pytest.fixture(params=TRANSFORMS, ids=[name for name, _ in TRANSFORMS])
def transform(request: Any) -> Transform:
    return request.param[1]


def run(dag: DAG) -> Any:
    return LocalRunner(1).run(dag, JobConfig(), timeout=TIMEOUT)


def in_range(low: int, high: int) -> Callable[[int], bool]:
    return lambda i: low <= i < high


def test_OrderedBatchProcessingTest__when_source_is_non_partitioned(transform: Transform) -> None:
    sequence = list(range(ITEM_COUNT))
    dag = DAG()
    src_stage = Stage(dag, dag.new_vertex("items", P.from_iterable(sequence), 1), 1)
    applied = transform(src_stage)
    sink = applied.then("filter", P.filter(in_range(0, ITEM_COUNT))).assert_ordered("sink")
    assert run(dag).result(sink) == sequence


def test_OrderedBatchProcessingTest__when_source_is_parallel(transform: Transform) -> None:
    sequences = [list(range(k * ITEM_COUNT, (k + 1) * ITEM_COUNT)) for k in range(4)]
    dag = DAG()
    source = dag.new_vertex("itemsParallel", ProcessorSupplier.of(lambda: ParallelBatchP(sequences)), 4)
    applied = transform(Stage(dag, source, 4))
    sinks = [
        applied.then("filter", P.filter(in_range(k * ITEM_COUNT, (k + 1) * ITEM_COUNT))).assert_ordered(
            f"sink{k}"
        )
        for k in range(4)
    ]
    job = run(dag)
    for k, sink in enumerate(sinks):
        assert job.result(sink) == sequences[k], f"sequence {k + 1}"

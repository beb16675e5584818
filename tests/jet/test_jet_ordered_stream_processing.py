"""Jet's `OrderedStreamProcessingTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported.

Jet runs each streaming pipeline with `setPreserveOrder(true)` on one member. jetspark has no
Pipeline API; each pipeline is the DAG Jet's planner makes of it with `preserveOrder`: every
transform gets the local parallelism of its upstream (the stage's own "high" 11 or "low" 2 is
ignored, as in Jet's `determineLocalParallelism(..., preserveOrder)`) and is fed by an isolated
edge; Jet's assertion sinks have total parallelism one, behind a distributed all-to-one edge
(`collect()` here, compared after the job). The local runner runs one member.

Sources: Jet's `TestSources.itemStream(5 * 250, (ts, seq) -> seq)` (one processor in the
cluster) is `generator_stream` on one processor at 1250 items per second; Jet's test source
`itemsParallel(rate, [seq -> 4 * seq + i for i in 0..3])` (four processors, processor `i` runs
generator `i`) is `generator_stream` on four processors, whose processor `g` emits the sequence
numbers `g, g + 4, ...` in rising order: the same four streams. Jet's `withIngestionTimestamps()`
is the generator's `timestamp_fn` (the item, rising in each processor), so watermarks flow
through the transforms as in Jet's job.

Differences:
- Jet's streams are endless and its sinks `assertCollectedEventually(60, ...)` end the job with an
  `AssertionCompletedException` once the check holds (first 250 items of each generator,
  compared exactly). Here each generator stops after those 250 items (`count`), the job ends by
  itself and its sinks are compared exactly afterwards: the same check, with no timing.
- `mapStateful(() -> create(4), this::orderValidator)` (no stateful mapping stage in jetspark) is
  `OrderValidatorP`, a processor with the same state and function, on an isolated edge with the
  upstream's local parallelism (Jet's plan of a global `mapStateful` with `preserveOrder`).

Parameters as in `test_jet_ordered_batch_processing.py`. Skipped parameters (no counterpart):
`map-using-imap-*`, `map-using-replicated-map-*`, `map-stateful-global-*` (Jet lists the last
two twice).
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
GENERATOR_COUNT = 4
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


class OrderValidatorP(AbstractProcessor):
    """Jet's `mapStateful(() -> create(generatorCount), this::orderValidator)`: per generator the
    highest value seen; emits False for an item not above it (reordered), else True."""

    def __init__(self, generator_count: int) -> None:
        self.state = [None] * generator_count

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        last = self.state[item % len(self.state)]
        in_order = last is None or last < item
        if not self.try_emit(in_order):
            return False
        if in_order:
            self.state[item % len(self.state)] = item
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
        self.count += 1
        vertex = self.dag.new_vertex(f"{name}-{self.vertex.name}-{self.count}", supplier, self.parallelism)
        self.dag.edge(Edge.from_(self.vertex, self.outbound).to(vertex).isolated())
        self.outbound += 1
        return Stage(self.dag, vertex, self.parallelism)

    def assert_collected(self, name: str) -> str:
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
    (
        "custom-transform-high",
        _one("custom-transform", lambda: ProcessorSupplier.of(IdentityP), HIGH_LOCAL_PARALLELISM),
    ),
    ("filter-high", _one("filter", lambda: P.filter(always_true), HIGH_LOCAL_PARALLELISM)),
    ("map-low", _one("map", lambda: P.map(identity), LOW_LOCAL_PARALLELISM)),
    ("flat-map-low", _one("flat-map", lambda: P.flat_map(singleton), LOW_LOCAL_PARALLELISM)),
    (
        "custom-transform-low",
        _one("custom-transform", lambda: ProcessorSupplier.of(IdentityP), LOW_LOCAL_PARALLELISM),
    ),
    ("filter-low", _one("filter", lambda: P.filter(always_true), LOW_LOCAL_PARALLELISM)),
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


def parallel_source(dag: DAG) -> Stage:
    """Jet's `itemsParallel(5 * 250, generators)` with ingestion timestamps: four processors."""
    source = P.generator_stream(
        count=GENERATOR_COUNT * ITEM_COUNT,
        items_per_second=GENERATOR_COUNT * 5 * ITEM_COUNT,
        timestamp_fn=identity,
    )
    return Stage(dag, dag.new_vertex("itemsParallel", source, GENERATOR_COUNT), GENERATOR_COUNT)


def modulo(k: int) -> Callable[[int], bool]:
    return lambda i: i % GENERATOR_COUNT == k


def test_OrderedStreamProcessingTest__when_source_is_non_partitioned(transform: Transform) -> None:
    sequence = list(range(ITEM_COUNT))
    dag = DAG()
    source = P.generator_stream(count=ITEM_COUNT, items_per_second=5 * ITEM_COUNT, timestamp_fn=identity)
    applied = transform(Stage(dag, dag.new_vertex("itemStream", source, 1), 1))
    sink = applied.assert_collected("sink")
    assert run(dag).result(sink) == sequence


def test_OrderedStreamProcessingTest__when_source_is_parallel(transform: Transform) -> None:
    dag = DAG()
    applied = transform(parallel_source(dag))
    validated = applied.then("map-stateful", ProcessorSupplier.of(lambda: OrderValidatorP(GENERATOR_COUNT)))
    sink = validated.assert_collected("sink")
    flags = run(dag).result(sink)
    assert len(flags) >= ITEM_COUNT
    assert False not in flags, "There is some reordered items in the list"


def test_OrderedStreamProcessingTest__when_source_is_parallel_2(transform: Transform) -> None:
    sequences = [[GENERATOR_COUNT * i + k for i in range(ITEM_COUNT)] for k in range(GENERATOR_COUNT)]
    dag = DAG()
    applied = transform(parallel_source(dag))
    sinks = [applied.then("filter", P.filter(modulo(k))).assert_collected(f"sink{k}") for k in range(4)]
    job = run(dag)
    for k, sink in enumerate(sinks):
        assert job.result(sink) == sequences[k], f"sequence {k + 1}"

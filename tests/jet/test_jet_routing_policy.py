"""Jet's `RoutingPolicyTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

A producer vertex whose processor i emits list i, a consumer vertex whose processors each record
what they received, run on one member (as Jet's test) on the local runner. Each test is named
after the Jet case it ports; every case has a counterpart.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, ProcessorContext, Vertex, traverse_iterable, whole_item
from jetspark.testing import run_dag

NUMBERS_LOW = list(range(0, 4096))
NUMBERS_HIGH = list(range(4096, 8192))
NUMBERS_HIGHEST = list(range(8192, 16384))

_received: dict[int, list[Any]] = defaultdict(list)
_lock = threading.Lock()


class ListsSource(AbstractProcessor):
    """Processor i emits `lists[i]`."""

    def __init__(self, lists: tuple[list[int], ...]) -> None:
        self.lists = lists

    def init_processor(self, context: ProcessorContext) -> None:
        self.items = traverse_iterable(self.lists[context.local_processor_index])

    def complete(self) -> bool:
        return self.emit_from_traverser(self.items)


class CollectPerProcessor(AbstractProcessor):
    def init_processor(self, context: ProcessorContext) -> None:
        self.index = context.global_processor_index

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        with _lock:
            _received[self.index].append(item)
        return True


@pytest.fixture(autouse=True)
def _fresh() -> None:
    _received.clear()


def producer(*lists: list[int]) -> Vertex:
    return Vertex("producer", lambda: ListsSource(lists), len(lists))


def consumer(local_parallelism: int) -> Vertex:
    return Vertex("consumer", CollectPerProcessor, local_parallelism)


def execute(edge: Edge) -> None:
    dag = DAG()
    dag.vertex(edge.source)
    assert edge.destination is not None
    dag.vertex(edge.destination)
    dag.edge(edge)
    run_dag(dag)


def received(index: int) -> list[Any]:
    return _received.get(index, [])


def set_of(*collections: list[Any]) -> set[Any]:
    """The items as a set, after checking that no item came twice."""
    items = [item for collection in collections for item in collection]
    assert len(items) == len(set(items)), "there were some duplicates in the collections"
    return set(items)


def test_RoutingPolicyTest__when_unicast() -> None:
    execute(Edge.between(producer(NUMBERS_LOW, NUMBERS_HIGH), consumer(2)))
    combined = received(0) + received(1)
    assert len(combined) == len(NUMBERS_LOW) + len(NUMBERS_HIGH)
    assert set_of(combined) == set_of(NUMBERS_LOW, NUMBERS_HIGH)


def test_RoutingPolicyTest__when_broadcast() -> None:
    execute(Edge.between(producer(NUMBERS_LOW, NUMBERS_HIGH), consumer(4)).broadcast())
    for index in range(4):
        assert set_of(received(index)) == set_of(NUMBERS_LOW, NUMBERS_HIGH)


def test_RoutingPolicyTest__when_partitioned() -> None:
    execute(
        Edge.between(producer(NUMBERS_LOW, NUMBERS_LOW, NUMBERS_HIGH, NUMBERS_HIGH), consumer(2)).partitioned(
            whole_item
        )
    )
    assert set(received(0)).isdisjoint(received(1))
    assert sorted(received(0) + received(1)) == sorted(NUMBERS_LOW * 2 + NUMBERS_HIGH * 2)


def test_RoutingPolicyTest__when_isolated_downstreamEqualsUpstream() -> None:
    execute(Edge.between(producer(NUMBERS_LOW, NUMBERS_HIGH), consumer(2)).isolated())
    assert received(0) == NUMBERS_LOW
    assert received(1) == NUMBERS_HIGH


def test_RoutingPolicyTest__when_isolated_downstreamGreaterThanUpstream() -> None:
    execute(Edge.between(producer(NUMBERS_LOW, NUMBERS_HIGH), consumer(4)).isolated())
    assert set_of(received(0), received(2)) == set_of(NUMBERS_LOW)
    assert set_of(received(1), received(3)) == set_of(NUMBERS_HIGH)


def test_RoutingPolicyTest__when_isolated_downstreamLowerThanUpstream() -> None:
    execute(Edge.between(producer(NUMBERS_LOW, NUMBERS_HIGH), consumer(1)).isolated())
    assert set_of(received(0)) == set_of(NUMBERS_LOW, NUMBERS_HIGH)


def test_RoutingPolicyTest__when_isolated_downstreamLowerThanUpstream_2() -> None:
    execute(Edge.between(producer(NUMBERS_LOW, NUMBERS_HIGH, NUMBERS_HIGHEST), consumer(2)).isolated())
    assert set_of(received(0)) == set_of(NUMBERS_LOW, NUMBERS_HIGHEST)
    assert set_of(received(1)) == set_of(NUMBERS_HIGH)


def test_RoutingPolicyTest__when_fanout() -> None:
    execute(Edge.between(producer(NUMBERS_LOW, NUMBERS_HIGH), consumer(2)).fanout())
    combined = received(0) + received(1)
    assert len(combined) == len(NUMBERS_LOW) + len(NUMBERS_HIGH)
    assert set_of(combined) == set_of(NUMBERS_LOW, NUMBERS_HIGH)

"""Jet's `RoutingPolicyDistributedTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported:
fanout edges on two members.

On the local runner with 2 members, as Jet's 2-member cluster. Jet's `ListsSourceP(lists)`
(processor i emits `lists[i]`) and `CollectPerProcessorSink` (what each consumer processor
received, by global index) are `ListsSource` and `CollectPerProcessor` below. Each test is
named after the Jet case it ports.

Differences:
- `ListsSource` emits one item per `complete()` call. Jet's outbox hands each item to the
  round-robin alone; jetspark's moves a call's items downstream as one chunk, and round-robin
  goes chunk by chunk (docs/architecture.md, "Queue entries are whole chunks"), so only items
  emitted in calls of their own are dealt to the consumers one by one, as Jet's test expects.

Skipped: `when_distributedToOne_partitioned`, `_broadcast`, `_unicast`, `_isolated`, `_fanout`
and `when_distributedToOne_and_targetMemberMissing`: jetspark has no `Edge.distributeTo(address)`
(its members have no addresses: local runner threads, or Spark tasks that Spark places); a meta
supplier that runs a vertex on one member only does what it is for.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, ProcessorContext, Vertex
from jetspark.runners.local import LocalRunner

MEMBER_COUNT = 2
TIMEOUT = 60

_received: dict[int, list[Any]] = defaultdict(list)
_lock = threading.Lock()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    _received.clear()


class ListsSource(AbstractProcessor):
    """Jet's `ListsSourceP`: the processor of global index i emits `lists[i]`."""

    def __init__(self, lists: tuple[list[int], ...]) -> None:
        self.lists = lists
        self.items: list[int] = []

    def init_processor(self, context: ProcessorContext) -> None:
        self.items = list(self.lists[context.global_processor_index])

    def complete(self) -> bool:
        if self.items and self.try_emit(self.items[0]):
            self.items.pop(0)
        return not self.items


class CollectPerProcessor(AbstractProcessor):
    """Jet's `CollectPerProcessorSink`."""

    def init_processor(self, context: ProcessorContext) -> None:
        self.index = context.global_processor_index

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        with _lock:
            _received[self.index].append(item)
        return True


def received(index: int) -> set[Any]:
    return set(_received.get(index, []))


def execute(edge_fn: Any) -> None:
    dag = DAG()
    producer = dag.vertex(Vertex("producer", lambda: ListsSource(([1, 2], [3, 4])), 1))
    consumer = dag.vertex(Vertex("consumer", CollectPerProcessor, 2))
    dag.edge(edge_fn(Edge.between(producer, consumer)))
    LocalRunner(MEMBER_COUNT).run(dag, timeout=TIMEOUT)


def test_RoutingPolicyDistributedTest__when_local_fanout() -> None:
    execute(lambda edge: edge.fanout())
    assert received(0) == {1}, "items on member0-processor0"
    assert received(1) == {2}, "items on member0-processor1"
    assert received(2) == {3}, "items on member1-processor0"
    assert received(3) == {4}, "items on member1-processor1"


def test_RoutingPolicyDistributedTest__when_distributed_fanout() -> None:
    execute(lambda edge: edge.distributed().fanout())
    assert received(0) == {1, 3}, "items on member0-processor0"
    assert received(1) == {2, 4}, "items on member0-processor1"
    assert received(2) == {1, 3}, "items on member1-processor0"
    assert received(3) == {2, 4}, "items on member1-processor1"

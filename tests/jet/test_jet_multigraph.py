"""Jet's `MultigraphTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

Two edges between the same two vertices: ordinal 0 to ordinal 0 (local), ordinal 1 to ordinal 1
(partitioned by the whole item, distributed). Jet's `ListSource.supplier(input)` is a source with
local parallelism 1 on each member that emits the whole list to every outbound ordinal (Jet's
`emitFromTraverser` offers to all ordinals); Jet's `writeListP` is `processors.collect()`. On 2
members every item must arrive 2 members x 2 edges = 4 times. Jet's 200 000 items; every case
has a counterpart.
"""

from __future__ import annotations

from collections import Counter

from jetspark import DAG, AbstractProcessor, Edge, traverse_iterable, whole_item
from jetspark import processors as P
from jetspark.runners.local import LocalRunner

INPUT = list(range(200_000))


class ListSource(AbstractProcessor):
    """Emits the list to every outbound ordinal, from each of its processors."""

    def __init__(self, items: list[int]) -> None:
        self.traverser = traverse_iterable(items)

    def complete(self) -> bool:
        return self.emit_from_traverser(self.traverser)


def test_MultigraphTest__test() -> None:
    dag = DAG()
    source = dag.new_vertex("source", lambda: ListSource(INPUT), 1)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.from_(source, 0).to(sink, 0))
    dag.edge(Edge.from_(source, 1).to(sink, 1).partitioned(whole_item).distributed())

    job = LocalRunner(2).run(dag, timeout=120)

    num_members, num_edges = 2, 2
    assert Counter(job.result("sink")) == dict.fromkeys(INPUT, num_members * num_edges)

"""Jet's `SlowSourceYieldTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

A source that emits 5 000 items from `complete()` through `emit_from_traverser` must yield (its
`complete()` returns False at least once) instead of emitting everything in one call, so that a
cooperative worker is not held. Jet's traverser sleeps 1 ms per item to make the source slow;
the yield itself comes from the outbox refusing an item once the call's batch is full, which
does not depend on time, so the port has no sleep. One member, local parallelism 1, a `noop`
sink, as Jet's.
"""

from __future__ import annotations

import threading

from jetspark import DAG, AbstractProcessor, Edge, ProcessorContext, traverse_iterable
from jetspark import processors as P
from jetspark.runners.local import LocalRunner

_lock = threading.Lock()
_yields: list[int] = []  # at which item each False from complete() came


class SlowSourceP(AbstractProcessor):
    def init_processor(self, context: ProcessorContext) -> None:
        self.yielded_at = -1
        self.traverser = traverse_iterable(range(5000)).peek(self._note)

    def _note(self, item: int) -> None:
        self.yielded_at = item

    def complete(self) -> bool:
        done = self.emit_from_traverser(self.traverser)
        if not done:
            with _lock:
                _yields.append(self.yielded_at)
        return done


def test_SlowSourceYieldTest__when_slowSource_then_completeYields() -> None:
    _yields.clear()
    dag = DAG()
    source = dag.new_vertex("source", SlowSourceP, 1)
    sink = dag.new_vertex("sink", P.noop(), 1)
    dag.edge(Edge.between(source, sink))
    LocalRunner(1).run(dag, timeout=60)
    assert len(_yields) > 0, "processor never yielded"
    assert all(0 <= at < 4999 for at in _yields)

"""Jet 5.x's `TestSourcesTest` (hazelcast/hazelcast, `com.hazelcast.jet.pipeline.test`): the method
5.x added (the 4.x methods are ported in `test_jet_test_sources.py`, whose `item_stream`,
`AssertCollectedEventuallyP` and `assert_completed` this port reuses: local runner, 2 members).

Added in 5.x: `itemStream_should_handle_extremely_high_rate`: `TestSources.itemStream(
Integer.MAX_VALUE)` with native timestamps (allowed lag 1000 ms) into
`assertCollectedEventually(10, items -> assertFalse(items.isEmpty()))`; the job must end with
`AssertionCompletedException`. Jet's `withNativeTimestamps(1000)` is `insert_watermarks` on the
items' timestamps with `allowed_lag=1000`, on a local edge behind the source.
"""

from __future__ import annotations

from typing import Any

from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.core.suppliers import FirstMemberOnly, ProcessorSupplier
from tests.jet.test_jet_test_sources import (
    AssertCollectedEventuallyP,
    TooFewItemsError,
    assert_completed,
    item_stream,
)

INTEGER_MAX_VALUE = 2**31 - 1


def test_TestSourcesTest__itemStream_should_handle_extremely_high_rate() -> None:
    def check(items: list[Any]) -> None:
        if not items:
            raise TooFewItemsError("TestSources should generate some items")

    dag = DAG()
    source = dag.new_vertex("source", FirstMemberOnly(item_stream(INTEGER_MAX_VALUE)), 1)
    timestamps = dag.new_vertex(
        "timestamps", FirstMemberOnly(P.insert_watermarks(lambda e: e.timestamp, allowed_lag=1000)), 1
    )
    asserting = ProcessorSupplier.of(lambda: AssertCollectedEventuallyP(10, check))
    sink = dag.new_vertex("sink", FirstMemberOnly(asserting), 1)
    dag.edge(Edge.between(source, timestamps))
    dag.edge(Edge.between(timestamps, sink))
    assert_completed(dag)

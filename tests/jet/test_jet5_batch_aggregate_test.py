"""Jet 5.x's `BatchAggregateTest` (hazelcast/hazelcast, `com.hazelcast.jet.pipeline`): the method
5.x added (the 4.x methods are ported in `test_jet_batch_aggregate.py`, whose two-stage
aggregation job and `MAX_BY` (Jet's `maxBy`) this port reuses: local runner, 2 members, local
parallelism 2).

Added in 5.x: `when_maxOfOneItems_then_producesOutput`: `batchStageFromList(List.of(1))
.aggregate(maxBy(naturalOrder()))` gives `[1]`. As Jet's comment says, the execution path depends
on which member runs the accumulating processor that gets the item and which runs the combining
one: every other accumulating processor sends an empty accumulator to be combined with it.
"""

from __future__ import annotations

from tests.jet.test_jet_batch_aggregate import MAX_BY, aggregate_job


def test_BatchAggregateTest__when_maxOfOneItems_then_producesOutput() -> None:
    assert aggregate_job([1], MAX_BY) == [1]

"""Jet's `WriteLoggerPTest` (`impl.connector`) and `Processors_globalAggregationIntegrationTest`
(`impl.processor`), ported.

Each test is named after the Jet case it ports.

Differences:
- `WriteLoggerPTest.test`: Jet logs an item's `toString()`; jetspark's `logger()` logs its
  `repr` (so a str shows its quotes and 1 and "1" differ in the log). Watermarks are logged at
  DEBUG, as Jet's at FINE (jetspark did not log them; added for this port).
- `Processors_globalAggregationIntegrationTest.smokeTest`: Jet's job runs on one member and reads
  an `IList` sink; the port runs on the local runner with one member and a collecting sink.
  `summingLong` is `summing()`.
"""

from __future__ import annotations

import logging

import pytest

from jetspark import DAG, Edge, Watermark
from jetspark import processors as P
from jetspark.testing import run_dag
from tests.contract.harness import processor_context
from tests.jet.engine_kit import KitOutbox, inbox_of


def test_WriteLoggerPTest__test(caplog: pytest.LogCaptureFixture) -> None:
    (p,) = P.logger().get(1)
    out = KitOutbox(0, 1)
    p.init(out.outbox, processor_context("log"))
    with caplog.at_level(logging.DEBUG, logger="jetspark.vertex.log"):
        p.process(0, inbox_of(1))
        assert p.try_process_watermark(Watermark(2)) is True
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "1"),
        (logging.DEBUG, repr(Watermark(2))),
    ]
    assert out.outbox.emitted_count == 0 and out.outbox.is_empty()  # nothing offered


@pytest.mark.parametrize(
    "single_stage", [True, False], ids=["singleStageProcessor=true", "singleStageProcessor=false"]
)
def test_Processors_globalAggregationIntegrationTest__smokeTest(single_stage: bool) -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable([1, 2]), 1)
    sink = dag.new_vertex("sink", P.collect())
    if single_stage:
        aggregate = dag.new_vertex("aggregate", P.aggregate(P.summing()), 1)
        dag.edge(Edge.between(source, aggregate).distributed().all_to_one("foo"))
        dag.edge(Edge.between(aggregate, sink).isolated())
    else:
        accumulate = dag.new_vertex("accumulate", P.accumulate(P.summing()))
        combine = dag.new_vertex("combine", P.combine(P.summing()), 1)
        dag.edge(Edge.between(source, accumulate))
        dag.edge(Edge.between(accumulate, combine).distributed().all_to_one("foo"))
        dag.edge(Edge.between(combine, sink).isolated())
    assert run_dag(dag).result("sink") == [3]

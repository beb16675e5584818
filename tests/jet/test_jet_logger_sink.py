"""Jet's `LoggerSinkTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: the logger
sink logs each item.

Jet's pipeline `list source -> map(i -> i + "-shouldBeSeenOnTheSystemOutput") ->
Sinks.logger()` is a DAG `from_iterable([0]) -> map -> processors.logger()` on the local runner
(one member, as Jet's). Jet installs a mock logging factory (`MockLoggingFactory`) and looks
for the message among the captured ones; here a handler on the sink vertex's logger
(`jetspark.vertex.<vertex>`) captures the records. Each test is named after the Jet case it
ports.

Differences, deliberate and documented (docs/processor-contract.md, "Where this differs from
Jet"): `logger()` logs an item's `repr` (Jet: its `toString()`), so the message holds the
string in quotes; Jet's check (the message contains the text) holds either way.

Skipped: none.
"""

from __future__ import annotations

import logging

from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.testing import run_dag


class CapturingHandler(logging.Handler):
    """Jet's `MockLoggingFactory.capturedMessages`."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.captured_messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.captured_messages.append(record.getMessage())


def test_LoggerSinkTest__loggerSink() -> None:
    dag = DAG()
    source = dag.new_vertex("listSource", P.from_iterable([0]))
    mapped = dag.new_vertex("map", P.map(lambda i: f"{i}-shouldBeSeenOnTheSystemOutput"))
    sink = dag.new_vertex("loggerSink", P.logger())
    dag.edge(Edge.between(source, mapped))
    dag.edge(Edge.between(mapped, sink))

    logger = logging.getLogger("jetspark.vertex.loggerSink")
    handler = CapturingHandler()
    previous_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        run_dag(dag)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous_level)

    assert any("0-shouldBeSeenOnTheSystemOutput" in message for message in handler.captured_messages), (
        f"no message containing '0-shouldBeSeenOnTheSystemOutput' was found in {handler.captured_messages}"
    )
    assert handler.captured_messages == ["'0-shouldBeSeenOnTheSystemOutput'"]

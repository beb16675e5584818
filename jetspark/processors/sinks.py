"""Sinks: `collect` (hands items to the runner, for tests and small results), `logger`, `noop`.

Sinks take whole inboxes at a time (one `drain_to` per call), accept watermarks without emitting
anything, and keep no state, so they need no snapshot. `collect` is not transactional: after a
restart from a snapshot (not after suspend/resume) it may have received some items twice.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.context import RESULTS_ATTRIBUTE, ProcessorContext
from jetspark.core.inbox import Inbox
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.core.watermark import Watermark


class _SinkP(AbstractProcessor):
    """Base of the sinks: no outbound edge, so watermarks end here."""

    def try_process_watermark(self, watermark: Watermark) -> bool:
        """A sink has nothing downstream to forward a watermark to."""
        return True


class _CollectP(_SinkP):
    """Adds each inbox batch to the runner's result collector under the vertex name."""

    def init_processor(self, context: ProcessorContext) -> None:
        collector = context.attributes.get(RESULTS_ATTRIBUTE)
        if collector is None:
            raise RuntimeError(
                f"vertex {context.vertex_name!r}: collect() needs the runner's result collector in "
                f"ProcessorContext.attributes[{RESULTS_ATTRIBUTE!r}]; this runner provides none"
            )
        self._add = collector.add
        self._vertex = context.vertex_name

    def process(self, ordinal: int, inbox: Inbox) -> None:
        batch: list[Any] = []
        inbox.drain_to(batch)
        self._add(self._vertex, batch)


class _LoggerP(_SinkP):
    """Logs each item with the vertex's logger."""

    def __init__(self, level: int) -> None:
        self._level = level

    def process(self, ordinal: int, inbox: Inbox) -> None:
        logger = self.logger
        if not logger.isEnabledFor(self._level):
            inbox.drain_to([])
            return
        log = logger.log
        level = self._level
        while (item := inbox.poll()) is not None:
            log(level, "%r", item)


class _NoopP(_SinkP):
    """Drops everything."""

    def __init__(self) -> None:
        self._scratch: list[Any] = []

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.drain_to(self._scratch)
        self._scratch.clear()


def collect() -> ProcessorSupplier:
    """Hand every item to the runner; the job handle's `result(vertex_name)` returns them.

    Each `process` call adds its whole batch at once. Not transactional (see the module docstring).
    """
    return ProcessorSupplier.of(_CollectP)


def logger(level: int = logging.INFO) -> ProcessorSupplier:
    """Log each item (`%r`) at `level` with the logger `jetspark.vertex.<vertex name>`."""
    return ProcessorSupplier.of(functools.partial(_LoggerP, level))


def noop() -> ProcessorSupplier:
    """Drop every item (for benchmarks and for DAGs whose output is a side effect)."""
    return ProcessorSupplier.of(_NoopP)

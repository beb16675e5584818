"""AbstractProcessor's shortcuts keep a subclass's own overrides: `init` binds `try_emit` to the
outbox's `offer` only when the subclass left `try_emit` alone."""

from __future__ import annotations

from typing import Any

from jetspark.core import DAG, AbstractProcessor, JobConfig
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.routing import UnicastCollector
from jetspark.planning.pipeline import build_plan
from tests.queues import drain


class Tagging(AbstractProcessor):
    """Overrides try_emit to tag every item: the override must stay in force after init."""

    def try_emit(self, item: Any) -> bool:
        return super().try_emit(("tagged", item))

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)


class Plain(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)


def initialised(processor: AbstractProcessor) -> tuple[OutboxImpl, BoundedQueue]:
    dag = DAG()
    dag.new_vertex("v", lambda: processor, 1)
    context = build_plan(dag, JobConfig(), 1).processor_context("v", 0, 0)
    queue = BoundedQueue(10)
    outbox = OutboxImpl([UnicastCollector([queue])], "v#0", 4)
    processor.init(outbox, context)
    return outbox, queue


def test_a_subclass_overriding_try_emit_keeps_its_own_after_init() -> None:
    processor = Tagging()
    outbox, queue = initialised(processor)
    assert processor.try_process_item(0, 1)
    outbox.flush()
    assert drain(queue) == [("tagged", 1)]


def test_try_emit_of_a_plain_subclass_offers_to_the_outbox_directly() -> None:
    processor = Plain()
    outbox, queue = initialised(processor)
    assert processor.try_emit == outbox.offer  # the bound shortcut: one call per emitted item
    assert processor.try_process_item(0, 1)
    outbox.flush()
    assert drain(queue) == [1]

"""AbstractProcessor's shortcuts keep a subclass's own overrides: `init` binds `try_emit` to the
outbox's `offer` only when the subclass left `try_emit` alone."""

from __future__ import annotations

from typing import Any

from jetspark.core import DAG, AbstractProcessor, JobConfig
from jetspark.core.outbox import Outbox
from jetspark.core.traverser import traverse_iterable
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.routing import UnicastCollector
from jetspark.engine.snapshot import SnapshotEntry, decode_entries
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


class _RoomyOutbox(Outbox):
    """A snapshot bucket that takes `room` entries per call (the base class's one-by-one
    `offer_all_to_snapshot`), as an outbox without a bulk path does."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.left = room
        self.saved: list[tuple[Any, Any]] = []

    def offer_to_snapshot(self, key: Any, value: Any) -> bool:
        if self.left == 0:
            return False
        self.left -= 1
        self.saved.append((key, value))
        return True

    def next_call(self) -> None:
        self.left = self.room

    bucket_count = offer = offer_to = room = offer_batch = has_unfinished_item = None  # type: ignore[assignment]


def test_emit_from_traverser_to_snapshot_offers_in_bulk_and_resumes_at_the_refused_entry() -> None:
    entries = [(key, key * 10) for key in range(40_000)]  # more than a bulk chunk
    processor = Plain()
    outbox = _RoomyOutbox(room=7_000)
    processor.outbox = outbox  # type: ignore[misc]
    saving = traverse_iterable(entries)
    calls = 1
    while not processor.emit_from_traverser_to_snapshot(saving):
        outbox.next_call()
        calls += 1
    assert outbox.saved == entries  # each once, in order
    assert calls == 6  # 40,000 entries at 7,000 a call

    saved: list[SnapshotEntry] = []
    engine_outbox = OutboxImpl([], "p", 1024, saved.extend)
    engine_outbox.allow_snapshot_offers("save_to_snapshot")
    processor.outbox = engine_outbox  # type: ignore[misc]
    saving, calls = traverse_iterable(entries), 1
    while not processor.emit_from_traverser_to_snapshot(saving):  # a chunk of 32,768 a call
        engine_outbox.flush()
        calls += 1
    engine_outbox.flush()
    assert calls == 2
    assert sorted(decode_entries(saved)) == entries

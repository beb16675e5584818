"""A processor that goes on into a later execution with its state (a Spark epoch's state cache):
`ProcessorTasklet.carried_over()` and `go_on()`, driven call by call in two real tasklets.

The next execution's producers are new: they send a completed edge's end again and the
watermark they sent last again. The kept processor must not be told either a second time, and
its new consumers must get the watermark (and idle marker) it sent last before anything else,
once.
"""

from __future__ import annotations

import functools
from typing import Any

from jetspark.core import AbstractProcessor, Watermark
from jetspark.core.watermark import IDLE_MESSAGE
from jetspark.engine.tasklet import CarriedOver
from tests.contract.harness import DONE, TaskletHarness


class Recording(AbstractProcessor):
    """Forwards items and watermarks (the default), recording every call it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def init_processor(self, context: Any) -> None:
        self.calls.append(("init", None))

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.calls.append(("item", item))
        return self.try_emit(item)

    def try_process_watermark(self, watermark: Watermark) -> bool:
        self.calls.append(("watermark", watermark.timestamp))
        return super().try_process_watermark(watermark)

    def complete_edge(self, ordinal: int) -> bool:
        self.calls.append(("complete_edge", ordinal))
        return True


def going_on(processor: Recording, carried: CarriedOver) -> tuple[Any, CarriedOver]:
    return functools.partial(AbstractProcessor._bind, processor), carried


def first_execution(processor: Recording, idle: bool = False) -> TaskletHarness:
    """Edge 0 brings item 1 and watermark 10 (then the idle marker with `idle`); edge 1 ends."""
    first = TaskletHarness(processor, inbound=[(0, 1), (0, 1)], outbound=1)
    first.feed(0, 0, 1, Watermark(10), *([IDLE_MESSAGE] if idle else []))
    first.feed(1, 0, DONE)
    first.run()
    return first


def test_what_a_processor_carries_over_is_what_it_completed_sent_and_was_given() -> None:
    processor = Recording()
    first = first_execution(processor)
    assert first.output() == [1, Watermark(10)]
    assert first.tasklet.carried_over() == CarriedOver(frozenset({1}), ((10, False),), 10)


def test_a_kept_processor_is_not_told_again_and_its_consumers_get_its_last_watermark_first() -> None:
    processor = Recording()
    carried = first_execution(processor).tasklet.carried_over()
    processor.calls.clear()

    second = TaskletHarness(
        processor, inbound=[(0, 1), (0, 1)], outbound=1, go_on=going_on(processor, carried)
    )
    second.feed(0, 0, Watermark(10), 2, Watermark(12))  # the new producer sends its last watermark again
    second.feed(1, 0, DONE)  # and the finished edge's end again
    second.run()

    assert processor.calls == [("item", 2), ("watermark", 12)], (
        "no init, no second complete_edge(1), no 10 again"
    )
    assert second.output() == [Watermark(10), 2, Watermark(12)], "10 replayed once, first"
    assert second.tasklet.carried_over() == CarriedOver(frozenset({1}), ((12, False),), 12)


def test_a_kept_processor_that_went_idle_sends_its_watermark_and_the_idle_marker_again() -> None:
    processor = Recording()
    carried = first_execution(processor, idle=True).tasklet.carried_over()
    assert carried.sent_watermarks == ((10, True),)

    second = TaskletHarness(
        processor, inbound=[(0, 1), (0, 1)], outbound=1, go_on=going_on(processor, carried)
    )
    second.run()
    assert second.output() == [Watermark(10), IDLE_MESSAGE]

    second.feed(0, 0, Watermark(10), 3, Watermark(11))  # the producer wakes up
    second.feed(1, 0, DONE)
    second.run()
    assert second.output() == [3, Watermark(11)], "a rising watermark follows the idle marker"


def test_a_restored_processor_is_given_the_watermark_again() -> None:
    """The contrast: without `go_on` (a processor restored from the store) nothing was given
    before, and the replayed watermark is processed like any other."""
    processor = Recording()
    fresh = TaskletHarness(processor, inbound=[(0, 1), (0, 1)], outbound=1)
    fresh.feed(0, 0, Watermark(10), 2)
    fresh.feed(1, 0, DONE)
    fresh.run()
    assert processor.calls == [("init", None), ("complete_edge", 1), ("watermark", 10), ("item", 2)]
    assert fresh.output() == [Watermark(10), 2]


class KeepsItsOutbox(AbstractProcessor):
    """Takes its outbox's `offer` once, in init, as the contract lets a processor do."""

    def init_processor(self, context: Any) -> None:
        self.send = self.outbox.offer

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.send(item * 10)


def test_a_kept_processor_holding_its_init_outbox_sends_to_the_new_execution() -> None:
    processor = KeepsItsOutbox()
    first = TaskletHarness(processor, inbound=[(0, 1)], outbound=1)
    first.feed(0, 0, 1)
    first.run()
    assert first.output() == [10]
    outbox_before = processor.outbox

    second = TaskletHarness(
        processor,
        inbound=[(0, 1)],
        outbound=1,
        go_on=(functools.partial(AbstractProcessor._bind, processor), first.tasklet.carried_over()),
        outbox_before=outbox_before,
    )
    second.feed(0, 0, 2, 3)
    second.run()
    assert second.output() == [20, 30], "sent to the new execution's queue, not the old one"
    assert first.output() == []
    assert second.tasklet.outbox is outbox_before and processor.outbox is outbox_before
    assert outbox_before.emitted_count == 2, "the execution's figures read the outbox in use"

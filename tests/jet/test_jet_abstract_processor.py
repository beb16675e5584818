"""Jet's `AbstractProcessorTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

As in Jet: an outbox of 4 ordinals taking 1 item each per call (`tests/jet/engine_kit.py`), an
inbox holding one item "x". Jet's `tryProcess(ordinal, item)` is `try_process_item`, `tryEmit`
to ordinals is `try_emit_to`, Jet's `UnsupportedOperationException` is `NotImplementedError`.
Every case has a counterpart; each test is named after the Jet case it ports.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from jetspark import AbstractProcessor, ProcessorContext, singleton_traverser, traverse_items
from tests.jet.engine_kit import KitOutbox, inbox_of, init

ITEM = "x"
ORDINALS = 4


class Registering(AbstractProcessor):
    """Records which ordinal's handler saw which item."""

    def __init__(self) -> None:
        self.init_called = False
        self.received: list[Any] = [None] * 6

    def init_processor(self, context: ProcessorContext) -> None:
        self.init_called = True

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.received[ordinal] = item
        return True

    def assert_received_only(self, ordinal: int, item: Any) -> None:
        assert self.received == [item if i == ordinal else None for i in range(6)]


class ByOrdinal(Registering):
    """Overrides try_process0..4; only ordinal 5 may reach try_process_item."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        assert ordinal == 5
        return super().try_process_item(ordinal, item)

    def try_process0(self, item: Any) -> bool:
        self.received[0] = item
        return True

    def try_process1(self, item: Any) -> bool:
        self.received[1] = item
        return True

    def try_process2(self, item: Any) -> bool:
        self.received[2] = item
        return True

    def try_process3(self, item: Any) -> bool:
        self.received[3] = item
        return True

    def try_process4(self, item: Any) -> bool:
        self.received[4] = item
        return True


class NothingOverridden(AbstractProcessor):
    pass


@pytest.fixture
def out() -> KitOutbox:
    return KitOutbox(ORDINALS, 1)


@pytest.fixture
def p(out: KitOutbox) -> Registering:
    processor = Registering()
    init(processor, out)
    return processor


@pytest.fixture
def by_ordinal(out: KitOutbox) -> ByOrdinal:
    processor = ByOrdinal()
    init(processor, out)
    return processor


def assert_received_at(out: KitOutbox, item: Any, *ordinals: int) -> None:
    """Ordinals in `ordinals` got exactly `item`, the others nothing (Jet's validateReceptionAtOrdinals)."""
    for ordinal in range(ORDINALS):
        assert out.take(ordinal) == ([item] if ordinal in ordinals else []), f"ordinal {ordinal}"


def test_AbstractProcessorTest__when_init_then_customInitCalled(by_ordinal: ByOrdinal) -> None:
    assert by_ordinal.init_called


def test_AbstractProcessorTest__when_init_then_loggerAvailable(p: Registering) -> None:
    assert isinstance(p.logger, logging.Logger)


def test_AbstractProcessorTest__when_customInitThrows_then_initRethrows(out: KitOutbox) -> None:
    class FailingInit(AbstractProcessor):
        def init_processor(self, context: ProcessorContext) -> None:
            raise OSError("unknown host")

    with pytest.raises(OSError, match="unknown host"):
        init(FailingInit(), out)


@pytest.mark.parametrize("ordinal", [0, 1, 2, 3, 4])
def test_AbstractProcessorTest__when_processInboxN_then_tryProcessNCalled(
    by_ordinal: ByOrdinal, ordinal: int
) -> None:
    """Jet's `when_processInbox0_then_tryProcess0Called` ... `when_processInbox4_...` (five cases)."""
    inbox = inbox_of(ITEM)
    by_ordinal.process(ordinal, inbox)
    assert inbox.is_empty()
    by_ordinal.assert_received_only(ordinal, ITEM)


def test_AbstractProcessorTest__when_processInbox5_then_tryProcessCalled(by_ordinal: ByOrdinal) -> None:
    by_ordinal.process(5, inbox_of(ITEM))
    by_ordinal.assert_received_only(5, ITEM)


def test_AbstractProcessorTest__when_processNThrows_then_processRethrows(out: KitOutbox) -> None:
    class Failing(AbstractProcessor):
        def try_process_item(self, ordinal: int, item: Any) -> bool:
            raise OSError("unknown host")

    processor = init(Failing(), out)
    with pytest.raises(OSError, match="unknown host"):
        processor.process(0, inbox_of(ITEM))


def test_AbstractProcessorTest__when_tryProcess_then_unsupportedOperation(out: KitOutbox) -> None:
    processor = init(NothingOverridden(), out)
    assert isinstance(processor, NothingOverridden)
    with pytest.raises(NotImplementedError, match=r"NothingOverridden .* ordinal 0"):
        processor.try_process_item(0, ITEM)


@pytest.mark.parametrize("ordinal", [0, 1, 2, 3, 4])
def test_AbstractProcessorTest__when_tryProcessN_then_delegatesToTryProcess(
    p: Registering, ordinal: int
) -> None:
    """Jet's `when_tryProcess0_then_delegatesToTryProcess` ... `when_tryProcess4_...` (five cases)."""
    assert getattr(p, f"try_process{ordinal}")(ITEM) is True
    p.assert_received_only(ordinal, ITEM)


def test_AbstractProcessorTest__when_tryEmitToAll_then_emittedToAll(p: Registering, out: KitOutbox) -> None:
    assert p.try_emit(ITEM) is True
    assert_received_at(out, ITEM, 0, 1, 2, 3)


def test_AbstractProcessorTest__when_tryEmitTo1_then_emittedTo1(p: Registering, out: KitOutbox) -> None:
    assert p.try_emit_to(1, ITEM) is True
    assert_received_at(out, ITEM, 1)


def test_AbstractProcessorTest__when_tryEmitTo1And2_then_emittedTo1And2(
    p: Registering, out: KitOutbox
) -> None:
    assert p.try_emit_to([1, 2], ITEM) is True
    assert_received_at(out, ITEM, 1, 2)


def test_AbstractProcessorTest__when_emitFromTraverserToAll_then_emittedToAll(
    p: Registering, out: KitOutbox
) -> None:
    assert p.emit_from_traverser(singleton_traverser(ITEM)) is True
    assert_received_at(out, ITEM, 0, 1, 2, 3)


def test_AbstractProcessorTest__when_emitFromTraverserTo1_then_emittedTo1(
    p: Registering, out: KitOutbox
) -> None:
    traverser = traverse_items(ITEM, ITEM)
    calls = 0
    while True:
        calls += 1
        done = p.emit_from_traverser(traverser, 1)
        assert_received_at(out, ITEM, 1)  # one item per call: the outbox takes one
        if done:
            break
    assert calls == 2


def test_AbstractProcessorTest__when_emitFromTraverserTo1And2_then_emittedTo1And2(
    p: Registering, out: KitOutbox
) -> None:
    traverser = traverse_items(ITEM, ITEM)
    calls = 0
    while True:
        calls += 1
        done = p.emit_from_traverser(traverser, [1, 2])
        assert_received_at(out, ITEM, 1, 2)
        if done:
            break
    assert calls == 2


def test_AbstractProcessorTest__when_flatMapperTryProcessTo1And2_then_emittedTo1And2(
    p: Registering, out: KitOutbox
) -> None:
    mapper = p.flat_mapper(lambda _x: traverse_items(1, 2), [1, 2])
    assert mapper.try_process(ITEM) is False
    assert_received_at(out, 1, 1, 2)
    assert mapper.try_process(ITEM) is True
    assert_received_at(out, 2, 1, 2)


def test_AbstractProcessorTest__when_flatMapperTo1_then_emittedTo1(p: Registering, out: KitOutbox) -> None:
    mapper = p.flat_mapper(lambda _x: singleton_traverser(42), 1)
    assert mapper.try_process(ITEM) is True
    assert_received_at(out, 42, 1)


def test_AbstractProcessorTest__when_flatMapperToAll_then_emittedToAll(
    p: Registering, out: KitOutbox
) -> None:
    mapper = p.flat_mapper(lambda _x: singleton_traverser(42))
    assert mapper.try_process(ITEM) is True
    assert_received_at(out, 42, 0, 1, 2, 3)

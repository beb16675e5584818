"""Review s17 of the test kit against Hazelcast Jet's `TestSupport` (hazelcast-jet, HEAD 60c713a,
hazelcast-jet-core/src/main/java/com/hazelcast/jet/core/test/TestSupport.java, with TestOutbox.java
and impl/execution/OutboxImpl.java, which TestSupport's outbox delegates to).

The `xfail(strict=True)` tests are gaps: a broken processor, written as a user would, that Jet's
TestSupport reports and `verify_processor` passes; each fails now and passes once the kit catches
it. The other tests pin Jet TestSupport behaviours the kit matches that tests/testing did not test
yet. Pure Python, no Spark, no sleeps.
"""

from __future__ import annotations

from typing import Any

import pytest

from jetspark import AbstractProcessor, Watermark, traverse_iterable
from jetspark.core.config import JobConfig
from jetspark.core.errors import ProcessorContractError
from jetspark.engine.list_inbox import ListInbox
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.testing import FailureKind, ProcessorVerificationError, verify_processor
from jetspark.testing._capture import CapturingCollector
from jetspark.testing._context import ContextSettings, Layout, processor_context

WM = Watermark


class Engine:
    """One processor on the engine's own `OutboxImpl` (capacity 1) whose downstream queue the test
    fills and drains: the evidence that each gap's processor is really broken in jetspark."""

    def __init__(self, processor_class: type[AbstractProcessor], capacity: int = 1) -> None:
        self.downstream = CapturingCollector(capacity)
        self.entries: list[Any] = []
        self.outbox = OutboxImpl([self.downstream], "p", capacity, self.entries.extend)
        settings = ContextSettings(
            vertex_name="v", job_id="j", job_config=JobConfig(), partition_count=271, attributes={}
        )
        self.processor = processor_class()
        self.processor.init(self.outbox, processor_context(settings, Layout(), 0, 0, "e"))
        self.received: list[Any] = []

    def feed(self, items: list[Any]) -> None:
        inbox = ListInbox()
        inbox.fill(items)
        while not inbox.is_empty():
            self.processor.process(0, inbox)
            self.end_call()

    def end_call(self) -> None:
        self.outbox.flush()

    def drain(self) -> None:
        self.received.extend(self.downstream.take())


# ---- gap 1: try_process_watermark is never called with a full outbox ----------------------------


class OnePerCallWindowFlush(AbstractProcessor):
    """Buffers items; on a watermark flushes them one per call, ignoring what `try_emit` returns
    (its author assumed "the outbox is drained between calls, so the first offer of a call always
    fits"), then forwards the watermark."""

    def init_processor(self, context: Any) -> None:
        self.buffered: list[Any] = []

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.buffered.append(item)
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if self.buffered:
            self.try_emit(self.buffered.pop(0))  # BUG: a refused item is dropped
            return False
        return self.try_emit(watermark)

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot("buffered", list(self.buffered))

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.buffered = value


class OnePerCallMap(AbstractProcessor):
    """The same bug in `process()`: one item per call, the offer's result ignored."""

    def process(self, ordinal: int, inbox: Any) -> None:
        self.try_emit(inbox.poll())  # BUG: a refused item is dropped


def test_gap1_dropping_an_item_refused_in_try_process_watermark_is_caught() -> None:
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(OnePerCallWindowFlush).disable_redistribution().input(
            [1, 2, 3, WM(10)]
        ).expect_output([1, 2, 3, WM(10)])
    assert failure.value.kind in (FailureKind.IGNORES_REJECTED_OFFER, FailureKind.WRONG_OUTPUT)


def test_gap1_evidence_the_engine_drops_the_item_when_downstream_is_full() -> None:
    engine = Engine(OnePerCallWindowFlush)
    engine.feed([1, 2, 3])
    engine.downstream.offer_items(["another producer's item"])  # the queue is full
    assert engine.processor.try_process_watermark(WM(10)) is False  # 1 waits in the outbox
    engine.end_call()
    with pytest.raises(ProcessorContractError, match="offered 3 after the outbox rejected 2"):
        for _ in range(3):  # 2 is refused (the outbox still holds 1) and dropped
            engine.processor.try_process_watermark(WM(10))
            engine.end_call()


def test_gap1_contrast_the_same_bug_in_process_is_caught() -> None:
    """Jet TestSupport.java:611-617 and the kit both call process() again with the outbox full."""
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(OnePerCallMap).input([1, 2, 3]).expect_output([1, 2, 3])
    assert failure.value.kind is FailureKind.IGNORES_REJECTED_OFFER, str(failure.value)
    assert "again, with the outbox still full" in str(failure.value)


# ---- gap 2: a watermark takes no outbox capacity in the kit ------------------------------------


class FlushThenIgnoreWatermarkOffer(AbstractProcessor):
    """Sums items; on a watermark emits the sum (honouring back-pressure), then forwards the
    watermark ignoring whether the outbox took it, and returns True."""

    def init_processor(self, context: Any) -> None:
        self.total = 0
        self.pending = False

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.total += item
        self.pending = True
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if self.pending:
            if not self.try_emit(("sum", self.total)):
                return False
            self.pending = False
        self.try_emit(watermark)  # BUG: the result is ignored; a refused watermark is lost
        return True

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot("state", (self.total, self.pending))

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.total, self.pending = value


class ItemThenWatermarkSource(AbstractProcessor):
    """A source emitting item n then watermark n per complete() call; the watermark's offer result
    is ignored."""

    def init_processor(self, context: Any) -> None:
        self.next = 0

    def complete(self) -> bool:
        if self.next == 3:
            return True
        if not self.try_emit(self.next):
            return False
        self.try_emit(Watermark(self.next))  # BUG: a refused watermark is lost
        self.next += 1
        return False

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot("next", self.next)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.next = value


@pytest.mark.xfail(
    strict=True,
    reason="Jet's TestOutbox (TestOutbox.java:80-98, capacity 1, TestSupport.java:723-725) queues a "
    "Watermark like an item, so after the sum the watermark offer is refused and the lost watermark "
    "fails the output check (or OutboxImpl.java:116-118's re-offer assertion); the kit's outbox sends "
    "watermarks past the capacity (offer_special after flushing the buffer), so the offer succeeds",
)
def test_gap2_ignoring_a_refused_watermark_offer_after_an_item_is_caught() -> None:
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(FlushThenIgnoreWatermarkOffer).disable_redistribution().input(
            [1, 2, WM(10), 3, WM(20)]
        ).expect_output([("sum", 3), WM(10), ("sum", 6), WM(20)])
    assert failure.value.kind in (FailureKind.IGNORES_REJECTED_OFFER, FailureKind.WRONG_OUTPUT)


@pytest.mark.xfail(
    strict=True,
    reason="Jet: item n fills the capacity-1 TestOutbox, watermark n is refused and left unfinished; "
    "the next complete() offers item n+1, failing OutboxImpl.java:116-118 ('Different item offered') "
    "and the output check; the kit accepts the watermark past the capacity",
)
def test_gap2_a_source_ignoring_a_refused_watermark_from_complete_is_caught() -> None:
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(ItemThenWatermarkSource).disable_redistribution().expect_output(
            [0, WM(0), 1, WM(1), 2, WM(2)]
        )
    assert failure.value.kind in (FailureKind.IGNORES_REJECTED_OFFER, FailureKind.WRONG_OUTPUT)


def test_gap2_evidence_the_engine_refuses_the_watermark_when_downstream_is_full() -> None:
    engine = Engine(FlushThenIgnoreWatermarkOffer)
    engine.feed([1, 2])
    engine.downstream.offer_items(["another producer's item"])
    assert engine.processor.try_process_watermark(WM(10)) is True
    assert engine.outbox.unfinished_item == WM(10)  # refused, yet the processor returned True
    source = Engine(ItemThenWatermarkSource)
    source.downstream.offer_items(["another producer's item"])
    assert source.processor.complete() is False
    assert source.outbox.unfinished_item == WM(0)
    source.end_call()
    source.drain()
    with pytest.raises(ProcessorContractError, match=r"offered 1 after the outbox rejected Watermark"):
        source.processor.complete()


# ---- gap 3: bulk snapshot offers bypass the snapshot bucket's capacity -------------------------


class Counts(AbstractProcessor):
    """Counts items per key and emits the counts from complete()."""

    def init_processor(self, context: Any) -> None:
        self.counts: dict[Any, int] = {}
        self._out: Any = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.counts[item] = self.counts.get(item, 0) + 1
        return True

    def complete(self) -> bool:
        if self._out is None:
            self._out = traverse_iterable(sorted(self.counts.items()))
        return self.emit_from_traverser(self._out)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.counts[key] = value


class FreshTraverserEverySave(Counts):
    """Jet's classic snapshot bug: a new traverser on every save_to_snapshot() call, so a save
    that needs several calls starts over each time."""

    def save_to_snapshot(self) -> bool:
        return self.emit_from_traverser_to_snapshot(traverse_iterable(list(self.counts.items())))


class FreshIterationEverySave(Counts):
    """The same bug written with try_emit_to_snapshot in a loop."""

    def save_to_snapshot(self) -> bool:
        return all(self.try_emit_to_snapshot(key, count) for key, count in self.counts.items())


COUNTS_INPUT = ["a", "b", "a", "c", "b", "a"]
COUNTS_OUTPUT = [("a", 3), ("b", 2), ("c", 1)]


def test_gap3_a_fresh_snapshot_traverser_per_save_call_is_caught() -> None:
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(FreshTraverserEverySave).partitioned_input(str).input(COUNTS_INPUT).expect_output(
            COUNTS_OUTPUT
        )
    assert failure.value.kind in (FailureKind.IGNORES_REJECTED_OFFER, FailureKind.NEVER_FINISHES)


def test_gap3_on_the_engine_a_fresh_traverser_after_an_unfinished_save_call_is_a_contract_error() -> None:
    """Beyond SNAPSHOT_CHUNK (32768) keys the save returns False; a fresh traverser on the next
    call would start it over for ever (the same chunk again and again, the snapshot growing): the
    second call is refused with an error naming the rule instead."""
    engine = Engine(FreshTraverserEverySave, capacity=1024)
    engine.processor.counts = {key: 1 for key in range(40_000)}  # type: ignore[attr-defined]
    engine.outbox.allow_snapshot_offers("save_to_snapshot")
    assert engine.processor.save_to_snapshot() is False
    engine.end_call()
    with pytest.raises(
        ProcessorContractError, match="new traverser while the one of its previous call was not done"
    ):
        engine.processor.save_to_snapshot()


def test_gap3_contrast_restarting_a_try_emit_to_snapshot_loop_is_caught() -> None:
    """Jet OutboxImpl.java:195-200 ("Different key offered after previous call returned false")."""
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(FreshIterationEverySave).input(COUNTS_INPUT).expect_output(COUNTS_OUTPUT)
    assert failure.value.kind is FailureKind.IGNORES_REJECTED_OFFER, str(failure.value)
    assert "save_to_snapshot" in str(failure.value)


# ---- gap 4: no executeBeforeEachRun ------------------------------------------------------------

#: What the sinks below write to: an external store the test checks, as with a real sink.
STORE: list[Any] = []


class DuplicatingSink(AbstractProcessor):
    """A sink writing every item twice to the external store."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        STORE.append(item)
        STORE.append(item)
        return True


class Sink(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        STORE.append(item)
        return True


def store_holds(expected: list[Any]) -> Any:
    def check(mode: str, outputs: list[list[Any]]) -> None:
        assert outputs == [], outputs
        assert expected == STORE, f"{mode}: the sink wrote {STORE}"

    return check


def test_gap4_a_sink_writing_twice_is_caught_with_a_reset_before_each_run() -> None:
    STORE.clear()
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(DuplicatingSink).input([1, 2, 3]).execute_before_each_run(STORE.clear).assert_output(
            0, store_holds([1, 2, 3])
        )
    assert failure.value.kind is FailureKind.WRONG_OUTPUT


def test_gap4_workaround_assert_fn_runs_once_per_mode_after_the_run() -> None:
    """Clearing the store in the assert_fn works today (it is called once per mode, after it)."""
    calls = []

    def check_and_reset(mode: str, outputs: list[list[Any]]) -> None:
        calls.append(mode)
        try:
            store_holds([1, 2, 3])(mode, outputs)
        finally:
            STORE.clear()

    STORE.clear()
    verification = verify_processor(Sink).input([1, 2, 3]).assert_output(0, check_and_reset)
    assert calls == verification.modes
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(DuplicatingSink).input([1, 2, 3]).assert_output(0, check_and_reset)
    assert failure.value.kind is FailureKind.WRONG_OUTPUT
    assert "the sink wrote [1, 1, 2, 2, 3, 3]" in str(failure.value)


# ---- Jet TestSupport behaviours the kit matches (not tested elsewhere in tests/testing) --------


class LazyState(AbstractProcessor):
    """Creates its state with the first item; save_to_snapshot assumes it exists."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not hasattr(self, "seen"):
            self.seen: list[Any] = []
        self.seen.append(item)
        return self.try_emit(item)

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot("seen", self.seen)  # BUG: before the first item

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.seen = value


def test_a_snapshot_is_taken_before_the_first_item() -> None:
    """Jet TestSupport.java:580-581: snapshot (+ restore) right after init, before any input."""
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(LazyState).input([1, 2]).expect_output([1, 2])
    message = str(failure.value)
    assert "save_to_snapshot() raised AttributeError" in message, message
    assert "snapshot 1 at point 1" in message
    assert "process(" not in message.split("last calls")[1]


class FirstItemOnly(AbstractProcessor):
    """Handles the first item of the inbox and clears the rest."""

    def process(self, ordinal: int, inbox: Any) -> None:
        if self.try_emit(inbox.peek()):
            inbox.clear()  # BUG: drops the rest of a batch


def test_the_large_inbox_mode_catches_a_processor_dropping_the_rest_of_a_batch() -> None:
    """Jet TestSupport.java:369-372 (inboxLimit 1024); the inbox-1 modes pass it."""
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(FirstItemOnly).input([1, 2, 3]).expect_output([1, 2, 3])
    assert failure.value.kind is FailureKind.WRONG_OUTPUT
    assert failure.value.mode == "inbox 1024, outbox capacity 1, no snapshots"
    assert "passing modes: inbox 1, outbox capacity 1, no snapshots;" in str(failure.value)


class NoProgressSave(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)

    def save_to_snapshot(self) -> bool:
        return False


class NoProgressRestore(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot("k", 1)

    def restore_from_snapshot(self, inbox: Any) -> None:
        pass  # takes nothing


class NoProgressFinishRestore(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)

    def finish_snapshot_restore(self) -> bool:
        return False


@pytest.mark.parametrize(
    ("processor", "method"),
    [
        (NoProgressSave, "save_to_snapshot"),  # Jet TestSupport.java:776-778
        (NoProgressRestore, "restore_from_snapshot"),  # Jet :799-802
        (NoProgressFinishRestore, "finish_snapshot_restore"),  # Jet :809-810
    ],
)
def test_snapshot_methods_without_progress_are_caught(processor: Any, method: str) -> None:
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(processor).input([1]).expect_output([1])
    assert failure.value.kind is FailureKind.NO_PROGRESS, str(failure.value)
    assert f"{method}() call without progress" in str(failure.value)


class FlushOnComplete(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)

    def complete(self) -> bool:
        return self.try_emit("END")


def test_disable_complete_call_never_calls_complete() -> None:
    """Jet TestSupport.java:452-455, :629."""
    verify_processor(FlushOnComplete).disable_redistribution().input([1, 2]).expect_output([1, 2, "END"])
    verify_processor(FlushOnComplete).disable_complete_call().input([1, 2]).expect_output([1, 2])
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(FlushOnComplete).disable_redistribution().input([1, 2]).expect_output([1, 2])
    assert failure.value.kind is FailureKind.WRONG_OUTPUT


class FiniteSource(AbstractProcessor):
    def init_processor(self, context: Any) -> None:
        self.next = 0

    def complete(self) -> bool:
        if self.next < 3:
            if self.try_emit(self.next):
                self.next += 1
            return False
        return True

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot("next", self.next)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.next = value


def test_complete_returning_true_in_run_until_output_matches_is_reported() -> None:
    """Jet TestSupport.java:667-668 ("complete returned true in a run-until-output-matches mode")."""
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(FiniteSource).disable_redistribution().run_until_output_matches(
            5.0, 0.0
        ).expect_output([0, 1, 2])
    assert failure.value.kind is FailureKind.CONTRACT, str(failure.value)
    assert "complete() returned True in a run-until-output-matches verification" in str(failure.value)
    verify_processor(FiniteSource).disable_redistribution().expect_output([0, 1, 2])


class FallingWatermarks(AbstractProcessor):
    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.try_emit(Watermark(100 - watermark.timestamp))  # BUG: 90, then 80


def test_a_falling_output_watermark_is_caught() -> None:
    """Jet OutboxImpl.java:165-166 asserts output watermarks do not fall."""
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(FallingWatermarks).input([WM(10), WM(20)]).expect_output([WM(90), WM(80)])
    assert failure.value.kind is FailureKind.CONTRACT, str(failure.value)
    assert "watermark 80 offered to ordinal 0 is not greater than the previous one (90)" in str(failure.value)


class PlusOne(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item + 1)


def test_a_wrong_output_message_names_mode_input_expected_and_actual() -> None:
    """Jet TestSupport.java:681-683 says 'processor output in mode "..." doesn't match', expected,
    actual; the kit says that and more."""
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(PlusOne).input([1, 2, 3]).expect_output([1, 2, 3])
    error = failure.value
    lines = str(error).splitlines()
    assert lines[0] == '[WRONG OUTPUT] PlusOne failed in mode "inbox 1, outbox capacity 1, no snapshots"'
    assert error.mode == "inbox 1, outbox capacity 1, no snapshots"
    assert "  ordinal 0 (priority 0): [1, 2, 3]  (3 items)" in lines
    assert "  expected: [1, 2, 3]  (3 items)" in lines
    assert "  actual:   [2, 3, 4]  (3 items)" in lines
    assert "  -1" in lines and "  +4" in lines  # the diff
    assert any(line.startswith("failing modes: inbox 1, outbox capacity 1, no snapshots;") for line in lines)


def test_a_call_violation_message_names_mode_input_call_and_output_so_far() -> None:
    """For a broken call rule the message shows the rule, the mode, the input, the output so far and
    the calls (the expected output is not shown: see the report)."""
    with pytest.raises(ProcessorVerificationError) as failure:
        verify_processor(OnePerCallMap).input([1, 2, 3]).expect_output([1, 2, 3])
    message = str(failure.value)
    assert message.startswith('[IGNORES A REJECTED OFFER] OnePerCallMap failed in mode "inbox 1024, outbox')
    assert "offered 3 after the outbox rejected 2" in message, message
    assert "  ordinal 0 (priority 0): [1, 2, 3]  (3 items)" in message
    assert "output so far:\n  ordinal 0: [1]  (1 item)" in message
    assert "process(0, inbox [1, 2, 3]) -> None, inbox 3 -> 2" in message
    assert "process(0, inbox [2, 3]; again, with the outbox still full)" in message
    assert "process(0, inbox [3]) -> raised" in message


def test_execute_before_each_run_resets_before_every_mode_so_a_correct_sink_passes() -> None:
    """A sink writing each item once passes when the store is reset before each mode (without the
    reset the store would hold every mode's items)."""
    STORE.clear()
    resets = []

    def reset() -> None:
        resets.append(len(STORE))
        STORE.clear()

    verify_processor(Sink).input([1, 2, 3]).execute_before_each_run(reset).assert_output(
        0, store_holds([1, 2, 3])
    )
    assert len(resets) > 1 and resets[0] == 0 and all(size == 3 for size in resets[1:]), resets


def test_execute_before_each_run_wants_a_callable() -> None:
    with pytest.raises(TypeError, match="execute_before_each_run"):
        verify_processor(Sink).execute_before_each_run(None)  # type: ignore[arg-type]

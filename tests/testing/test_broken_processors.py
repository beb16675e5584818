"""Each class of broken processor is caught, with a message that names the class.

The broken processors are deliberately small variations of correct ones (conftest.py), so that
each test shows one bug and the kit's verdict on it.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kit_examples import CountByKey, Dedup

from jetspark import BroadcastKey, Inbox, Watermark, traverse_iterable
from jetspark.testing import FailureKind, ProcessorVerificationError, verify_processor


def failure_of(verifier_run: Any) -> ProcessorVerificationError:
    with pytest.raises(ProcessorVerificationError) as info:
        verifier_run()
    return info.value


def assert_names_class(error: ProcessorVerificationError, kind: FailureKind) -> None:
    assert error.kind is kind, str(error)
    assert str(error).startswith(f"[{kind.value.upper()}]"), str(error)


# ---- loses state on restore ----------------------------------------------------------------


class ForgetfulDedup(Dedup):
    """Saves nothing: after a restore it emits duplicates."""

    def save_to_snapshot(self) -> bool:
        return True


def test_losing_state_on_restore_is_caught() -> None:
    error = failure_of(
        lambda: verify_processor(ForgetfulDedup).input([1, 2, 1, 3, 2]).expect_output([1, 2, 3])
    )
    assert_names_class(error, FailureKind.LOSES_STATE_ON_RESTORE)
    assert "snapshot + restore" in error.mode
    assert "unexpected" in str(error) or "+" in str(error)


class HalfRestoringDedup(Dedup):
    """Restores only some of the entries: state is lost on restore although it is saved."""

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if key % 2 == 0:
            self.seen.add(key)


def test_partial_restore_is_caught() -> None:
    error = failure_of(lambda: verify_processor(HalfRestoringDedup).input([1, 2, 1, 2]).expect_output([1, 2]))
    assert_names_class(error, FailureKind.LOSES_STATE_ON_RESTORE)


# ---- ignores a rejected offer --------------------------------------------------------------


class DoublerIgnoringOffers(Dedup):
    """Emits each item twice and ignores what offer() returns."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.try_emit(item)
        self.try_emit(item)
        return True


def test_offering_another_item_after_a_rejection_is_caught() -> None:
    error = failure_of(
        lambda: verify_processor(DoublerIgnoringOffers).input([1, 2]).expect_output([1, 1, 2, 2])
    )
    assert_names_class(error, FailureKind.IGNORES_REJECTED_OFFER)
    assert "offered by process()" in str(error)


class BatchDroppingMap(Dedup):
    """Offers the whole inbox with offer_batch and drops it when the batch is refused."""

    def process(self, ordinal: int, inbox: Inbox) -> None:
        items: list[Any] = []
        inbox.drain_to(items)
        self.outbox.offer_batch([x * 10 for x in items])


def test_silently_dropping_a_refused_batch_is_caught() -> None:
    error = failure_of(
        lambda: verify_processor(BatchDroppingMap).input([1, 2, 3]).expect_output([10, 20, 30])
    )
    assert_names_class(error, FailureKind.IGNORES_REJECTED_OFFER)
    assert "outbox capacity 1" in error.mode


class CompletingWithRejectedItem(Dedup):
    """complete() claims to be done although its offer was rejected."""

    def complete(self) -> bool:
        self.try_emit("a")
        self.try_emit("a")  # rejected with capacity 1 ... and forgotten
        return True


def test_returning_true_with_a_rejected_item_is_caught() -> None:
    error = failure_of(
        lambda: verify_processor(CompletingWithRejectedItem).input([]).expect_output(["a", "a"])
    )
    assert_names_class(error, FailureKind.IGNORES_REJECTED_OFFER)
    assert "complete() returned True while the outbox still holds" in str(error)


# ---- emits from snapshot_commit_finish -------------------------------------------------------


class ChattyCommit(Dedup):
    def snapshot_commit_finish(self, success: bool) -> bool:
        return self.try_emit(("committed", success))


def test_emitting_from_snapshot_commit_finish_is_caught() -> None:
    error = failure_of(lambda: verify_processor(ChattyCommit).input([1]).expect_output([1]))
    assert_names_class(error, FailureKind.EMITS_FROM_COMMIT_FINISH)
    assert "snapshot_commit_finish() must not emit" in str(error)


# ---- never makes progress --------------------------------------------------------------------


class Stuck(Dedup):
    def process(self, ordinal: int, inbox: Inbox) -> None:
        pass  # never takes anything


def test_a_process_call_without_progress_is_caught() -> None:
    error = failure_of(lambda: verify_processor(Stuck).input([1]).expect_output([1]))
    assert_names_class(error, FailureKind.NO_PROGRESS)
    assert "process() call without progress" in str(error)


class IdleSource(Dedup):
    def complete(self) -> bool:
        return False


def test_a_complete_call_without_progress_is_caught() -> None:
    error = failure_of(lambda: verify_processor(IdleSource).expect_output([]))
    assert_names_class(error, FailureKind.NO_PROGRESS)
    assert "complete() call without progress" in str(error)


class EndlessSource(Dedup):
    def complete(self) -> bool:
        self.try_emit("more")
        return False


def test_a_method_loop_that_never_ends_is_caught() -> None:
    verifier = verify_processor(EndlessSource).disable_snapshots().call_limit(500)
    error = failure_of(lambda: verifier.expect_output([]))
    assert_names_class(error, FailureKind.NEVER_FINISHES)
    assert "complete() was called 500 times" in str(error)


def test_a_method_loop_that_runs_past_the_timeout_names_the_method_that_did_not_return_true() -> None:
    """Every call makes progress (it emits), so only the time limit can end it; by default 30 s,
    and only the first mode runs into it (the others would take as long)."""
    verifier = verify_processor(EndlessSource).timeout(0.2)
    started = time.monotonic()
    error = failure_of(lambda: verifier.expect_output([]))
    assert_names_class(error, FailureKind.NEVER_FINISHES)
    assert "complete() did not return True within 0.2 s" in str(error)
    assert "the last ones made progress" in str(error)
    assert time.monotonic() - started < 10  # one mode, not every mode, ran into the limit


def test_the_verification_timeout_has_a_default_and_refuses_bad_values() -> None:
    assert verify_processor(EndlessSource).settings.timeout_seconds == 30.0
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0 or None, got -1"):
        verify_processor(EndlessSource).timeout(-1)


# ---- a bool method that returns something else --------------------------------------------------


class ForgetsReturnInComplete(Dedup):
    def complete(self) -> bool:
        self.try_emit("more")  # and no return: None, which would loop as False, forever
        return None  # type: ignore[return-value]


class ForgetsReturnPerItem(Dedup):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.try_emit(item)
        return None  # type: ignore[return-value]


def test_complete_returning_none_is_a_contract_error_naming_class_and_method() -> None:
    error = failure_of(lambda: verify_processor(ForgetsReturnInComplete).expect_output(["more"]))
    assert_names_class(error, FailureKind.CONTRACT)
    assert "ForgetsReturnInComplete.complete() returned None (a forgotten return?)" in str(error)


def test_try_process_item_returning_none_is_a_contract_error_naming_class_and_method() -> None:
    verifier = verify_processor(ForgetsReturnPerItem).input(["a", "b"])
    error = failure_of(lambda: verifier.expect_output(["a", "b"]))
    assert_names_class(error, FailureKind.CONTRACT)
    assert "ForgetsReturnPerItem.try_process_item() returned None (a forgotten return?)" in str(error)


# ---- blocks in a cooperative call ------------------------------------------------------------


class Sleepy(Dedup):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        time.sleep(0.05)
        return super().try_process_item(ordinal, item)


def test_a_blocking_cooperative_call_is_caught() -> None:
    verifier = verify_processor(Sleepy).input([1]).cooperative_time_limit(0.01).disable_snapshots()
    error = failure_of(lambda: verifier.expect_output([1]))
    assert_names_class(error, FailureKind.BLOCKS_COOPERATIVE_CALL)
    assert "process() took" in str(error)


class SleepyNonCooperative(Sleepy):
    def is_cooperative(self) -> bool:
        return False


def test_a_non_cooperative_processor_may_block() -> None:
    verify_processor(SleepyNonCooperative).input([1]).cooperative_time_limit(
        0.01
    ).disable_snapshots().expect_output([1])


# ---- mishandles redistribution of keyed state ------------------------------------------------


class BroadcastingCounter(CountByKey):
    """Saves all counts under one BroadcastKey: restored into several processors, every one of
    them gets all counts, and the counts are emitted several times."""

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(BroadcastKey("counts"), dict(self.counts))

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.counts.update(value)


def test_keyed_state_under_a_broadcast_key_is_caught() -> None:
    verifier = (
        verify_processor(BroadcastingCounter).input(["a", "b", "a", "c"]).partitioned_input(lambda x: x)
    )
    error = failure_of(lambda: verifier.expect_output([("a", 2), ("b", 1), ("c", 1)], any_order=True))
    assert_names_class(error, FailureKind.MISHANDLES_REDISTRIBUTION)
    assert "processors" in error.mode
    assert "partitioned when several processors run" in str(error)


class WrongKeyDedup(Dedup):
    """Dedups (user, event) pairs whose edge is partitioned by user, but saves each pair under the
    pair itself: restored into another number of processors, a pair's state lands on the owner of
    the pair's partition, not on the processor that receives the user's next items."""


def test_state_saved_under_another_key_than_the_partitioning_key_is_caught() -> None:
    pairs = [(user, event) for event in range(3) for user in ("ann", "bob", "cid", "dan")]
    items = pairs + pairs
    verifier = verify_processor(WrongKeyDedup).input(items).partitioned_input(lambda pair: pair[0])
    error = failure_of(lambda: verifier.expect_output(pairs, any_order=True))
    assert_names_class(error, FailureKind.MISHANDLES_REDISTRIBUTION)


# ---- saving a snapshot changes the output ------------------------------------------------------


class ResettingDedup(Dedup):
    def save_to_snapshot(self) -> bool:
        done = super().save_to_snapshot()
        if done:
            self.seen.clear()
        return done


def test_a_snapshot_with_side_effects_is_caught() -> None:
    error = failure_of(lambda: verify_processor(ResettingDedup).input([1, 1]).expect_output([1]))
    assert_names_class(error, FailureKind.SNAPSHOT_CHANGES_OUTPUT)


# ---- plain wrong output and exceptions -----------------------------------------------------------


def test_wrong_output_is_wrong_output() -> None:
    error = failure_of(lambda: verify_processor(Dedup).input([1, 2]).expect_output([2, 1]))
    assert_names_class(error, FailureKind.WRONG_OUTPUT)


class Crashing(Dedup):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        raise KeyError(item)


def test_an_exception_names_the_call_and_keeps_the_cause() -> None:
    error = failure_of(lambda: verify_processor(Crashing).input(["x"]).expect_output([]))
    assert_names_class(error, FailureKind.RAISED)
    assert "process() raised KeyError" in str(error)
    assert isinstance(error.__cause__, KeyError)


class CrashingAfterRestore(Dedup):
    """Restores with a wrong type: later processing raises, only in modes with a restore."""

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.seen = None  # type: ignore[assignment]


def test_an_exception_only_after_restore_is_a_restore_bug() -> None:
    error = failure_of(lambda: verify_processor(CrashingAfterRestore).input([1, 2]).expect_output([1, 2]))
    assert_names_class(error, FailureKind.LOSES_STATE_ON_RESTORE)
    assert isinstance(error.__cause__, TypeError)


def test_watermark_processing_is_checked_like_items() -> None:
    class DropsWatermarks(Dedup):
        def try_process_watermark(self, watermark: Watermark) -> bool:
            return False

    error = failure_of(
        lambda: verify_processor(DropsWatermarks).input([Watermark(1)]).expect_output([Watermark(1)])
    )
    assert_names_class(error, FailureKind.NO_PROGRESS)
    assert "try_process_watermark() call without progress" in str(error)


def test_the_traverser_helper_used_by_the_examples_is_correct() -> None:
    # Sanity check of the base used above: the correct versions pass.
    verify_processor(Dedup).input([1, 2, 1, 3, 2]).partitioned_input(lambda x: x).expect_output([1, 2, 3])
    items = ["a", "b", "a", "c"]
    verify_processor(CountByKey).input(items).partitioned_input(lambda x: x).expect_output(
        [("a", 2), ("b", 1), ("c", 1)], any_order=True
    )
    assert list(iter(traverse_iterable([1]).next, None)) == [1]


# ---- emits after its end -------------------------------------------------------------------


class EmittingFromClose(Dedup):
    """Offers a summary from close(): after complete() returned True, so it would be lost."""

    def close(self) -> None:
        self.outbox.offer("summary")


def test_emitting_from_close_is_caught() -> None:
    error = failure_of(lambda: verify_processor(EmittingFromClose).input([1, 2]).expect_output([1, 2]))
    assert_names_class(error, FailureKind.CONTRACT)
    assert "close(): " in str(error) and "offered 'summary' from close()" in str(error)


class UnnamingDedup(Dedup):
    """Says it names the keys it changed, and names none: an incremental snapshot loses them."""

    def changed_snapshot_keys(self) -> set[Any]:
        return set()


def test_keys_changed_but_not_named_are_caught_by_the_incremental_mode() -> None:
    error = failure_of(
        lambda: verify_processor(UnnamingDedup).input([1, 2, 1, 3, 2]).expect_output([1, 2, 3])
    )
    assert_names_class(error, FailureKind.LOSES_STATE_ON_RESTORE)
    assert (
        error.mode
        == "inbox 1, outbox capacity 1, incremental snapshots (changed_snapshot_keys) at every point, restore at every third"
    )
    assert "failing modes: inbox 1, outbox capacity 1, incremental snapshots" in str(error)
    assert "snapshot + restore at every point;" in str(error).split("passing modes:")[1], (
        "full snapshots pass"
    )

"""What verify_processor does to a processor: modes, input order, watermarks, contexts, options."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import pytest
from kit_examples import CountByKey, Dedup

from jetspark import (
    IDLE_MESSAGE,
    AbstractProcessor,
    JobConfig,
    ProcessingGuarantee,
    ProcessorContext,
    Watermark,
    traverse_items,
)
from jetspark.testing import (
    SAME_ITEMS_ANY_ORDER,
    FailureKind,
    Layout,
    ProcessorVerificationError,
    verify_processor,
)

# ---- modes ---------------------------------------------------------------------------------


def test_a_verification_runs_every_mode() -> None:
    result = verify_processor(Dedup).input([1, 2, 1]).partitioned_input(lambda x: x).expect_output([1, 2])
    assert result.modes == [
        "inbox 1, outbox capacity 1, no snapshots",
        "inbox 1024, outbox capacity 1, no snapshots",
        "inbox 1024, outbox capacity 1024, no snapshots",
        "inbox 1, outbox capacity 1, snapshot at every point, never restored",
        "inbox 1, outbox capacity 1, snapshot + restore at every point",
        "inbox 1, outbox capacity 1, snapshot at every point, restore at every other",
        "inbox 1, outbox capacity 1, restore at every point, alternating 2 processors (2 x 1) <-> 3 processors (1 x 3)",
        "inbox 1, outbox capacity 1, restore at every point, alternating 3 processors (3 x 1) <-> 1 processor (1 x 1)",
    ]
    restores = [r.restores for r in result.results]
    # points: before the input, after each of 3 items, after the end of the input (5 points)
    assert restores == [0, 0, 0, 0, 5, 2, 5, 5]


def test_disabling_snapshots_leaves_the_plain_modes() -> None:
    result = verify_processor(Dedup).input([1]).disable_snapshots().expect_output([1])
    assert [r.mode.group.name for r in result.results] == ["PLAIN"] * 3


def test_a_source_has_no_large_inbox_mode_and_redistribution_can_be_disabled() -> None:
    class Source(AbstractProcessor):
        def complete(self) -> bool:
            return self.try_emit("x")

    result = verify_processor(Source).disable_redistribution().expect_output(["x"])
    assert len(result.results) == 5
    assert all(r.mode.inbox_size == 1 or r.mode.outbox_capacity == 1024 for r in result.results)


def test_snapshot_points_add_a_mode_restoring_exactly_there() -> None:
    result = verify_processor(Dedup).input([1, 2, 3]).snapshot_points({2, 4}, [1]).expect_output([1, 2, 3])
    extra = [r for r in result.results if r.mode.restore_points]
    assert [sorted(r.mode.restore_points) for r in extra] == [[2, 4], [1]]
    assert [r.restores for r in extra] == [2, 1]


def test_redistribution_layouts_can_be_chosen() -> None:
    result = (
        verify_processor(CountByKey)
        .input(list("abcabc"))
        .partitioned_input(lambda x: x)
        .redistribution((Layout(1, 2), Layout(4, 1)))
        .expect_output([("a", 2), ("b", 2), ("c", 2)], any_order=True)
    )
    assert result.modes[-1].endswith("2 processors (1 x 2) <-> 4 processors (4 x 1)")


# ---- input order, edges, watermarks -----------------------------------------------------------


class Tagger(AbstractProcessor):
    """Emits (ordinal, item) for each item and ("done", ordinal) when an edge completes."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit((ordinal, item))

    def complete_edge(self, ordinal: int) -> bool:
        return self.try_emit(("done", ordinal))


def test_lower_priority_ordinals_are_drained_first_and_edges_complete_in_order() -> None:
    verify_processor(Tagger).inputs(
        [["a1", "a2"], ["b1", "b2"]], priorities=[1, 0]
    ).disable_redistribution().expect_output(
        [(1, "b1"), (1, "b2"), ("done", 1), (0, "a1"), (0, "a2"), ("done", 0)]
    )


def test_ordinals_of_one_priority_take_turns_item_by_item() -> None:
    verify_processor(Tagger).inputs([["a1", "a2"], ["b1"], []]).disable_redistribution().expect_output(
        [("done", 2), (0, "a1"), (1, "b1"), ("done", 1), (0, "a2"), ("done", 0)]
    )


def test_watermarks_are_coalesced_across_ordinals_like_the_engine_does() -> None:
    verify_processor(Tagger).inputs(
        [[Watermark(1), "x", Watermark(5)], [Watermark(3)]]
    ).disable_redistribution().expect_output(
        # W1 is forwarded only once ordinal 1 has a watermark too (W3); W5 once ordinal 1 is done
        [Watermark(1), ("done", 1), (0, "x"), Watermark(5), ("done", 0)]
    )


def test_the_idle_marker_is_forwarded_by_the_kit_as_the_tasklet_does() -> None:
    verify_processor(Tagger).input([IDLE_MESSAGE, "x"]).disable_redistribution().expect_output(
        [IDLE_MESSAGE, (0, "x"), ("done", 0)]
    )


def test_input_watermarks_must_rise() -> None:
    with pytest.raises(ValueError, match="watermark 3 after 3"):
        verify_processor(Tagger).input([Watermark(3), Watermark(3)])


def test_broadcast_input_reaches_every_processor() -> None:
    def check(mode: str, outputs: list[list[Any]]) -> None:
        tagged = [x for x in outputs[0] if isinstance(x, tuple) and x[0] == 0]
        if "alternating" in mode:  # several processors: each tags every item
            assert len(tagged) > 2, mode
        else:
            assert tagged == [(0, "a"), (0, "b")], mode

    verify_processor(Tagger).input(["a", "b"]).broadcast_input().assert_output(1, check)


# ---- the processor's context --------------------------------------------------------------------


class ContextReporter(AbstractProcessor):
    def init_processor(self, context: ProcessorContext) -> None:
        self.seen = context

    def complete(self) -> bool:
        c = self.seen
        return self.try_emit(
            (
                c.member_index,
                c.local_processor_index,
                c.global_processor_index,
                c.total_parallelism,
                c.processor_partitions == tuple(p for p in range(c.partition_count) if p % 3 == 2)[1::2],
                c.vertex_name,
                c.snapshotting_enabled,
                c.job_config.name,
            )
        )


def test_the_context_carries_the_configured_indexes_parallelism_and_job_config() -> None:
    def check(mode: str, outputs: list[list[Any]]) -> None:
        snapshots = "no snapshots" not in mode
        assert outputs == [[(2, 1, 5, 6, True, "v", snapshots, "job")]], mode

    (
        verify_processor(ContextReporter)
        .parallelism(local=2, members=3)
        .processor_index(local=1, member=2)
        .job_config(JobConfig(name="job"))
        .vertex_name("v")
        .disable_redistribution()
        .assert_output(1, check)
    )


def test_an_explicit_guarantee_is_kept() -> None:
    config = JobConfig(processing_guarantee=ProcessingGuarantee.AT_LEAST_ONCE)

    class Guarantee(AbstractProcessor):
        def complete(self) -> bool:
            return self.try_emit(self.context.processing_guarantee)

    verify_processor(Guarantee).job_config(config).disable_redistribution().expect_output(
        [ProcessingGuarantee.AT_LEAST_ONCE]
    )


def test_an_index_outside_the_parallelism_is_refused() -> None:
    with pytest.raises(ValueError, match="outside the parallelism"):
        verify_processor(Dedup).processor_index(local=2).parallelism(local=2).expect_output([])


# ---- back-pressure ------------------------------------------------------------------------------


class RoomRecorder(AbstractProcessor):
    """Emits each item twice; records the outbox room at each process() call."""

    rooms: ClassVar[list[int]] = []

    def process(self, ordinal: int, inbox: Any) -> None:
        RoomRecorder.rooms.append(self.outbox.room(0))
        super().process(ordinal, inbox)

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not hasattr(self, "fm"):
            self.fm = self.flat_mapper(lambda x: traverse_items(x, x))
        return self.fm.try_process(item)


def test_process_is_called_again_while_the_outbox_is_still_full() -> None:
    RoomRecorder.rooms.clear()
    verify_processor(RoomRecorder).input([1, 2]).disable_snapshots().expect_output([1, 1, 2, 2])
    assert 0 in RoomRecorder.rooms  # a call with a full outbox happened
    assert 1 in RoomRecorder.rooms


# ---- output checks ------------------------------------------------------------------------------


def test_outputs_per_ordinal() -> None:
    class Splitter(AbstractProcessor):
        def try_process_item(self, ordinal: int, item: Any) -> bool:
            return self.try_emit_to(item % 2, item)

    verify_processor(Splitter).input([1, 2, 3, 4]).expect_outputs([[2, 4], [1, 3]])


def test_a_custom_checker_and_any_order() -> None:
    class Reverser(AbstractProcessor):
        def __init__(self) -> None:
            self.items: list[Any] = []

        def try_process_item(self, ordinal: int, item: Any) -> bool:
            self.items.append(item)
            return True

        def complete(self) -> bool:
            if not hasattr(self, "out"):
                self.out = traverse_items(*reversed(self.items))
            return self.emit_from_traverser(self.out)

        def save_to_snapshot(self) -> bool:
            return self.try_emit_to_snapshot("items", list(self.items))

        def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
            self.items = value

    v = verify_processor(Reverser).input([1, 2, 3]).disable_redistribution()
    v.expect_output([3, 2, 1])
    v.expect_output([1, 2, 3], any_order=True)
    verify_processor(Reverser).input([1, 2, 3]).disable_redistribution().output_checker(
        SAME_ITEMS_ANY_ORDER
    ).expect_output([2, 1, 3])
    with pytest.raises(ProcessorVerificationError) as info:
        verify_processor(Reverser).input([1, 2, 3]).disable_redistribution().expect_output([1, 2, 3])
    assert info.value.kind is FailureKind.WRONG_OUTPUT


def test_watermarks_can_be_ignored_in_the_output() -> None:
    verify_processor(Dedup).input([1, Watermark(2), 1, 3]).partitioned_input(
        lambda x: x
    ).ignore_output_watermarks().expect_output([1, 3])


def test_assert_output_gets_the_mode_and_the_outputs() -> None:
    seen: list[str] = []

    def check(mode: str, outputs: list[list[Any]]) -> None:
        seen.append(mode)
        assert sorted(outputs[0]) == [1, 2]

    verify_processor(Dedup).input([2, 1, 2]).partitioned_input(lambda x: x).assert_output(1, check)
    assert len(seen) == 8


# ---- streaming: run until the output matches ----------------------------------------------------


class Ticker(AbstractProcessor):
    """A streaming source: emits 0, 1, 2 (one per complete() call), then nothing, forever."""

    def __init__(self) -> None:
        self.next = 0

    def complete(self) -> bool:
        if self.next < 3 and self.try_emit(self.next):
            self.next += 1
        return False

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot("next", self.next)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.next = value


def test_run_until_output_matches_for_a_streaming_source() -> None:
    (
        verify_processor(Ticker)
        .disable_progress_assertion()
        .disable_redistribution()
        .run_until_output_matches(timeout=5, extra_time=0.05)
        .expect_output([0, 1, 2])
    )


class RunawayTicker(Ticker):
    def complete(self) -> bool:
        self.try_emit(self.next) and setattr(self, "next", self.next + 1)  # type: ignore[func-returns-value]
        return False


def test_output_that_stops_matching_is_caught() -> None:
    v = (
        verify_processor(RunawayTicker)
        .disable_snapshots()
        .run_until_output_matches(timeout=5, extra_time=0.05)
    )
    with pytest.raises(ProcessorVerificationError, match="matched, but does not match any more"):
        v.expect_output([0, 1, 2])


# ---- logging -------------------------------------------------------------------------------------


def test_calls_are_logged_unless_disabled(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="jetspark.testing"):
        verify_processor(Dedup).input([1]).disable_snapshots().expect_output([1])
    assert any("process(0, inbox [1])" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="jetspark.testing"):
        verify_processor(Dedup).input([1]).disable_snapshots().disable_logging().expect_output([1])
    assert caplog.records == []


class StampOdd(AbstractProcessor):
    """Emits each item, and after an odd one a watermark of its value, in the same call."""

    def __init__(self) -> None:
        self.stamp: Watermark | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if self.stamp is None:
            if not self.try_emit(item):
                return False
            if item % 2 == 0:
                return True
            self.stamp = Watermark(item)
        if not self.try_emit(self.stamp):
            return False
        self.stamp = None
        return True


def test_an_item_behind_a_full_queue_goes_on_before_the_next_call() -> None:
    """With outbox capacity 1, a watermark flushes the item before it into the queue and fills it;
    the next item waits in the outbox buffer. The kit, like the engine's consumers, drains that
    buffer before the next call, so that call is not taken for one without progress."""
    verify_processor(StampOdd).input([1, 2, 3, 4, 5]).disable_redistribution().expect_output(
        [1, Watermark(1), 2, 3, Watermark(3), 4, 5, Watermark(5)]
    )

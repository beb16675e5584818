"""Jet's sliding-window unit tests, ported: `SlidingWindowPTest`, `SlidingWindowP_stage1Test`,
`SlidingWindowP_FrameCombiningTest`, `SlidingWindowP_twoStageSnapshotTest` and
`SlidingWindowP_changeWindowSizeTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.processor`).

Each test is named after the Jet case it ports (`test_<JetClass>__<case>`). The scenarios and the
expected outputs are Jet's; the code is ours, against jetspark's public API: Jet's
`KeyedWindowResult(start, end, key, value)` is our `WindowResult`, a stage-1 frame is our
`FrameEntry(frame_end, key, acc)`, `TestSupport.verifyProcessor` is `jetspark.testing.verify_processor`
(which also runs every case with snapshots, restores and restores into other processor counts,
where Jet's runs disable snapshots). Jet's `@After` checks of the processor's private maps have no
public counterpart and are left out. Where a Jet case drives processors by hand (the snapshot and
window-size tests), the port runs the same steps as jobs on the local runner.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, AbstractProcessor, Edge, JobConfig, Watermark
from jetspark.processors import FrameEntry, WindowPolicy, WindowResult
from jetspark.runners.local import LocalRunner
from jetspark.testing import verify_processor
from tests.waiting import wait_until

KEY = 77


def _add(acc: int, other: int) -> int:
    return acc + other


def _sub(acc: int, other: int) -> int:
    return acc - other


def _add_value(acc: int, item: tuple[int, int]) -> int:
    return acc + item[1]


def _zero() -> int:
    return 0


def _key(_item: Any) -> int:
    return KEY


def summing_values(deduct: bool) -> P.AggregateOperation:
    """Jet's `LongAccumulator` operation over `entry(timestamp, value)` items, with or without deduct."""
    return P.AggregateOperation(
        create=_zero, accumulate=_add_value, combine=_add, deduct=_sub if deduct else None
    )


# ---- SlidingWindowPTest: sliding(4, 1), single stage or stage 2, with and without deduct -------

VARIANTS = [(True, True), (True, False), (False, True), (False, False)]


class SlidingCase:
    """One parameter set of `SlidingWindowPTest`: `event(frame, value)` and `frame(end, value)`."""

    def __init__(self, has_deduct: bool, single_stage: bool) -> None:
        self.single_stage = single_stage
        policy = WindowPolicy.sliding(4, 1)
        op = summing_values(has_deduct)
        if single_stage:
            self.supplier = P.aggregate_to_sliding_window(_key, operator.itemgetter(0), policy, op)
        else:
            self.supplier = P.combine_to_sliding_window(policy, op)

    def event(self, frame_ts: int, value: int) -> Any:
        """An item of the frame ending at `frame_ts`: an event at `frame_ts - 1`, or the frame."""
        if self.single_stage:
            return (frame_ts - 1, value)
        return FrameEntry(frame_ts, KEY, value)

    def verify(self) -> Any:
        key_fn = _key if self.single_stage else P.frame_entry_key
        return verify_processor(self.supplier).partitioned_input(key_fn)


def frame(end: int, value: int) -> WindowResult:
    return WindowResult(end - 4, end, KEY, value)


@pytest.fixture(params=VARIANTS, ids=lambda v: f"hasDeduct={v[0]}-singleStage={v[1]}")
def case(request: Any) -> SlidingCase:
    return SlidingCase(*request.param)


def test_SlidingWindowPTest__when_noFramesReceived_then_onlyEmitWm(case: SlidingCase) -> None:
    case.verify().disable_complete_call().input([Watermark(1)]).expect_output([Watermark(1)])


def test_SlidingWindowPTest__simple_smokeTest(case: SlidingCase) -> None:
    (
        case.verify()
        .disable_complete_call()
        .input([case.event(0, 1), Watermark(3)])
        .expect_output([frame(0, 1), frame(1, 1), frame(2, 1), frame(3, 1), Watermark(3)])
    )


ASCENDING_OUTPUT = [
    frame(0, 1),
    Watermark(0),
    frame(1, 2),
    Watermark(1),
    frame(2, 3),
    Watermark(2),
    frame(3, 4),
    Watermark(3),
    frame(4, 4),
    Watermark(4),
    frame(5, 3),
    Watermark(5),
    frame(6, 2),
    Watermark(6),
    frame(7, 1),
    Watermark(7),
]


def test_SlidingWindowPTest__when_receiveAscendingTimestamps_then_emitAscending(case: SlidingCase) -> None:
    events = [case.event(ts, 1) for ts in range(5)]
    (
        case.verify()
        .disable_complete_call()
        .input(events + [Watermark(ts) for ts in range(8)])
        .expect_output(ASCENDING_OUTPUT)
    )


def test_SlidingWindowPTest__when_receiveDescendingTimestamps_then_emitAscending(case: SlidingCase) -> None:
    events = [case.event(ts, 1) for ts in reversed(range(5))]
    (
        case.verify()
        .disable_complete_call()
        .input(events + [Watermark(ts) for ts in range(8)])
        .expect_output(ASCENDING_OUTPUT)
    )


def test_SlidingWindowPTest__when_receiveRandomTimestamps_then_emitAscending(case: SlidingCase) -> None:
    timestamps = list(range(100))
    random.Random(23).shuffle(timestamps)
    items: list[Any] = [case.event(ts, 1) for ts in timestamps]
    items += [Watermark(ts) for ts in range(106)]
    expected: list[Any] = [frame(0, 1), Watermark(0), frame(1, 2), Watermark(1)]
    expected += [frame(2, 3), Watermark(2), frame(3, 4), Watermark(3)]
    for ts in range(4, 100):
        expected += [frame(ts, 4), Watermark(ts)]
    expected += [frame(100, 3), Watermark(100), frame(101, 2), Watermark(101), frame(102, 1)]
    expected += [Watermark(102), Watermark(103), Watermark(104), Watermark(105)]
    (case.verify().disable_complete_call().disable_logging().input(items).expect_output(expected))


def test_SlidingWindowPTest__when_wmNeverReceived_then_emitEverythingInComplete(case: SlidingCase) -> None:
    (
        case.verify()
        .input([case.event(0, 1), case.event(1, 1)])
        .expect_output([frame(0, 1), frame(1, 2), frame(2, 2), frame(3, 2), frame(4, 1)])
    )


def test_SlidingWindowPTest__when_lateEvent_then_ignored(case: SlidingCase) -> None:
    items = [
        Watermark(10),
        case.event(7, 1),  # late
        case.event(8, 1),  # "partially late": some of its windows are still open, dropped all the same
        case.event(9, 1),
        case.event(10, 1),
        case.event(11, 123),  # the first one on time
    ]
    (
        case.verify()
        .input(items)
        .expect_output([Watermark(10), frame(11, 123), frame(12, 123), frame(13, 123), frame(14, 123)])
    )


# ---- SlidingWindowP_stage1Test: accumulate_by_frame over sliding(16, 4), summing -------------


def stage1() -> Any:
    supplier = P.accumulate_by_frame(
        _key, operator.itemgetter(0), WindowPolicy.sliding(16, 4), summing_values(False)
    )
    return verify_processor(supplier)


def frame_entry(end: int, value: int) -> FrameEntry:
    return FrameEntry(end, KEY, value)


def test_SlidingWindowP_stage1Test__smokeTest() -> None:
    items = [
        (0, 1),  # frame 4
        (1, 1),  # frame 4
        Watermark(4),  # closes frame 4
        (4, 1),  # frame 8
        (5, 1),  # frame 8
        (8, 1),  # frame 12
        (8, 1),  # frame 12
        Watermark(8),  # closes frame 8
        (8, 1),  # frame 12
        Watermark(12),
        Watermark(16),
        Watermark(20),
    ]
    expected = [
        frame_entry(4, 2),
        Watermark(4),
        frame_entry(8, 2),
        Watermark(8),
        frame_entry(12, 3),
        Watermark(12),
        Watermark(16),
        Watermark(20),
    ]
    stage1().disable_complete_call().input(items).expect_output(expected)


def test_SlidingWindowP_stage1Test__when_gapInWmAfterEvent_then_frameAndWmEmitted() -> None:
    (
        stage1()
        .disable_complete_call()
        .input([(0, 1), (1, 1), Watermark(12)])
        .expect_output([frame_entry(4, 2), Watermark(12)])
    )


def test_SlidingWindowP_stage1Test__when_noEvents_then_wmsEmitted() -> None:
    wms = [Watermark(4), Watermark(8), Watermark(12)]
    stage1().disable_complete_call().input(wms).expect_output(wms)


def test_SlidingWindowP_stage1Test__when_batch_then_emitEverything() -> None:
    (
        stage1()
        .input([(0, 1), (4, 1), (8, 1), Watermark(4)])
        .expect_output([frame_entry(4, 1), Watermark(4), frame_entry(8, 1), frame_entry(12, 1)])
    )


def test_SlidingWindowP_stage1Test__when_wmNeverReceived_then_emitEverythingInComplete() -> None:
    stage1().input([(0, 1), (4, 1)]).expect_output([frame_entry(4, 1), frame_entry(8, 1)])


def test_SlidingWindowP_stage1Test__when_lateEvent_then_ignore() -> None:
    stage1().disable_complete_call().input([Watermark(16), (7, 1)]).expect_output([Watermark(16)])


# ---- SlidingWindowP_FrameCombiningTest: frames off the grid are aligned, none lost -------------


def _new_set() -> set[str]:
    return set()


def _set_add(acc: set[str], item: str) -> set[str]:
    acc.add(item)
    return acc


def _set_union(acc: set[str], other: set[str]) -> set[str]:
    acc |= other
    return acc


def test_SlidingWindowP_FrameCombiningTest__when_multipleFrames_then_combine() -> None:
    to_set = P.AggregateOperation(create=_new_set, accumulate=_set_add, combine=_set_union)
    frames = [FrameEntry(2, KEY, {"a"}), FrameEntry(4, KEY, {"b"}), FrameEntry(6, KEY, {"c"})]
    # frames end at 2 and 6, off sliding(8, 4)'s grid: they count as the frames ending at 4 and 8
    expected = [
        WindowResult(-4, 4, KEY, {"a", "b"}),
        WindowResult(0, 8, KEY, {"a", "b", "c"}),
        WindowResult(4, 12, KEY, {"c"}),
    ]
    (
        verify_processor(P.combine_to_sliding_window(WindowPolicy.sliding(8, 4), to_set))
        .partitioned_input(P.frame_entry_key)
        .input(frames)
        .expect_output(expected)
    )


# ---- SlidingWindowP_twoStageSnapshotTest ------------------------------------------------------


def test_SlidingWindowP_twoStageSnapshotTest__test() -> None:
    """Jet: events (1, 1) and (2, 2) reach two stage-1 processors, a snapshot is taken (with and
    without a restore into new stage-1 instances), (3, 3) and (4, 4) follow, then wm(10); stage 2
    must emit every window once. Here the kit runs stage 1 through the same points (snapshot
    without restore, restore at every point, restore into 1, 2 and 3 processors) and every mode's
    frames must be the same; stage 2 then combines them into Jet's windows."""
    policy = WindowPolicy.sliding(4, 1)
    op = summing_values(True)
    events = [(1, 1), (2, 2), (3, 3), (4, 4), Watermark(10)]
    frames = [frame_entry(2, 1), frame_entry(3, 2), frame_entry(4, 3), frame_entry(5, 4), Watermark(10)]
    verify_processor(P.accumulate_by_frame(_key, operator.itemgetter(0), policy, op)).input(
        events
    ).expect_output(frames)
    expected = [frame(2, 1), frame(3, 3), frame(4, 6), frame(5, 10), frame(6, 9), frame(7, 7), frame(8, 4)]
    (
        verify_processor(P.combine_to_sliding_window(policy, op))
        .partitioned_input(P.frame_entry_key)
        .input(frames)
        .expect_output([*expected, Watermark(10)])
    )


# ---- SlidingWindowP_changeWindowSizeTest: restore under another window policy ------------------


class ItemsThenWatermark(AbstractProcessor):
    """Emits its items, then a watermark, then stays open (a stream that went quiet)."""

    def __init__(self, items: list[Any], watermark: int) -> None:
        self._pending: list[Any] = [*items, Watermark(watermark)]

    def complete(self) -> bool:
        while self._pending and self.try_emit(self._pending[0]):
            self._pending.pop(0)
        return False


class Nothing(AbstractProcessor):
    """A source with nothing left to send: the restored windows flush at the end of the input."""

    def complete(self) -> bool:
        return True


def _identity(value: int) -> int:
    return value


def _constant_key(_item: Any) -> str:
    return "key"


def window_dag(policy: WindowPolicy, source: Callable[[], AbstractProcessor]) -> DAG:
    dag = DAG()
    src = dag.new_vertex("source", source, 1)
    windows = dag.new_vertex(
        "windows", P.aggregate_to_sliding_window(_constant_key, _identity, policy, P.summing()), 1
    )
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(src, windows).partitioned(_constant_key))
    dag.edge(Edge.between(windows, sink))
    return dag


def restored_into(before: WindowPolicy, after: WindowPolicy) -> list[tuple[int, str, int]]:
    """Items 0..3 and wm(2) into a window of `before`; its snapshot restored into a window of
    `after`, whose input then ends: `(window end, key, sum)` of what the restored job emits."""
    runner = LocalRunner(1)
    first = runner.submit(window_dag(before, lambda: ItemsThenWatermark([0, 1, 2, 3], 2)), JobConfig())
    try:
        wait_until(lambda: first.metrics()["windows"].get("input_watermark") == 2, "wm(2) in the window")
        first.export_snapshot("before")
    finally:
        first.cancel()
    config = JobConfig(initial_snapshot_name="before")
    second = runner.run(window_dag(after, Nothing), config, timeout=60)
    return [(r.end, r.key, r.value) for r in second.result("sink")]


def test_SlidingWindowP_changeWindowSizeTest__when_shrinkSlidingWindowSize_then_noLeak() -> None:
    result = restored_into(WindowPolicy.sliding(3, 1), WindowPolicy.sliding(2, 1))
    assert result == [(3, "key", 3), (4, "key", 5), (5, "key", 3)]


def test_SlidingWindowP_changeWindowSizeTest__test_extendSlidingWindowSize_leak() -> None:
    result = restored_into(WindowPolicy.sliding(2, 1), WindowPolicy.sliding(3, 1))
    assert result == [(3, "key", 3), (4, "key", 6), (5, "key", 5), (6, "key", 3)]


def test_SlidingWindowP_changeWindowSizeTest__when_incompatibleSlidingWindowChange1_then_incorrectResultButNoLeakOrFailure() -> (
    None
):
    assert restored_into(WindowPolicy.tumbling(2), WindowPolicy.tumbling(3)) == [(6, "key", 5)]


def test_SlidingWindowP_changeWindowSizeTest__when_incompatibleSlidingWindowChange2_then_incorrectResultButNoLeakOrFailure() -> (
    None
):
    result = restored_into(WindowPolicy.tumbling(3), WindowPolicy.tumbling(2))
    assert result == [(4, "key", 3), (6, "key", 3)]


def test_SlidingWindowP_changeWindowSizeTest__when_multipleFramesRestoredIntoSingleFrame_then_incorrectResultButNoLeakOrFailure() -> (
    None
):
    assert restored_into(WindowPolicy.tumbling(1), WindowPolicy.tumbling(4)) == [(4, "key", 5)]

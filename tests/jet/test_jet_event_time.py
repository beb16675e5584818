"""Jet's watermark-generation unit tests, ported: `InsertWatermarksPTest`, `EventTimeMapperTest`,
`WatermarkPolicy_withFixedLagTest` and `SlidingWindowPolicyTest` (hazelcast-jet-core).

Each test is named after the Jet case it ports (`test_<JetClass>__<case>`); the scenarios and the
expected outputs are Jet's, the code ours against the public API. Jet's
`EventTimeMapper.flatMapEvent(now, event, partition)` is our `observe(partition, event, now)`
followed by `watermark(now)` until it returns None (what `flat_map_event` below does); times are
given in seconds where Jet gives nanoseconds. Jet cases with no counterpart in jetspark are listed
in docs/event-time.md ("Where this differs from Jet") and are not here: native event time
(`when_noTimestampFn_then_useNativeTime`), partitions added and removed while running (the three
`removePartition` cases), watermark policies other than a fixed lag
(`when_currentWmBeyondReportedEventTimestamp_*`) and 64-bit overflow clamping of frame arithmetic
(`when_frameLength3`, `when_floorOutOfRange_then_minValue`, `when_higherOutOfRange_then_maxValue`):
Python's ints do not overflow.
"""

from __future__ import annotations

from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import IDLE_MESSAGE, Watermark
from jetspark.processors import EventTimeMapper, EventTimePolicy, WindowPolicy
from jetspark.testing import verify_processor

LAG = 3


def _identity(value: int) -> int:
    return value


def policy(lag: int = LAG, idle_millis: int | None = None, frame: int = 1) -> EventTimePolicy:
    return EventTimePolicy(
        timestamp_fn=_identity, allowed_lag=lag, idle_timeout_millis=idle_millis, throttling_frame_size=frame
    )


def ms(millis: float) -> float:
    return millis / 1000


def flat_map_event(mapper: EventTimeMapper, now: float, event: int | None, partition: int = 0) -> list[Any]:
    """What Jet's `flatMapEvent(now, event, partition)` returns: the watermarks (and idle marker)
    due now, then the event; `event=None` is Jet's `flatMapIdle`."""
    out: list[Any] = []
    if event is not None:
        mapper.observe(partition, event, now)
    while (wm := mapper.watermark(now)) is not None:
        out.append(wm)
    if event is not None:
        out.append(event)
    return out


# ---- InsertWatermarksPTest: lag 3, outbox capacity 1 and 1024 --------------------------------


@pytest.fixture(params=[1, 1024], ids=lambda c: f"outboxCapacity={c}")
def capacity(request: Any) -> int:
    return request.param  # type: ignore[no-any-return]


def insert_watermarks(
    capacity: int, items: list[int], expected: list[Any], lag: int = LAG, frame: int = 1
) -> None:
    supplier = P.insert_watermarks(_identity, allowed_lag=lag, throttling_frame_size=frame)
    (
        verify_processor(supplier)
        .outbox_capacity(capacity)
        .disable_redistribution()  # one generator per source processor (isolated edge)
        .input(items)
        .expect_output(expected)
    )


def test_InsertWatermarksPTest__when_manyEvents_then_oneWm(capacity: int) -> None:
    insert_watermarks(capacity, [10, 10], [Watermark(7), 10, 10])


def test_InsertWatermarksPTest__when_eventsIncrease_then_wmIncreases(capacity: int) -> None:
    insert_watermarks(capacity, [10, 11], [Watermark(7), 10, Watermark(8), 11])


def test_InsertWatermarksPTest__when_eventsDecrease_then_oneWm(capacity: int) -> None:
    insert_watermarks(capacity, [11, 10], [Watermark(8), 11, 10])


def test_InsertWatermarksPTest__when_lateEvent_then_notDropped(capacity: int) -> None:
    insert_watermarks(capacity, [11, 7], [Watermark(8), 11, 7])


def test_InsertWatermarksPTest__when_gapBetweenEvents_then_oneWm(capacity: int) -> None:
    insert_watermarks(capacity, [10, 13], [Watermark(7), 10, Watermark(10), 13])


def test_InsertWatermarksPTest__when_zeroLag(capacity: int) -> None:
    insert_watermarks(capacity, [10, 13], [Watermark(10), 10, Watermark(13), 13], lag=0)


def test_InsertWatermarksPTest__emitByFrame_when_eventsIncrease_then_wmIncreases(capacity: int) -> None:
    expected = [Watermark(6), 10, Watermark(8), 11, 12, Watermark(10), 13]
    insert_watermarks(capacity, [10, 11, 12, 13], expected, frame=2)


def test_InsertWatermarksPTest__emitByFrame_when_eventsIncreaseAndStartAtVergeOfFrame_then_wmIncreases(
    capacity: int,
) -> None:
    expected = [Watermark(8), 11, 12, Watermark(10), 13, 14]
    insert_watermarks(capacity, [11, 12, 13, 14], expected, frame=2)


def test_InsertWatermarksPTest__emitByFrame_when_eventsNotAtTheVergeOfFrame_then_wmEmittedCorrectly(
    capacity: int,
) -> None:
    insert_watermarks(capacity, [14, 15, 24], [Watermark(10), 14, 15, Watermark(20), 24], frame=10)


def test_InsertWatermarksPTest__emitByFrame_when_gapBetweenEvents_then_gapInWms(capacity: int) -> None:
    insert_watermarks(capacity, [11, 15], [Watermark(8), 11, Watermark(12), 15], frame=2)


def test_InsertWatermarksPTest__when_idleTimeout_then_idleMessageAfterTimeout(capacity: int) -> None:
    """Jet waits 100 ms of real time for the idle marker; the processor notices idleness through
    its `EventTimeMapper` in `try_process`, so the timing half runs on the mapper with a given
    clock, and the processor (idle timeout set: its item-by-item path) is checked for the
    watermark before the item."""
    supplier = P.insert_watermarks(_identity, allowed_lag=LAG, idle_timeout_millis=100_000)
    verify_processor(supplier).outbox_capacity(capacity).disable_redistribution().input([10]).expect_output(
        [Watermark(10 - LAG), 10]
    )
    mapper = EventTimeMapper(policy(idle_millis=100), now=0.0)
    assert flat_map_event(mapper, ms(0), 10) == [Watermark(10 - LAG), 10]
    for now in (1, 50, 99):
        assert flat_map_event(mapper, ms(now), None) == [], f"idle before the timeout, at {now} ms"
    assert flat_map_event(mapper, ms(100), None) == [IDLE_MESSAGE]


# ---- EventTimeMapperTest ------------------------------------------------------------------------


def test_EventTimeMapperTest__smokeTest() -> None:
    mapper = EventTimeMapper(policy(idle_millis=5), partition_count=2, now=0.0)
    assert flat_map_event(mapper, ms(1), None) == []  # all partitions active at first
    assert flat_map_event(mapper, ms(5), None) == [IDLE_MESSAGE]  # the timeout passed for all
    assert flat_map_event(mapper, ms(5), None) == []  # still idle: the marker goes out once
    # an event on partition 0: its watermark goes out at once, partition 1 being idle
    assert flat_map_event(mapper, ms(5), 100, 0) == [Watermark(100 - LAG), 100]
    assert flat_map_event(mapper, ms(5), 90, 0) == [90]  # older: no watermark
    assert flat_map_event(mapper, ms(5), 101, 0) == [Watermark(101 - LAG), 101]


def test_EventTimeMapperTest__smokeTest_disabledIdleTimeout() -> None:
    mapper = EventTimeMapper(policy(), partition_count=2, now=0.0)
    assert flat_map_event(mapper, 0.0, None) == []
    # events only in partition 0: no watermark, partition 1 is waited for indefinitely
    assert flat_map_event(mapper, 0.0, 10, 0) == [10]
    assert flat_map_event(mapper, 0.0, 11, 0) == [11]
    assert flat_map_event(mapper, 0.0, 10, 1) == [Watermark(10 - LAG), 10]
    assert flat_map_event(mapper, 0.0, 11, 1) == [Watermark(11 - LAG), 11]
    assert flat_map_event(mapper, 0.0, 12, 1) == [12]  # partition 1 ahead of 0: no watermark
    assert flat_map_event(mapper, 0.0, 13, 0) == [Watermark(12 - LAG), 13]


def test_EventTimeMapperTest__test_zeroPartitions() -> None:
    """Jet: a mapper without partitions emits the idle marker at once, and partitions are added
    later. jetspark's mapper has a fixed partition count of at least 1 (a deliberate difference:
    no partitions are added while running), so zero partitions is refused, naming the argument."""
    with pytest.raises(ValueError, match="partition_count must be >= 1, got 0"):
        EventTimeMapper(policy(), partition_count=0)
    mapper = EventTimeMapper(policy(), partition_count=1, now=0.0)
    assert flat_map_event(mapper, 0.0, None) == []  # no event yet: no watermark value to send
    assert flat_map_event(mapper, 0.0, 10) == [Watermark(10 - LAG), 10]


def test_EventTimeMapperTest__when_idle_event_idle_then_twoIdleMessagesSent() -> None:
    mapper = EventTimeMapper(policy(idle_millis=10), now=0.0)
    assert flat_map_event(mapper, ms(0), 10) == [Watermark(10 - LAG), 10]
    assert flat_map_event(mapper, ms(10), None) == [IDLE_MESSAGE]  # idle
    assert flat_map_event(mapper, ms(10), 10) == [10]  # an event, no new watermark
    assert flat_map_event(mapper, ms(10), None) == []
    assert flat_map_event(mapper, ms(20), None) == [IDLE_MESSAGE]  # idle again


def test_EventTimeMapperTest__when_eventInOneOfTwoPartitions_then_wmAndIdleMessageForwardedAfterTimeout() -> (
    None
):
    mapper = EventTimeMapper(policy(idle_millis=10), partition_count=2, now=0.0)
    assert flat_map_event(mapper, ms(0), 10, 0) == [10]
    # both idle: the top watermark first, then the idle marker
    assert flat_map_event(mapper, ms(10), None) == [Watermark(10 - LAG), IDLE_MESSAGE]


def test_EventTimeMapperTest__when_noTimestampFnAndNoNativeTime_then_throw() -> None:
    """jetspark has no native event time: a policy without a timestamp function is refused."""
    with pytest.raises(TypeError, match="EventTimePolicy: timestamp_fn must be callable, got None"):
        EventTimePolicy(timestamp_fn=None)  # type: ignore[arg-type]


def test_EventTimeMapperTest__when_throttlingToMaxFrame_then_noWatermarksOutput() -> None:
    """Jet's throttling frame size 0 means "no watermarks at all"; jetspark refuses 0 (a
    generator that never emits a watermark is left out of the DAG instead)."""
    with pytest.raises(ValueError, match="throttling_frame_size must be >= 1, got 0"):
        policy(frame=0)


def test_EventTimeMapperTest__when_restoredState_then_wmDoesNotGoBack() -> None:
    mapper = EventTimeMapper(policy(lag=0, idle_millis=5), now=0.0)
    mapper.restore((10, [10]))  # the last watermark emitted, and the partition's top
    assert flat_map_event(mapper, 0.0, 9) == [9]
    assert flat_map_event(mapper, 0.0, 10) == [10]
    assert flat_map_event(mapper, 0.0, 11) == [Watermark(11), 11]


# ---- WatermarkPolicy_withFixedLagTest: lag 10 --------------------------------------------------


def test_WatermarkPolicy_withFixedLagTest__when_outOfOrderEvents_then_monotonicWm() -> None:
    mapper = EventTimeMapper(policy(lag=10), now=0.0)
    for i in range(10):
        assert flat_map_event(mapper, 0.0, i) == [Watermark(i - 10), i]
        assert flat_map_event(mapper, 0.0, i - 1) == [i - 1]  # older: the same watermark
        assert flat_map_event(mapper, 0.0, i - 2) == [i - 2]
        assert mapper.last_emitted == i - 10


def test_WatermarkPolicy_withFixedLagTest__when_eventsStop_then_wmStops() -> None:
    mapper = EventTimeMapper(policy(lag=10), now=0.0)
    assert flat_map_event(mapper, 0.0, 10) == [Watermark(0), 10]
    for _ in range(10):
        assert flat_map_event(mapper, 0.0, None) == []
        assert mapper.last_emitted == 0


def test_WatermarkPolicy_withFixedLagTest__when_noEventEver_then_minValue() -> None:
    mapper = EventTimeMapper(policy(lag=10), now=0.0)
    for _ in range(10):
        assert flat_map_event(mapper, 0.0, None) == []
        assert mapper.last_emitted is None  # Jet's Long.MIN_VALUE: no watermark yet


# ---- SlidingWindowPolicyTest: floor and higher frame timestamps --------------------------------


def assert_frames(policy: WindowPolicy, cases: list[tuple[int, int, int]]) -> None:
    for timestamp, floor, higher in cases:
        assert policy.floor_frame(timestamp) == floor, f"floor of {timestamp}"
        assert policy.frame_end(timestamp) == higher, f"higher frame of {timestamp}"


def test_SlidingWindowPolicyTest__when_noOffset() -> None:
    cases = [(-5, -8, -4), (-4, -4, 0), (-3, -4, 0), (-2, -4, 0), (-1, -4, 0), (0, 0, 4), (1, 0, 4)]
    cases += [(2, 0, 4), (3, 0, 4), (4, 4, 8), (5, 4, 8), (6, 4, 8), (7, 4, 8), (8, 8, 12)]
    assert_frames(WindowPolicy(4, 40, 0), cases)


def test_SlidingWindowPolicyTest__when_offset1() -> None:
    cases = [(-4, -7, -3), (-3, -3, 1), (-2, -3, 1), (-1, -3, 1), (0, -3, 1), (1, 1, 5), (2, 1, 5)]
    cases += [(3, 1, 5), (4, 1, 5), (5, 5, 9), (6, 5, 9), (7, 5, 9), (8, 5, 9), (9, 9, 13)]
    assert_frames(WindowPolicy(4, 40, 1), cases)


def test_SlidingWindowPolicyTest__when_offset2() -> None:
    cases = [(-4, -6, -2), (-3, -6, -2), (-2, -2, 2), (-1, -2, 2), (0, -2, 2), (1, -2, 2), (2, 2, 6)]
    cases += [(3, 2, 6), (4, 2, 6), (5, 2, 6), (6, 6, 10), (7, 6, 10), (8, 6, 10), (9, 6, 10)]
    assert_frames(WindowPolicy(4, 40, 2), cases)


def test_SlidingWindowPolicyTest__test_tumblingWindowDef() -> None:
    tumbling = WindowPolicy.tumbling(123)
    assert (tumbling.frame_size, tumbling.window_size, tumbling.frame_offset) == (123, 123, 0)


def test_SlidingWindowPolicyTest__test_toTumblingByFrame() -> None:
    frames = WindowPolicy.sliding(1000, 100).frames_policy()
    assert (frames.window_size, frames.frame_size) == (100, 100)


def test_SlidingWindowPolicyTest__test_withOffset() -> None:
    assert WindowPolicy.sliding(1000, 100).frame_offset == 0
    assert WindowPolicy.sliding(1000, 100, offset=10).frame_offset == 10

"""Jet's `WatermarkEmissionPolicyTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

Jet removed the class in commit 63f67edb; the port follows its last version,
`hazelcast-jet-core/src/test/java/com/hazelcast/jet/core/WatermarkEmissionPolicyTest.java` at
63f67edb^. Jet's `WatermarkEmissionPolicy.throttleWm(currentWm, lastEmittedWm)` is not a separate
object in jetspark: the throttling is part of `EventTimeMapper` (`EventTimePolicy.throttling_frame_size`).
The port drives a mapper with a lag of 0, so the watermark before throttling (Jet's `currentWm`)
is the timestamp of the item observed, and reads the last watermark it handed out (Jet's
`lastEmittedWm`; None is Jet's `Long.MIN_VALUE`, nothing emitted yet).

Skipped: `when_wmIncreasing_then_throttleByMinStep`: jetspark has no counterpart of Jet's
`emitByMinStep` (throttling is by frame only).
"""

from __future__ import annotations

from typing import Any

from jetspark.core import Watermark
from jetspark.processors import EventTimeMapper, EventTimePolicy


def _identity(value: int) -> int:
    return value


def test_WatermarkEmissionPolicyTest__when_wmIncreasing_then_throttleByFrame() -> None:
    # Jet: emitByFrame(tumblingWinPolicy(3))
    mapper = EventTimeMapper(
        EventTimePolicy(timestamp_fn=_identity, allowed_lag=0, throttling_frame_size=3), now=0.0
    )

    def assert_wm(current_wm: int | None, expected_to_emit: int | None) -> None:
        last_emitted = mapper.last_emitted
        if current_wm is not None:
            mapper.observe(0, current_wm, now=0.0)
        emitted: list[Any] = []
        while (wm := mapper.watermark(now=0.0)) is not None:
            emitted.append(wm)
        assert mapper.last_emitted == expected_to_emit
        # one watermark at most, and only when the throttled value rose (Jet emits the value
        # `throttleWm` returns when it differs from `lastEmittedWm`)
        if expected_to_emit is None or expected_to_emit == last_emitted:
            assert emitted == []
        else:
            assert emitted == [Watermark(expected_to_emit)]

    assert_wm(None, None)  # Jet: assertWm(Long.MIN_VALUE, Long.MIN_VALUE)
    assert_wm(2, 0)
    assert_wm(3, 3)
    assert_wm(4, 3)
    assert_wm(5, 3)
    assert_wm(6, 6)
    assert_wm(13, 12)
    assert_wm(14, 12)
    assert_wm(15, 15)

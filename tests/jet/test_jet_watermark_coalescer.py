"""Jet's `WatermarkCoalescerTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.execution`), ported
against the engine's `WatermarkCoalescer` (an engine module, as Jet's is an `impl` class).

Jet's `observeWm`/`queueDone` return one value (`NO_NEW_WM`, a watermark, or the idle marker's
timestamp) and `checkWmHistory()` hands out what is still due; jetspark's return the list of
everything to forward, at once, in order. So Jet's "11, then `checkWmHistory()` gives the idle
marker" is `[Watermark(11), IDLE_MESSAGE]` here, and Jet's `NO_NEW_WM` is `[]`. Jet's
`observeEvent` is `observe_item`. Each test is named after the Jet case it ports.
"""

from __future__ import annotations

import pytest

from jetspark.core import IDLE_MESSAGE, ProcessorContractError, Watermark
from jetspark.engine.coalescer import WatermarkCoalescer

IDLE = IDLE_MESSAGE


@pytest.fixture
def wc() -> WatermarkCoalescer:
    return WatermarkCoalescer(2, name="vertex 'v'")


def wm(timestamp: int) -> Watermark:
    return Watermark(timestamp)


def test_WatermarkCoalescerTest__when_nothingHappened_then_noWm(wc: WatermarkCoalescer) -> None:
    assert wc.last_forwarded is None


def test_WatermarkCoalescerTest__when_bothInputsHaveWm_then_forwarded(wc: WatermarkCoalescer) -> None:
    assert wc.observe(0, wm(1)) == []
    assert wc.last_forwarded is None
    assert wc.observe(1, wm(2)) == [wm(1)]
    assert wc.observe(0, wm(3)) == [wm(2)]
    assert wc.observe(1, wm(4)) == [wm(3)]
    assert wc.last_forwarded == 3


@pytest.mark.parametrize("activity", ["event", "wm"])
def test_WatermarkCoalescerTest__when_i1RecoversFromIdle_then_wmFromI1Coalesced(
    wc: WatermarkCoalescer, activity: str
) -> None:
    """Jet's `when_i1RecoversFromIdleByEvent...` and `...ByWatermark...`."""
    assert wc.observe(0, IDLE) == []
    assert wc.observe(1, wm(11)) == [wm(11)]  # forwarded at once
    if activity == "wm":
        assert wc.observe(0, wm(11)) == []
    else:
        wc.observe_item(0)
    assert wc.observe(1, wm(12)) == []  # waits for input 0
    assert wc.observe(0, wm(13)) == [wm(12)]  # both are at 12 or more


def test_WatermarkCoalescerTest__when_i1Idle_i2HasWm_then_forwardedImmediately(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, IDLE) == []
    assert wc.observe(1, wm(100)) == [wm(100)]


def test_WatermarkCoalescerTest__when_i1HasWm_i2Idle_then_forwardedImmediately(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, wm(100)) == []
    assert wc.observe(1, IDLE) == [wm(100)]


def test_WatermarkCoalescerTest__when_i1_active_i2_active_then_wmForwardedImmediately(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, wm(100)) == []
    assert wc.observe(1, wm(101)) == [wm(100)]
    assert wc.observe(0, wm(101)) == [wm(101)]


def test_WatermarkCoalescerTest__when_i1_active_i2_idle_then_wmForwardedImmediately(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, wm(100)) == []
    assert wc.observe(1, IDLE) == [wm(100)]


def test_WatermarkCoalescerTest__when_i1_idle_i2_active_then_wmForwardedImmediately(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, IDLE) == []
    assert wc.observe(1, wm(100)) == [wm(100)]


def test_WatermarkCoalescerTest__when_i1_activeNoWm_i2_idle_then_noWmToForward(
    wc: WatermarkCoalescer,
) -> None:
    wc.observe_item(0)
    assert wc.observe(1, IDLE) == []
    assert wc.last_forwarded is None


def test_WatermarkCoalescerTest__when_i1_idle_i2_activeNoWm_then_wmForwardedAfterADelay(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, IDLE) == []
    wc.observe_item(1)
    assert wc.last_forwarded is None  # input 1 never had a watermark: nothing to forward


def test_WatermarkCoalescerTest__when_i1_idle_i2_idle_then_idleMessageForwardedImmediately(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, IDLE) == []
    assert wc.observe(1, IDLE) == [IDLE]


def test_WatermarkCoalescerTest__when_i1_active_i2_done_then_forwardImmediately(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, wm(100)) == []
    assert wc.queue_done(1) == [wm(100)]


def test_WatermarkCoalescerTest__when_i1_done_i2_active_then_forwardImmediately(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.queue_done(0) == []
    assert wc.observe(1, wm(100)) == [wm(100)]


def test_WatermarkCoalescerTest__when_i1_idle_i2_done_i1_recovers_then_idleMessageForwardedImmediately(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, IDLE) == []
    assert wc.queue_done(1) == [IDLE]
    assert wc.observe(0, wm(10)) == [wm(10)]


def test_WatermarkCoalescerTest__when_i1_done_i2_idleAndRecovers_then_wmsForwardedImmediately(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.queue_done(0) == []
    assert wc.observe(1, IDLE) == [IDLE]
    assert wc.observe(1, wm(10)) == [wm(10)]


def test_WatermarkCoalescerTest__when_duplicateIdleMessage_then_processed(wc: WatermarkCoalescer) -> None:
    # a source sends the idle marker, an item (broadcast edges do not copy it), the marker again
    assert wc.observe(0, IDLE) == []
    assert wc.observe(0, IDLE) == []


def test_WatermarkCoalescerTest__when_allIdleAndDuplicateIdleMessage_then_processed(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, IDLE) == []
    assert wc.observe(1, IDLE) == [IDLE]
    assert wc.observe(0, IDLE) == []


def test_WatermarkCoalescerTest__when_allDone_then_noMaxValueEmitted(wc: WatermarkCoalescer) -> None:
    assert wc.queue_done(0) == []
    assert wc.queue_done(1) == []


def test_WatermarkCoalescerTest__when_twoInputsIdle_then_singleIdleMessage() -> None:
    wc = WatermarkCoalescer(3)
    assert wc.observe(0, IDLE) == []
    assert wc.observe(1, IDLE) == []  # input 2 is still active: no idle marker yet


def test_WatermarkCoalescerTest__when_duplicateDoneCall_then_error(wc: WatermarkCoalescer) -> None:
    assert wc.queue_done(0) == []
    with pytest.raises(ProcessorContractError, match="vertex 'v': input 0 ended twice"):
        wc.queue_done(0)


def test_WatermarkCoalescerTest__when_wmAfterDone_then_error(wc: WatermarkCoalescer) -> None:
    assert wc.queue_done(0) == []
    with pytest.raises(ProcessorContractError, match="vertex 'v': watermark 0 on input 0 after the end"):
        wc.observe(0, wm(0))


def test_WatermarkCoalescerTest__when_idleMessageAfterDone_then_error(wc: WatermarkCoalescer) -> None:
    assert wc.queue_done(0) == []
    with pytest.raises(ProcessorContractError, match="on input 0 after the end of its stream"):
        wc.observe(0, IDLE)


def test_WatermarkCoalescerTest__when_wmGoesBack_then_error(wc: WatermarkCoalescer) -> None:
    assert wc.observe(0, wm(10)) == []
    with pytest.raises(
        ProcessorContractError, match="watermark 9 on input 0 is not greater than the previous one"
    ):
        wc.observe(0, wm(9))


def test_WatermarkCoalescerTest__when_allInputsHadWms_allBecomeIdle_theLessAheadBecomesIdleLater_then_topWmForwarded(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, wm(10)) == []
    assert wc.observe(1, wm(11)) == [wm(10)]
    assert wc.observe(1, IDLE) == []  # input 1 idle: the watermark stays at 10
    assert wc.observe(0, IDLE) == [wm(11), IDLE]  # both idle: the top, then the idle marker


def test_WatermarkCoalescerTest__when_allInputsHadWms_aheadOnesBecomeIdle_behindOneIsDone_then_topWmForwarded(
    wc: WatermarkCoalescer,
) -> None:
    assert wc.observe(0, wm(10)) == []
    assert wc.observe(1, wm(11)) == [wm(10)]
    assert wc.observe(1, IDLE) == []
    assert wc.queue_done(0) == [wm(11), IDLE]  # the behind one is done: the top, then idle


def test_WatermarkCoalescerTest__test_singleInput() -> None:
    wc = WatermarkCoalescer(1)
    assert wc.observe(0, IDLE) == [IDLE]
    assert wc.observe(0, wm(10)) == [wm(10)]
    assert wc.observe(0, wm(11)) == [wm(11)]
    assert wc.observe(0, IDLE) == [IDLE]
    assert wc.observe(0, wm(12)) == [wm(12)]
    assert wc.queue_done(0) == []

"""Jet 5.x's `WatermarkCoalescerTest` (hazelcast/hazelcast, `jet.impl.execution`): the methods
whose expectations differ from Jet 4.x (ported in `test_jet_watermark_coalescer.py`).

5.x changed the coalescer's API: `observeWm`/`queueDone` never return the idle marker's timestamp
any more (they return a watermark value or `NO_NEW_WM`), and `checkWmHistory()` is gone; instead
`idleMessagePending()` says, once (it resets on reading), that the idle marker is due. jetspark's
`WatermarkCoalescer` returns everything to forward as one list, so `Jet5View` splits it the 5.x way:
the value is the list's watermark (or `NO_NEW_WM`), and an idle marker in the list sets the pending
flag. What is forwarded, and when, is the same in 4.x and 5.x for these cases; the 5.x text is
what changed (4.x: `assertEquals(IDLE_MESSAGE.timestamp(), wc.observeWm(1, IDLE))`; 5.x:
`assertEquals(NO_NEW_WM, ...)` plus `idleMessagePending()`).

Renamed in 5.x: `when_i1_idle_i2_idle_then_idleMessageForwardedImmediately` became
`when_i1_idle_i2_idle_then_noNewWmMessageForwardedImmediately`.
Skipped: `KeyedWatermarkCoalescerTest` (new in 5.x): jetspark's watermarks have no key.
"""

from __future__ import annotations

import pytest

from jetspark.core import IDLE_MESSAGE, Watermark
from jetspark.engine.coalescer import WatermarkCoalescer

#: Jet's `Long.MIN_VALUE`, which is also 5.x's `NO_NEW_WM`.
NO_NEW_WM = None
IDLE_MESSAGE_TIME = IDLE_MESSAGE.timestamp


class Jet5View:
    """Jet 5's `WatermarkCoalescer` API over jetspark's."""

    def __init__(self, queue_count: int) -> None:
        self.wc = WatermarkCoalescer(queue_count, name="vertex 'v'")
        self._idle_pending = False

    def _split(self, out: list[Watermark]) -> int | None:
        values = [w.timestamp for w in out if not w.is_idle()]
        if any(w.is_idle() for w in out):
            self._idle_pending = True
        assert len(values) <= 1, f"more than one watermark forwarded at once: {out}"
        return values[0] if values else NO_NEW_WM

    def observe_wm(self, queue: int, timestamp: int) -> int | None:
        return self._split(self.wc.observe(queue, Watermark(timestamp)))

    def queue_done(self, queue: int) -> int | None:
        return self._split(self.wc.queue_done(queue))

    def observe_event(self, queue: int) -> None:
        self.wc.observe_item(queue)

    def idle_message_pending(self) -> bool:
        pending, self._idle_pending = self._idle_pending, False
        return pending


@pytest.fixture
def wc() -> Jet5View:
    return Jet5View(2)


def test_WatermarkCoalescerTest__when_nothingHappened_then_noWm(wc: Jet5View) -> None:
    assert not wc.idle_message_pending()


@pytest.mark.parametrize("activity", ["event", "wm"])
def test_WatermarkCoalescerTest__when_i1RecoversFromIdle_then_wmFromI1Coalesced(
    wc: Jet5View, activity: str
) -> None:
    """Jet's `when_i1RecoversFromIdleByEvent...` and `...ByWatermark...`."""
    assert wc.observe_wm(0, IDLE_MESSAGE_TIME) is NO_NEW_WM
    assert wc.observe_wm(1, 11) == 11  # forwarded immediately
    if activity == "wm":
        assert wc.observe_wm(0, 11) is NO_NEW_WM
    else:
        wc.observe_event(0)
    assert wc.observe_wm(1, 12) is NO_NEW_WM  # not forwarded, waiting for i1
    assert wc.observe_wm(0, 13) == 12  # forwarded, both are at least at 12
    assert not wc.idle_message_pending()


def test_WatermarkCoalescerTest__when_i1_idle_i2_active_then_wmForwardedImmediately(wc: Jet5View) -> None:
    assert wc.observe_wm(0, IDLE_MESSAGE_TIME) is NO_NEW_WM
    assert wc.observe_wm(1, 100) == 100


def test_WatermarkCoalescerTest__when_i1_activeNoWm_i2_idle_then_noWmToForward(wc: Jet5View) -> None:
    wc.observe_event(0)
    assert wc.observe_wm(1, IDLE_MESSAGE_TIME) is NO_NEW_WM
    assert not wc.idle_message_pending()
    assert not wc.idle_message_pending()


def test_WatermarkCoalescerTest__when_i1_idle_i2_activeNoWm_then_wmForwardedAfterADelay(wc: Jet5View) -> None:
    assert wc.observe_wm(0, IDLE_MESSAGE_TIME) is NO_NEW_WM
    wc.observe_event(1)
    assert not wc.idle_message_pending()
    assert not wc.idle_message_pending()


def test_WatermarkCoalescerTest__when_i1_idle_i2_idle_then_noNewWmMessageForwardedImmediately(
    wc: Jet5View,
) -> None:
    assert wc.observe_wm(0, IDLE_MESSAGE_TIME) is NO_NEW_WM
    assert wc.observe_wm(1, IDLE_MESSAGE_TIME) is NO_NEW_WM


def test_WatermarkCoalescerTest__when_i1_active_i2_done_then_forwardImmediately(wc: Jet5View) -> None:
    assert wc.observe_wm(0, 100) is NO_NEW_WM
    assert wc.queue_done(1) == 100


def test_WatermarkCoalescerTest__when_i1_idle_i2_done_i1_recovers_then_idleMessageForwardedImmediately(
    wc: Jet5View,
) -> None:
    assert wc.observe_wm(0, IDLE_MESSAGE_TIME) is NO_NEW_WM
    assert wc.queue_done(1) is NO_NEW_WM
    assert wc.observe_wm(0, 10) == 10


def test_WatermarkCoalescerTest__when_i1_done_i2_idleAndRecovers_then_wmsForwardedImmediately(
    wc: Jet5View,
) -> None:
    assert wc.queue_done(0) is NO_NEW_WM
    assert wc.observe_wm(1, IDLE_MESSAGE_TIME) is NO_NEW_WM
    assert wc.observe_wm(1, 10) == 10


def test_WatermarkCoalescerTest__when_allIdleAndDuplicateIdleMessage_then_processed(wc: Jet5View) -> None:
    assert wc.observe_wm(0, IDLE_MESSAGE_TIME) is NO_NEW_WM
    assert wc.observe_wm(1, IDLE_MESSAGE_TIME) is NO_NEW_WM
    assert wc.observe_wm(0, IDLE_MESSAGE_TIME) is NO_NEW_WM


def test_WatermarkCoalescerTest__when_allDone_then_noMaxValueEmitted(wc: Jet5View) -> None:
    assert wc.queue_done(0) is NO_NEW_WM
    assert wc.queue_done(1) is NO_NEW_WM
    assert not wc.idle_message_pending()


def test_WatermarkCoalescerTest__when_allInputsHadWms_allBecomeIdle_theLessAheadBecomesIdleLater_then_topWmForwarded(
    wc: Jet5View,
) -> None:
    assert wc.observe_wm(0, 10) is NO_NEW_WM
    assert wc.observe_wm(1, 11) == 10
    # now queue1 becomes idle. Wm should stay at 10
    assert wc.observe_wm(1, IDLE_MESSAGE_TIME) is NO_NEW_WM
    # queue0 becomes idle. Wm should be forwarded to 11
    assert wc.observe_wm(0, IDLE_MESSAGE_TIME) == 11
    assert wc.idle_message_pending()


def test_WatermarkCoalescerTest__when_allInputsHadWms_aheadOnesBecomeIdle_behindOneIsDone_then_topWmForwarded(
    wc: Jet5View,
) -> None:
    assert wc.observe_wm(0, 10) is NO_NEW_WM
    assert wc.observe_wm(1, 11) == 10
    # now queue1 becomes idle. Wm should stay at 10
    assert wc.observe_wm(1, IDLE_MESSAGE_TIME) is NO_NEW_WM
    # queue0 becomes done. Wm should be forwarded to 11
    assert wc.queue_done(0) == 11
    assert wc.idle_message_pending()


def test_WatermarkCoalescerTest__test_singleInput() -> None:
    wc = Jet5View(1)
    assert wc.observe_wm(0, IDLE_MESSAGE_TIME) is NO_NEW_WM
    assert wc.observe_wm(0, 10) == 10
    assert wc.observe_wm(0, 11) == 11
    assert wc.observe_wm(0, IDLE_MESSAGE_TIME) is NO_NEW_WM
    assert wc.observe_wm(0, 12) == 12
    assert wc.queue_done(0) is NO_NEW_WM

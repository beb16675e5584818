"""Jet 5.x's `ConcurrentInboundEdgeStreamTest` (hazelcast/hazelcast, `jet.impl.execution`): the
methods that 5.x added or whose expectations differ from Jet 4.x (ported in
`test_jet_inbound_edge_stream.py`, whose `Edge2` drives jetspark's `InboundStream` the same way).

Changed in 5.x (the 4.x port encodes the old expectation):
- `when_receivingWatermarks_then_coalesce`: 4.x forwards wm(2) and wm(3) in two drains; 5.x in
  one (`drainAndAssert(MADE_PROGRESS, wm(2), wm(3))`).
- `when_receivingBarriers_then_coalesce` (unaligned): 4.x drains `2, barrier(0)` in one call;
  5.x drains `2`, then `barrier(0)` in the next call.
- `when_receivingBarriersWhileDone_then_coalesce` (aligned): 4.x drains `1, barrier(0)` in one
  call; 5.x drains `1`, then `barrier(0)` in the next call.
Added in 5.x: `when_oneQueueIsIdle_then_otherHasProgress`, `test_wmInQ1AndItemInQ2InSingleDrain`,
`test_barrierInQ1AndItemInQ2InSingleDrain`.

Jet 5's drain never hands out data items and a special item (watermark, barrier) in the same
`drainTo` call: a special item found after items were drained is returned by the next call, and
draining goes on over all queues after a watermark is forwarded. jetspark's
`InboundStream.drain_to` (jetspark/engine/inbound.py) stops at the first forwarded watermark or
completed barrier, and returns it together with the items drained before it.
"""

from __future__ import annotations

import pytest

from jetspark.core.watermark import IDLE_MESSAGE
from jetspark.engine.special import DONE
from tests.jet.test_jet_inbound_edge_stream import (
    DONE_STATE,
    MADE_PROGRESS,
    Edge2,
    barrier,
    wm,
)


@pytest.fixture
def e() -> Edge2:
    return Edge2()


def test_ConcurrentInboundEdgeStreamTest__when_oneQueueIsIdle_then_otherHasProgress(e: Edge2) -> None:
    e.add(e.q2, IDLE_MESSAGE)
    e.drain_and_assert(MADE_PROGRESS)
    e.add(e.q1, 1)
    e.drain_and_assert(MADE_PROGRESS, 1)
    e.add(e.q1, wm(2))
    e.drain_and_assert(MADE_PROGRESS, wm(2))


@pytest.mark.xfail(
    strict=True,
    reason="jetspark's InboundStream.drain_to (jetspark/engine/inbound.py) stops draining at the "
    "first forwarded watermark: wm(2) and wm(3) come in two drains; Jet 5 forwards both in one",
)
def test_ConcurrentInboundEdgeStreamTest__when_receivingWatermarks_then_coalesce(e: Edge2) -> None:
    e.add(e.q1, wm(1))
    e.add(e.q2, wm(2))
    e.drain_and_assert(MADE_PROGRESS, wm(1))
    e.add(e.q1, wm(3))
    e.add(e.q2, wm(3))
    e.drain_and_assert(MADE_PROGRESS, wm(2), wm(3))


@pytest.mark.xfail(
    strict=True,
    reason="jetspark's InboundStream.drain_to (jetspark/engine/inbound.py) returns item 2 and the "
    "completed barrier(0) from the same drain; Jet 5 returns the barrier in the next drain",
)
def test_ConcurrentInboundEdgeStreamTest__when_receivingBarriers_then_coalesce(e: Edge2) -> None:
    e.add(e.q1, barrier(0))
    e.add(e.q2, 1)
    e.drain_and_assert(MADE_PROGRESS, 1)
    e.add(e.q1, 2)
    e.add(e.q2, barrier(0))
    e.drain_and_assert(MADE_PROGRESS, 2)
    e.drain_and_assert(MADE_PROGRESS, barrier(0))


@pytest.mark.xfail(
    strict=True,
    reason="jetspark's InboundStream.drain_to (jetspark/engine/inbound.py) returns item 1 and the "
    "barrier(0) completed by it from the same drain; Jet 5 returns the barrier in the next drain",
)
def test_ConcurrentInboundEdgeStreamTest__when_receivingBarriersWhileDone_then_coalesce() -> None:
    e = Edge2(aligned=True)
    e.add(e.q1, 1, barrier(0))
    e.add(e.q2, DONE)
    e.drain_and_assert(MADE_PROGRESS, 1)
    e.drain_and_assert(MADE_PROGRESS, barrier(0))
    e.add(e.q1, DONE)
    e.drain_and_assert(DONE_STATE)


@pytest.mark.xfail(
    strict=True,
    reason="jetspark's InboundStream.drain_to (jetspark/engine/inbound.py) drains from queue 0 and "
    "stops at the watermark it forwards, so wm(1) comes before item 1 of q2 (in its own drain); "
    "Jet 5 drains item 1 first and forwards wm(1) in the next drain",
)
def test_ConcurrentInboundEdgeStreamTest__test_wmInQ1AndItemInQ2InSingleDrain(e: Edge2) -> None:
    e.add(e.q2, wm(1))
    e.drain_and_assert(MADE_PROGRESS)
    e.add(e.q1, wm(1))
    e.add(e.q2, 1)
    e.drain_and_assert(MADE_PROGRESS, 1)
    e.drain_and_assert(MADE_PROGRESS, wm(1))


def test_ConcurrentInboundEdgeStreamTest__test_barrierInQ1AndItemInQ2InSingleDrain(e: Edge2) -> None:
    e.add(e.q2, barrier(1))
    e.drain_and_assert(MADE_PROGRESS)
    e.add(e.q1, barrier(1))
    e.add(e.q2, 1)
    e.drain_and_assert(MADE_PROGRESS, barrier(1))
    e.drain_and_assert(MADE_PROGRESS, 1)

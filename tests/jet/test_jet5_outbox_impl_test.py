"""Jet 5.x's `OutboxImplTest` (hazelcast/hazelcast, `jet.impl.execution`): the methods whose
expectations differ from Jet 4.x (ported in `test_jet_outbox_impl.py`, whose `outbox_of` builds the
same outbox: three ordinals, batch size 3; Jet's `reset()` is jetspark's `flush()`).

Changed in 5.x: Jet 5 removed the "Outbox.offer() called again after it returned false, without a
call to reset()" assertion from `OutboxImpl.offerInternal`. Accordingly
- `when_batchSizeReachedAndOfferReturnedFalse_then_subsequentCallFails` no longer offers item 4 a
  second time before `reset()` expecting that error (4.x did; the 4.x port does too);
- `when_queueFullAndOfferReturnedFalse_then_subsequentCallFails` (4.x: the second `offer(4)` in
  the same call raises "offer() called again") was deleted; the 4.x port still encodes it.
The other 5.x methods differ from 4.x only in using `assertThatThrownBy` instead of the
`ExpectedException` rule.
"""

from __future__ import annotations

from tests.jet.test_jet_outbox_impl import outbox_of


def test_OutboxImplTest__when_batchSizeReachedAndOfferReturnedFalse_then_subsequentCallFails() -> None:
    outbox = outbox_of()
    assert outbox.offer(1)
    assert outbox.offer(2)
    assert outbox.offer(3)
    assert not outbox.offer(4)

    # let's reset the outbox, we should be able to offer now
    outbox.flush()
    assert outbox.offer(4)

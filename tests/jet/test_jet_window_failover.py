"""Jet's `SlidingWindowP_failoverTest` and `SessionWindowP_failoverTest` (hazelcast-jet-core,
`com.hazelcast.jet.impl.processor`), ported.

Jet restores a window processor from two snapshot entries of its broadcast key (the next window
to emit, `Keys.NEXT_WIN_TO_EMIT`, or the session processor's watermark,
`Keys.CURRENT_WATERMARK`), as two upstream processors saved them, and reads the private field
the processor restored (`nextWinToEmit`, `currentWatermark`). Here the key is the
`BroadcastKey` entry a processor of the same kind saves (taken from a real `save_to_snapshot`),
the processor is `aggregate_to_sliding_window` (tumbling windows of 1) or
`aggregate_to_session_window` (timeout 5000), counting items `(key, timestamp)`, and the field
is read off its behaviour: an item is late (dropped and counted in `late_items_dropped`) iff it
falls before the restored value. Jet's `restoreFromSnapshot(key, value)` is
`restore_from_snapshot_entry`; `TestProcessorContext.setProcessingGuarantee` is the context's
job config. Each test is named after the Jet case it ports
(`test_<JetClass>__<case>`).

Differences:
- `when_differentWmExactlyOnce_then_fail` (both classes): Jet's check is a Java `assert`, on in
  Jet's tests (`-ea`) and off in production, where Jet takes the lowest value as under
  at-least-once. jetspark takes the lowest under every guarantee: with a local edge into the
  window vertex, two of its processors hear different upstream processors and can rightly hold
  different watermarks in the same exactly-once snapshot. The port checks the lowest is taken.
- `when_noSnapshotRestored_then_wmIsMin`: Jet's `Long.MIN_VALUE` is "no window out yet"
  (jetspark holds None); the port checks that an item at -10**18 is not late.
"""

from __future__ import annotations

import operator
from typing import Any

import attrs
import pytest

from jetspark import BroadcastKey, JobConfig, ProcessingGuarantee, Watermark
from jetspark import processors as P
from jetspark.core.processor import Processor
from jetspark.engine.snapshot import decode_entries
from jetspark.processors import WindowResult
from tests.contract.harness import processor_context
from tests.jet.engine_kit import KitOutbox, inbox_of

EXACTLY_ONCE = ProcessingGuarantee.EXACTLY_ONCE
AT_LEAST_ONCE = ProcessingGuarantee.AT_LEAST_ONCE
SESSION_TIMEOUT = 5000
key_of = operator.itemgetter(0)
ts_of = operator.itemgetter(1)


def sliding_supplier() -> Any:
    return P.aggregate_to_sliding_window(key_of, ts_of, P.WindowPolicy.tumbling(1), P.counting())


def session_supplier() -> Any:
    return P.aggregate_to_session_window(key_of, ts_of, SESSION_TIMEOUT, P.counting())


SUPPLIERS = {"SlidingWindowP": sliding_supplier, "SessionWindowP": session_supplier}


def init(kind: str, guarantee: ProcessingGuarantee) -> tuple[Processor, KitOutbox]:
    """Jet's `init(guarantee)`: a processor on a `TestOutbox(128)` with that guarantee."""
    processor = SUPPLIERS[kind]().get(1)[0]
    outbox = KitOutbox(1, 128)
    context = attrs.evolve(processor_context(), job_config=JobConfig(processing_guarantee=guarantee))
    processor.init(outbox.outbox, context)
    return processor, outbox


def broadcast_key(kind: str) -> BroadcastKey:
    """The `BroadcastKey` a processor of `kind` saves its watermark state under."""
    processor, outbox = init(kind, AT_LEAST_ONCE)
    assert processor.try_process_watermark(Watermark(0))
    outbox.outbox.allow_snapshot_offers("save_to_snapshot")
    assert processor.save_to_snapshot()
    outbox.reset()
    keys = [key for key, _ in decode_entries(outbox.snapshot) if isinstance(key, BroadcastKey)]
    assert len(keys) == 1, keys
    return keys[0]


def run_items(processor: Processor, outbox: KitOutbox, items: list[Any]) -> list[Any]:
    """Process `items`, then complete; what the processor emitted."""
    processor.process(0, inbox_of(*items))
    for _ in range(100):
        if processor.complete():
            break
    else:
        raise AssertionError("complete() never returned True")
    return outbox.take(0)


def late_items(processor: Processor) -> int:
    return processor.custom_metrics()[P.LATE_ITEMS_METRIC]


@pytest.mark.parametrize("kind", list(SUPPLIERS))
def test_WindowP_failoverTest__when_differentWmExactlyOnce_then_useMin(kind: str) -> None:
    """Jet: `..._failoverTest.when_differentWmExactlyOnce_then_fail` asserts (a Java `assert`, off
    in production) that every processor saved the same value under exactly-once. jetspark
    restores the lowest, 1, as Jet does with assertions off (see the module): as in the
    at-least-once cases below, the item just before it is late, the one at it is not."""
    key = broadcast_key(kind)
    p, out = init(kind, EXACTLY_ONCE)
    p.restore_from_snapshot_entry(key, 1)
    p.restore_from_snapshot_entry(key, 2)
    assert p.finish_snapshot_restore()
    # sliding: the next window to emit ends at 1 (holds 0); session: the watermark is 1
    first_on_time = 0 if kind == "SlidingWindowP" else 1
    emitted = run_items(p, out, [("k", first_on_time - 1), ("k", first_on_time)])
    assert late_items(p) == 1
    assert [r.start for r in emitted] == [first_on_time]


def test_SlidingWindowP_failoverTest__when_differentWmAtLeastOnce_then_useMin() -> None:
    key = broadcast_key("SlidingWindowP")
    p, out = init("SlidingWindowP", AT_LEAST_ONCE)
    p.restore_from_snapshot_entry(key, 2)
    p.restore_from_snapshot_entry(key, 1)
    assert p.finish_snapshot_restore()
    # nextWinToEmit == 1: the window ending at 0 is out (-1 late), the one ending at 1 is not
    assert run_items(p, out, [("k", -1), ("k", 0)]) == [WindowResult(0, 1, "k", 1)]
    assert late_items(p) == 1


def test_SlidingWindowP_failoverTest__when_noSnapshotRestored_then_wmIsMin() -> None:
    p, out = init("SlidingWindowP", AT_LEAST_ONCE)
    far = -(10**18)
    assert run_items(p, out, [("k", far)]) == [WindowResult(far, far + 1, "k", 1)]
    assert late_items(p) == 0


def test_SessionWindowP_failoverTest__when_differentWmAtLeastOnce_then_useMin() -> None:
    key = broadcast_key("SessionWindowP")
    p, out = init("SessionWindowP", AT_LEAST_ONCE)
    p.restore_from_snapshot_entry(key, 2)
    p.restore_from_snapshot_entry(key, 1)
    assert p.finish_snapshot_restore()
    # currentWatermark == 1: an item at 0 is late, one at 1 is not
    assert run_items(p, out, [("k", 0), ("k", 1)]) == [WindowResult(1, 1 + SESSION_TIMEOUT, "k", 1)]
    assert late_items(p) == 1


def test_SessionWindowP_failoverTest__when_noSnapshotRestored_then_wmIsMin() -> None:
    p, out = init("SessionWindowP", AT_LEAST_ONCE)
    far = -(10**18)
    assert run_items(p, out, [("k", far)]) == [WindowResult(far, far + SESSION_TIMEOUT, "k", 1)]
    assert late_items(p) == 0

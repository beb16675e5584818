"""`changed_snapshot_keys` of the built-ins: an incremental snapshot writes the keys that changed,
a deletion for each key the processor let go of (window emitted, session closed, ...), every
broadcast entry, and nothing of the keys that did not change.

Each test drives one processor through the test kit's harness in an incremental mode: the first
snapshot is full, the next ones write only what changed (`Harness.deltas`).
"""

from __future__ import annotations

import operator
import pickle
from typing import Any

from jetspark import processors as P
from jetspark.core import BroadcastKey, Watermark
from jetspark.core.suppliers import SupplierLike
from jetspark.engine.snapshot import DELETED, opened_entries, saves_incrementally
from jetspark.testing._harness import Harness
from jetspark.testing._verify import driven_harness

ts_of = operator.itemgetter(0)
key_of = operator.itemgetter(1)
GONE = "deleted"


def harness(supplier: SupplierLike, ordinals: int = 1, outbox_capacity: int = 16) -> Harness:
    return driven_harness(supplier, ordinals=ordinals, outbox_capacity=outbox_capacity, incremental=True)


def delta(h: Harness) -> dict[Any, Any]:
    """Take a snapshot; what it wrote, by key (a deletion as GONE). It must be incremental."""
    h.snapshot(restore=False)
    written = h.deltas[-1]
    assert written is not None, "the snapshot was not incremental"
    return {
        pickle.loads(e.key): GONE if e.value == DELETED else pickle.loads(e.value)
        for e in opened_entries(written)
    }


def watermark(h: Harness, timestamp: int, ordinals: int = 1) -> None:
    for ordinal in range(ordinals):
        h.feed_watermark(ordinal, Watermark(timestamp))


def test_a_tumbling_window_deletes_the_key_whose_window_went_out() -> None:
    h = harness(P.aggregate_to_sliding_window(key_of, ts_of, P.WindowPolicy.tumbling(10), P.counting()))
    h.feed(0, [(1, "a"), (15, "b")])
    h.snapshot(restore=False)  # full
    watermark(h, 10)
    assert h.outputs[0][0] == P.WindowResult(0, 10, "a", 1)
    assert delta(h) == {"a": GONE, BroadcastKey("next-window"): 20}
    h.feed(0, [(16, "b")])
    assert delta(h) == {"b": (None, {20: 2}), BroadcastKey("next-window"): 20}


def test_a_sliding_window_deletes_the_key_whose_last_frame_left() -> None:
    h = harness(P.aggregate_to_sliding_window(key_of, ts_of, P.WindowPolicy.sliding(10, 5), P.counting()))
    h.feed(0, [(1, "a"), (31, "b")])
    h.snapshot(restore=False)
    watermark(h, 5)  # window [-5, 5) out: a's frame stays for [0, 10), a gets a floor
    assert delta(h) == {"a": (10, {5: 1}), BroadcastKey("next-window"): 10}
    watermark(h, 10)  # window [0, 10) out: a's frame is no longer needed
    assert delta(h) == {"a": GONE, BroadcastKey("next-window"): 15}
    assert delta(h) == {BroadcastKey("next-window"): 15}, "nothing changed: only the broadcast entry"


def test_first_stages_save_fully_their_keys_are_not_partitioned() -> None:
    """Two processors of a first stage may save one key (combined on restore); a delta keeps one
    entry per key, so these processors have no changed_snapshot_keys."""
    for supplier in (
        P.accumulate_by_frame(key_of, ts_of, P.WindowPolicy.sliding(10, 5), P.counting()),
        P.accumulate_by_key(key_of, P.counting()),
        P.accumulate(P.counting()),
    ):
        h = harness(supplier)
        assert not saves_incrementally(h.instances[0].processor), supplier
        h.close(None)


def test_window_stage_2_deletes_the_key_whose_window_went_out() -> None:
    h = harness(P.combine_to_sliding_window(P.WindowPolicy.tumbling(10), P.counting()))
    h.feed(0, [P.FrameEntry(10, "a", 2), P.FrameEntry(20, "b", 1)])
    h.snapshot(restore=False)
    h.feed(0, [P.FrameEntry(20, "b", 3)])
    watermark(h, 10)
    assert delta(h) == {"a": GONE, "b": (None, {20: 4}), BroadcastKey("next-window"): 20}


def test_a_session_window_deletes_the_key_whose_session_closed() -> None:
    h = harness(P.aggregate_to_session_window(key_of, ts_of, 5, P.counting()))
    h.feed(0, [(1, "a"), (30, "b")])
    h.snapshot(restore=False)
    watermark(h, 6)
    assert h.outputs[0][0] == P.WindowResult(1, 6, "a", 1)
    assert delta(h) == {"a": GONE, BroadcastKey("session-watermark"): 6}
    h.feed(0, [(32, "b")])
    assert delta(h) == {"b": [(30, 37, 2)], BroadcastKey("session-watermark"): 6}


def test_a_window_join_deletes_the_key_whose_window_went_out() -> None:
    h = harness(P.window_join(key_of, key_of, ts_of, ts_of, P.WindowPolicy.tumbling(10)), ordinals=2)
    h.feed(0, [(1, "a"), (30, "b")])
    h.feed(1, [(2, "a")])
    h.snapshot(restore=False)
    watermark(h, 10, ordinals=2)
    assert h.outputs[0][0] == ((1, "a"), (2, "a"))
    assert delta(h) == {"a": GONE, BroadcastKey("window-join-next"): 20}


def test_a_partitioned_hash_join_writes_only_the_build_keys_added_to() -> None:
    h = harness(P.hash_join(key_of, key_of, build="partitioned"), ordinals=2)
    h.feed(1, [(1, "a"), (2, "b")])
    h.snapshot(restore=False)
    h.feed(1, [(3, "a")])
    assert delta(h) == {"a": [(1, "a"), (3, "a")]}  # the build side is never let go of
    h.end_input(1)
    assert delta(h) == {BroadcastKey("hash-join-build-done"): True}


def test_distinct_writes_only_the_keys_first_seen() -> None:
    h = harness(P.distinct(key_of))
    h.feed(0, [(1, "a"), (2, "b")])
    h.snapshot(restore=False)
    h.feed(0, [(3, "a"), (4, "c")])
    assert delta(h) == {"c": True}  # keys are never forgotten: no deletions


def test_aggregate_stage_2_deletes_the_keys_emitted_between_complete_calls() -> None:
    h = harness(P.combine_by_key(P.counting()), outbox_capacity=1)
    h.feed(0, [("a", 1), ("b", 2), ("c", 3)])
    h.snapshot(restore=False)
    h.end_input(0)
    h.complete()  # one key per call (outbox capacity 1), a snapshot after each
    first = h.deltas[1]
    assert first is not None
    emitted = h.outputs[0][0][0]
    assert [(pickle.loads(e.key), e.value) for e in first] == [(emitted, DELETED)]

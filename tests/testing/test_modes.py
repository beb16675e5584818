"""How input is mixed and cut into inbox batches, and when a mode restores."""

from __future__ import annotations

from jetspark import Watermark
from jetspark.testing._context import Layout
from jetspark.testing._modes import Batch, EdgeDone, Group, Mode, WatermarkEvent, mix_inputs, to_events


def test_batches_hold_one_ordinal_at_most_inbox_size_items_and_watermarks_alone() -> None:
    mixed = mix_inputs([[1, 2, 3, Watermark(1), 4, 5]], [0])
    assert to_events(mixed, 2) == [
        Batch(0, (1, 2)),
        Batch(0, (3,)),
        WatermarkEvent(0, Watermark(1)),
        Batch(0, (4, 5)),
        EdgeDone(0),
    ]
    assert to_events(mixed, 1024)[0] == Batch(0, (1, 2, 3))


def test_priorities_then_round_robin() -> None:
    mixed = mix_inputs([["a"], ["b1", "b2"], ["c"], []], [1, 0, 1, 0])
    assert mixed == [
        EdgeDone(3),
        (1, "b1"),
        (1, "b2"),
        EdgeDone(1),
        (0, "a"),
        EdgeDone(0),
        (2, "c"),
        EdgeDone(2),
    ]


def test_restore_points() -> None:
    every_other = Mode(
        group=Group.RESTORE,
        inbox_size=1,
        outbox_capacity=1,
        snapshots=True,
        restore_every=2,
        layouts=(Layout(),),
    )
    assert [p for p in range(1, 7) if every_other.restores_at(p)] == [2, 4, 6]
    chosen = Mode(
        group=Group.RESTORE,
        inbox_size=1,
        outbox_capacity=1,
        snapshots=True,
        restore_points=frozenset({1, 5}),
        layouts=(Layout(),),
    )
    assert [p for p in range(1, 7) if chosen.restores_at(p)] == [1, 5]
    assert chosen.describe() == "inbox 1, outbox capacity 1, snapshot + restore at points [1, 5]"

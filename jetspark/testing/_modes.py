"""The modes one verification runs a processor in, and the input events each mode feeds it.

Modes differ in inbox batch size, outbox capacity, where snapshots are taken and restored, and how
many processors run (a redistribution mode restores into another layout at every point). Input is
mixed like Jet's TestSupport does: ordinals by priority, lower first, round-robin within a
priority, one item at a time; then cut into inbox batches of one ordinal, a watermark always alone.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Sequence
from typing import Any

import attrs

from jetspark.core.watermark import Watermark
from jetspark.testing._context import Layout

LARGE = 1024


class Group(enum.Enum):
    """Modes grouped by what they exercise; failures are classified by which groups fail."""

    PLAIN = "no snapshots"
    SNAPSHOT_ONLY = "snapshots never restored"
    RESTORE = "snapshot + restore"
    REDISTRIBUTION = "restore into another number of processors"


@attrs.frozen(kw_only=True)
class Mode:
    """One way of running the processor.

    Snapshot points are numbered from 1: before the first input, after each input batch, after
    each `complete()` that returned False having made progress. A mode restores at point n when
    `restore_every` divides n, or n is in `restore_points`. `layouts[0]` is the first layout; each
    restore moves to the next one, round the list. `multi` modes run every processor of the layout
    and route input and snapshot entries like a runner; the others run the one processor the
    verifier's indexes name and restore every entry into it, as Jet's TestSupport does.
    """

    group: Group
    inbox_size: int
    outbox_capacity: int
    snapshots: bool = False
    restore_every: int | None = None
    restore_points: frozenset[int] = frozenset()
    layouts: tuple[Layout, ...]
    multi: bool = False
    #: Snapshots after the first are incremental where every processor names the keys it changed
    #: (`changed_snapshot_keys`), a full one every `FULL_EVERY`-th; a restore applies the deltas.
    incremental: bool = False
    name: str = ""

    def restores_at(self, point: int) -> bool:
        if point in self.restore_points:
            return True
        return self.restore_every is not None and point % self.restore_every == 0

    def describe(self) -> str:
        if self.name:
            return self.name
        parts = [f"inbox {self.inbox_size}", f"outbox capacity {self.outbox_capacity}"]
        if not self.snapshots:
            parts.append("no snapshots")
        elif self.multi:
            parts.append("restore at every point, alternating " + " <-> ".join(str(x) for x in self.layouts))
        elif self.restore_points:
            parts.append(f"snapshot + restore at points {sorted(self.restore_points)}")
        elif self.incremental:
            parts.append(
                f"incremental snapshots (changed_snapshot_keys) at every point, restore at every "
                f"{_ordinal_word(self.restore_every or 1)}"
            )
        elif self.restore_every is None:
            parts.append("snapshot at every point, never restored")
        elif self.restore_every == 1:
            parts.append("snapshot + restore at every point")
        else:
            parts.append(f"snapshot at every point, restore at every {_ordinal_word(self.restore_every)}")
        return ", ".join(parts)


def _ordinal_word(n: int) -> str:
    return {2: "other", 3: "third"}.get(n, f"{n}th")


def default_modes(
    *,
    layout: Layout,
    has_input: bool,
    snapshots: bool,
    small_capacity: int,
    redistribution: Sequence[tuple[Layout, Layout]],
    restore_points: Sequence[frozenset[int]],
) -> list[Mode]:
    """The modes of one verification, cheapest and most telling first."""
    single = (layout,)
    modes = [Mode(group=Group.PLAIN, inbox_size=1, outbox_capacity=small_capacity, layouts=single)]
    if has_input:
        modes.append(
            Mode(group=Group.PLAIN, inbox_size=LARGE, outbox_capacity=small_capacity, layouts=single)
        )
    modes.append(Mode(group=Group.PLAIN, inbox_size=LARGE, outbox_capacity=LARGE, layouts=single))
    if not snapshots:
        return modes
    # every snapshot mode: one item per batch, the small outbox
    snapshot_mode = functools.partial(
        Mode, inbox_size=1, outbox_capacity=small_capacity, snapshots=True, layouts=single
    )
    for every in (None, 1, 2):
        group = Group.SNAPSHOT_ONLY if every is None else Group.RESTORE
        modes.append(snapshot_mode(group=group, restore_every=every))
    modes.append(snapshot_mode(group=Group.RESTORE, restore_every=3, incremental=True))
    for points in restore_points:
        modes.append(snapshot_mode(group=Group.RESTORE, restore_points=points))
    for before, after in redistribution:
        modes.append(
            snapshot_mode(group=Group.REDISTRIBUTION, restore_every=1, layouts=(before, after), multi=True)
        )
    return modes


# ---- input events ---------------------------------------------------------------------------


@attrs.frozen
class Batch:
    ordinal: int
    items: tuple[Any, ...]


@attrs.frozen
class WatermarkEvent:
    ordinal: int
    watermark: Watermark


@attrs.frozen
class EdgeDone:
    ordinal: int


Event = Batch | WatermarkEvent | EdgeDone


def mix_inputs(
    inputs: Sequence[Sequence[Any]], priorities: Sequence[int]
) -> list[tuple[int, Any] | EdgeDone]:
    """Items as (ordinal, item) in delivery order, with an `EdgeDone` after each ordinal's last item
    (at the start of its priority group if it has none)."""
    out: list[tuple[int, Any] | EdgeDone] = []
    for priority in sorted(set(priorities)):
        ordinals = [o for o, p in enumerate(priorities) if p == priority]
        out.extend(EdgeDone(o) for o in ordinals if not inputs[o])
        longest = max((len(inputs[o]) for o in ordinals), default=0)
        for index in range(longest):
            for o in ordinals:
                if index < len(inputs[o]):
                    out.append((o, inputs[o][index]))
                    if index == len(inputs[o]) - 1:
                        out.append(EdgeDone(o))
    return out


def to_events(mixed: Sequence[tuple[int, Any] | EdgeDone], inbox_size: int) -> list[Event]:
    """Cut the mixed input into inbox batches: one ordinal each, at most `inbox_size` items,
    watermarks on their own."""
    events: list[Event] = []
    current: list[Any] = []
    current_ordinal = -1

    def cut() -> None:
        if current:
            events.append(Batch(current_ordinal, tuple(current)))
            current.clear()

    for entry in mixed:
        if isinstance(entry, EdgeDone):
            cut()
            events.append(entry)
            continue
        ordinal, item = entry
        if isinstance(item, Watermark):
            cut()
            events.append(WatermarkEvent(ordinal, item))
            continue
        if ordinal != current_ordinal or len(current) >= inbox_size:
            cut()
            current_ordinal = ordinal
        current.append(item)
    cut()
    return events

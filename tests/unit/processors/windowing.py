"""Plain-Python reference computations for the window and join processors' tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from jetspark.core import AbstractProcessor, Watermark
from jetspark.processors import WindowPolicy


def window_ends(policy: WindowPolicy, timestamp: int) -> range:
    """The ends of the windows holding `timestamp`."""
    first = policy.frame_end(timestamp)
    return range(first, first + policy.window_size, policy.frame_size)


def late_flags(policy: WindowPolicy, stream: Sequence[Any], timestamp_of: Any) -> list[bool]:
    """For each item of `stream` (watermarks among them), whether a window processor that saw the
    stream in this order drops it: its first window ended at or before the last watermark."""
    next_win: int | None = None
    flags: list[bool] = []
    for item in stream:
        if isinstance(item, Watermark):
            candidate = policy.floor_frame(item.timestamp) + policy.frame_size
            next_win = candidate if next_win is None else max(next_win, candidate)
            continue
        flags.append(next_win is not None and policy.frame_end(timestamp_of(item)) < next_win)
    return flags


def window_counts(
    policy: WindowPolicy, events: Iterable[tuple[int, str]]
) -> Counter[tuple[int, int, str, int]]:
    """`(start, end, key, count)` of every window with items, for `(timestamp, key)` events."""
    counts: Counter[tuple[int, int, str]] = Counter()
    for timestamp, key in events:
        for end in window_ends(policy, timestamp):
            counts[(end - policy.window_size, end, key)] += 1
    return Counter((start, end, key, n) for (start, end, key), n in counts.items())


def session_counts(events: Iterable[tuple[int, str]], gap: int) -> Counter[tuple[int, int, str, int]]:
    """`(start, end, key, count)` of every session: a key's maximal run of timestamps each less
    than `gap` after the one before; the session ends `gap` after its last timestamp."""
    by_key: dict[str, list[int]] = {}
    for timestamp, key in events:
        by_key.setdefault(key, []).append(timestamp)
    out: Counter[tuple[int, int, str, int]] = Counter()
    for key, stamps in by_key.items():
        stamps.sort()
        start, last, n = stamps[0], stamps[0], 0
        for t in stamps:
            if t >= last + gap:
                out[(start, last + gap, key, n)] += 1
                start, n = t, 0
            last, n = t, n + 1
        out[(start, last + gap, key, n)] += 1
    return out


def results_counter(items: Iterable[Any]) -> Counter[tuple[int, int, str, int]]:
    """The `WindowResult`s among `items` as `(start, end, key, value)` (watermarks skipped)."""
    return Counter(
        (r.start, r.end, r.key, r.value) for r in items if not isinstance(r, Watermark) and not r.early
    )


class QuietSource(AbstractProcessor):
    """Emits its items, then stays open without emitting anything: a quiet streaming source."""

    def __init__(self, items: list[Any]) -> None:
        self.items = list(items)

    def complete(self) -> bool:
        while self.items and self.try_emit(self.items[0]):
            self.items.pop(0)
        return False

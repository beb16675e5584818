"""Session windows, with Jet's `SessionWindowP` semantics.

An item with timestamp `t` opens the session `[t, t + gap)`; sessions of one key that overlap merge
(their accumulators are combined), so a session is `[first timestamp, last timestamp + gap)`. A
session is complete when the watermark reaches its end (no later item could extend it): it is then
emitted as `WindowResult(start, end, key, finish(acc))` and forgotten. An item whose timestamp is
below the last watermark is late: counted in `late_items_dropped` and dropped.

One stage only, unlike sliding windows: a stage-1 processor cannot tell when a session it sees a
part of is complete, because another processor's items of the same key may bridge the gap, so
the items themselves must meet in one processor. Feed it with an edge partitioned by the key.

Snapshots: one entry per key (its open sessions), keyed by the key, plus the last watermark as a
`BroadcastKey` entry (a restored processor takes the lowest). A session leaves the state once
emitted, so a snapshot between `complete()` calls never makes a restored processor repeat it.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable, Hashable
from typing import Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.keyed_state import keys_to_offer
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.core.watermark import BroadcastKey, Watermark
from jetspark.processors._snapshots import EntryWriter, lowest
from jetspark.processors._timestamps import WatermarkWatch, bad_timestamp
from jetspark.processors.aggregate import AggregateOperation
from jetspark.processors.windows import LATE_ITEMS_METRIC, WindowResult

_LAST_WATERMARK = BroadcastKey("session-watermark")


class _SessionWindowP(AbstractProcessor):
    def __init__(
        self,
        key_fn: Callable[[Any], Hashable],
        timestamp_fn: Callable[[Any], int],
        gap: int,
        op: AggregateOperation,
    ) -> None:
        self._key_fn = key_fn
        self._timestamp_fn = timestamp_fn
        self._gap = gap
        self._op = op
        #: key -> open sessions `[start, end, acc]`, disjoint
        self._sessions: dict[Hashable, list[list[Any]]] = {}
        self._wm: int | None = None
        self._late = 0
        #: `(end, sequence, key)` of every session made or extended, earliest end first; an entry
        #: whose session was extended or merged since is stale and skipped when it comes up.
        self._deadlines: list[tuple[int, int, Hashable]] = []
        self._sequence = itertools.count()
        self._closing: list[tuple[Hashable, list[Any]]] | None = None
        self._closing_index = 0
        self._writer = EntryWriter()
        self._restored_wm: int | None = None
        self._wm_watch = WatermarkWatch()
        #: Keys whose sessions changed since the last save or restore (`changed_snapshot_keys`);
        #: None until the first of them: a job that never snapshots tracks nothing.
        self._changed: set[Hashable] | None = None

    def custom_metrics(self) -> dict[str, int]:
        return {LATE_ITEMS_METRIC: self._late}

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        timestamp = self._timestamp_fn(item)
        try:
            if self._wm is not None and timestamp < self._wm:
                self._late += 1
                return True
            end = timestamp + self._gap
        except TypeError as error:  # a datetime timestamp, say: say so, naming the vertex
            clear = bad_timestamp(self.context.vertex_name, self._timestamp_fn, item)
            if clear is None:
                raise
            raise clear from error
        op = self._op
        self._add(self._key_fn(item), timestamp, end, op.accumulate(op.create(), item))
        return True

    def try_process(self) -> bool:
        if self._wm_watch.active:
            self._wm_watch.poll(bool(self._sessions), self.context, "holds sessions")
        return True

    def _add(self, key: Hashable, start: int, end: int, acc: Any) -> None:
        """Merge the session `[start, end)` into the key's sessions."""
        if self._changed is not None:
            self._changed.add(key)
        sessions = self._sessions.get(key)
        if sessions is None:
            self._sessions[key] = [[start, end, acc]]
            heapq.heappush(self._deadlines, (end, next(self._sequence), key))
            return
        combine = self._op.combine
        kept: list[list[Any]] = []
        merged = [start, end, acc]
        latest = None  # the latest end among the sessions merged into this one
        for session in sessions:
            if session[0] < merged[1] and merged[0] < session[1]:
                latest = session[1] if latest is None else max(latest, session[1])
                merged = [
                    min(session[0], merged[0]),
                    max(session[1], merged[1]),
                    combine(session[2], merged[2]),
                ]
            else:
                kept.append(session)
        kept.append(merged)
        self._sessions[key] = kept
        # Every session has a deadline with its end. A merged session that ends where one of
        # its parts ended has it already: an item inside a session adds none (one per item
        # would pile up until the watermark passed them).
        if latest is None or latest < end:
            heapq.heappush(self._deadlines, (merged[1], next(self._sequence), key))

    def try_process_watermark(self, watermark: Watermark) -> bool:
        self._wm_watch.active = False
        if not self._emit_closed(watermark.timestamp):
            return False
        if not self.outbox.offer(watermark):
            return False
        self._wm = watermark.timestamp
        return True

    def complete(self) -> bool:
        return self._emit_closed(None)

    def _emit_closed(self, wm: int | None) -> bool:
        """Emit (and forget) every session ending at or before `wm` (None: all), oldest first."""
        if self._closing is None:
            self._closing = self._closed_sessions(wm)
            self._closing_index = 0
        closing = self._closing
        offer = self.outbox.offer
        finish = self._op.finish
        outbox = self.outbox
        while self._closing_index < len(closing):
            if outbox.room() <= 0:  # no refused offer: it would hold up a snapshot (see windows.py)
                return False
            key, session = closing[self._closing_index]
            if not offer(WindowResult(session[0], session[1], key, finish(session[2]))):
                return False
            self._closing_index += 1
            sessions = self._sessions[key]
            sessions.remove(session)
            if not sessions:
                del self._sessions[key]
            if self._changed is not None:
                self._changed.add(key)
        self._closing = None
        return True

    def _closed_sessions(self, wm: int | None) -> list[tuple[Hashable, list[Any]]]:
        """The sessions ending at or before `wm` (None: all), by end; found through the deadlines,
        so a watermark costs in proportion to the sessions it closes, not to all keys."""
        if wm is None:
            self._deadlines.clear()
            closing = [(key, s) for key, sessions in self._sessions.items() for s in sessions]
            closing.sort(key=lambda entry: entry[1][1])
            return closing
        deadlines = self._deadlines
        closing = []
        taken: set[int] = set()
        while deadlines and deadlines[0][0] <= wm:
            end, _, key = heapq.heappop(deadlines)
            for session in self._sessions.get(key, ()):
                if session[1] == end and id(session) not in taken:
                    taken.add(id(session))
                    closing.append((key, session))
        return closing

    def save_to_snapshot(self) -> bool:
        if not self._writer.save(self.outbox, self._snapshot_entries):
            return False
        self._changed = set()
        return True

    def changed_snapshot_keys(self) -> set[Hashable]:
        """Keys whose sessions changed (or closed) since the last save or restore (incremental
        snapshots); the first time, every key held. The watermark entry is a `BroadcastKey`,
        written in every save."""
        return set(self._sessions) if self._changed is None else self._changed

    def _snapshot_entries(self) -> list[tuple[Any, Any]]:
        only = self.outbox.keys_to_save()
        held = self._sessions
        keys = keys_to_offer(held, only)
        entries: list[tuple[Any, Any]] = [(key, [tuple(s) for s in held[key]]) for key in keys]
        if self._wm is not None:
            entries.append((_LAST_WATERMARK, self._wm))
        return entries

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if isinstance(key, BroadcastKey):
            if key != _LAST_WATERMARK:
                raise ValueError(
                    f"vertex {self.context.vertex_name!r}: unexpected snapshot entry {key!r} for a session window"
                )
            self._restored_wm = lowest(self._restored_wm, value)
            return
        for start, end, acc in value:
            self._add(key, start, end, acc)

    def finish_snapshot_restore(self) -> bool:
        self._changed = set()
        if self._restored_wm is not None:
            self._wm = self._restored_wm
        return True


def aggregate_to_session_window(
    key_fn: Callable[[Any], Hashable],
    timestamp_fn: Callable[[Any], int],
    gap: int,
    op: AggregateOperation,
) -> ProcessorSupplier:
    """Session windows per `key_fn(item)`: sessions closed by a `gap` without items, emitted as
    `WindowResult(start, end, key, finish(acc))` once the watermark reaches their end (all at
    `complete()`). Feed it with an edge partitioned by `key_fn` (see the module docstring).

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> def user(event): return event[1]
    >>> def ts(event): return event[0]
    >>> events = [(0, "ann"), (20, "ann"), (200, "ann"), (5, "bob")]
    >>> dag = DAG()
    >>> source = dag.new_vertex("events", P.from_iterable(events))
    >>> sessions = dag.new_vertex("sessions", P.aggregate_to_session_window(user, ts, 50, P.counting()))
    >>> _ = dag.edge(Edge.between(source, sessions).partitioned(user))
    >>> _ = dag.edge(Edge.between(sessions, dag.new_vertex("sink", P.collect())))
    >>> for result in sorted(run_dag(dag).result("sink"), key=lambda r: (r.key, r.start)):
    ...     print(result.key, result.start, result.end, result.value)
    ann 0 70 2
    ann 200 250 1
    bob 5 55 1
    ```

    :param key_fn: the grouping key of an item.
    :param timestamp_fn: the event time of an item.
    :param gap: a session ends when its key has no item for this long.
    :param op: how to aggregate (`counting()`, `to_list()`, ...).
    """
    if gap <= 0:
        raise ValueError(f"aggregate_to_session_window: gap must be > 0, got {gap}")
    return ProcessorSupplier.of(
        functools.partial(_SessionWindowP, key_fn, timestamp_fn, gap, op),
        keyed_input_reason="aggregate_to_session_window: a key's sessions form in one processor",
    )

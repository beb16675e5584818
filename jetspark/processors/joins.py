"""Joins: a hash join (build side collected first, probe side streamed) and a windowed
stream-to-stream join.

Hash join (Jet's `HashJoinP`): ordinal 0 is the probe stream, ordinal 1 the build side. The build
edge must have a lower priority value than the probe edge (`Edge.with_priority(-1)`), so that the
engine drains it completely before the first probe item: the processor then holds every build
item by key, and each probe item is emitted joined with each build item of its key. With
`build="broadcast"` every processor gets the whole build side (broadcast edge) and the probe edge
may be anything; with `build="partitioned"` both edges must be partitioned by the join key.
The build map is the snapshot state: broadcast, processor 0 alone saves it, as `BroadcastKey`
entries every restored processor reads; partitioned, one entry per key, restored to its owner.

Window join: both inputs are cut into the windows of a `WindowPolicy`; when the watermark passes a
window's end, every left item is emitted paired with every right item of the same key and window,
key by key, and the window is forgotten. Items behind an emitted window are late (counted in
`late_items_dropped`, dropped). Both edges must be partitioned by the join key. Snapshot: per key,
its windows' items and how many pairs of the window being emitted went out already.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.errors import ProcessorContractError
from jetspark.core.keyed_state import keys_to_offer
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.core.watermark import BroadcastKey, Watermark
from jetspark.processors._snapshots import EntryWriter, by_key, lowest
from jetspark.processors._timestamps import bad_timestamp
from jetspark.processors.windows import LATE_ITEMS_METRIC, WindowPolicy

_BUILD_DONE = BroadcastKey("hash-join-build-done")
_NEXT_WINDOW = BroadcastKey("window-join-next")
_BUILD_MODES = ("broadcast", "partitioned")


def pair(left: Any, right: Any) -> Any:
    """The default join output: the tuple `(left, right)`.

    ```pycon
    >>> from jetspark import processors as P
    >>> P.pair("order-1", "customer-7")
    ('order-1', 'customer-7')
    ```

    :param left: the probe (or left) item.
    :param right: the build (or right) item, None for an outer join's probe item without a match.
    """
    return (left, right)


class _HashJoinP(AbstractProcessor):
    def __init__(
        self,
        probe_key_fn: Callable[[Any], Hashable],
        build_key_fn: Callable[[Any], Hashable],
        mapper: Callable[[Any, Any], Any],
        outer: bool,
        broadcast: bool,
    ) -> None:
        self._probe_key_fn = probe_key_fn
        self._build_key_fn = build_key_fn
        self._mapper = mapper
        self._outer = outer
        self._broadcast = broadcast
        self._table: dict[Hashable, list[Any]] = {}
        self._build_done = False
        self._matches: list[Any] | None = None
        self._match_index = 0
        self._writer = EntryWriter()
        #: Build keys added to since the last save or restore (`changed_snapshot_keys`); None
        #: until the first of them.
        self._changed: set[Hashable] | None = None

    def try_process1(self, item: Any) -> bool:
        key = self._build_key_fn(item)
        self._table.setdefault(key, []).append(item)
        if self._changed is not None:
            self._changed.add(key)
        return True

    def complete_edge(self, ordinal: int) -> bool:
        if ordinal == 1:
            self._build_done = True
        return True

    def try_process0(self, item: Any) -> bool:
        if not self._build_done:
            raise ProcessorContractError(
                f"vertex {self.context.vertex_name!r}: a probe item (ordinal 0) arrived before the "
                "build side (ordinal 1) was complete; give the build edge a lower priority value "
                "than the probe edge, e.g. Edge.with_priority(-1)"
            )
        matches = self._matches
        if matches is None:
            found = self._table.get(self._probe_key_fn(item))
            mapper = self._mapper
            if found:
                matches = [joined for other in found if (joined := mapper(item, other)) is not None]
            elif self._outer:
                joined = mapper(item, None)
                matches = [] if joined is None else [joined]
            else:
                return True
            self._matches = matches
            self._match_index = 0
        offer = self.outbox.offer
        while self._match_index < len(matches):
            if not offer(matches[self._match_index]):
                return False
            self._match_index += 1
        self._matches = None
        return True

    def save_to_snapshot(self) -> bool:
        if not self._writer.save(self.outbox, self._snapshot_entries):
            return False
        self._changed = set()
        return True

    def changed_snapshot_keys(self) -> set[Hashable]:
        """Build keys added to since the last save or restore (incremental snapshots); the
        first time, every key. A broadcast build side is saved as `BroadcastKey` entries, which
        every save writes whole: only a partitioned one gains."""
        if self._broadcast:
            return set()
        return set(self._table) if self._changed is None else self._changed

    def _snapshot_entries(self) -> list[tuple[Any, Any]]:
        entries: list[tuple[Any, Any]] = []
        only = self.outbox.keys_to_save()
        table = self._table
        if not self._broadcast:
            keys = keys_to_offer(table, only)
            entries = [(key, table[key]) for key in keys]
        elif self.context.global_processor_index == 0:
            entries = [(BroadcastKey(("build", key)), items) for key, items in self._table.items()]
        if self._build_done:
            entries.append((_BUILD_DONE, True))
        return entries

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if key == _BUILD_DONE:
            self._build_done = True
            return
        if isinstance(key, BroadcastKey):
            key = key.key[1]
        self._table.setdefault(key, []).extend(value)

    def finish_snapshot_restore(self) -> bool:
        self._changed = set()
        return True


def hash_join(
    probe_key_fn: Callable[[Any], Hashable],
    build_key_fn: Callable[[Any], Hashable],
    mapper: Callable[[Any, Any], Any] = pair,
    outer: bool = False,
    build: str = "broadcast",
) -> ProcessorSupplier:
    """Join the probe stream (ordinal 0) with the build side (ordinal 1) on equal keys; emit
    `mapper(probe_item, build_item)` per match (with `outer`, `mapper(probe_item, None)` for a
    probe item without any); a `mapper` result of None is not emitted (as in Jet). See the
    module docstring for the edges `build` asks for.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> orders = [("o1", "c1"), ("o2", "c2"), ("o3", "c9")]
    >>> customers = [("c1", "Ann"), ("c2", "Bob")]
    >>> dag = DAG()
    >>> probe = dag.new_vertex("orders", P.from_iterable(orders))
    >>> build = dag.new_vertex("customers", P.from_iterable(customers))
    >>> join = dag.new_vertex("join", P.hash_join(lambda o: o[1], lambda c: c[0], outer=True))
    >>> _ = dag.edge(Edge.between(probe, join))
    >>> _ = dag.edge(Edge.from_(build).to(join, 1).broadcast().distributed().with_priority(-1))
    >>> _ = dag.edge(Edge.between(join, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"))
    [(('o1', 'c1'), ('c1', 'Ann')), (('o2', 'c2'), ('c2', 'Bob')), (('o3', 'c9'), None)]
    ```

    :param probe_key_fn: the join key of a probe item (ordinal 0).
    :param build_key_fn: the join key of a build item (ordinal 1).
    :param mapper: makes the output of a probe item and a build item (`pair` by default).
    :param outer: also emit `mapper(probe_item, None)` for a probe item without a match.
    :param build: "broadcast" (every processor holds the whole build side) or "partitioned" (both
        edges partitioned by the join key).
    """
    if build not in _BUILD_MODES:
        raise ValueError(f"hash_join: build must be one of {_BUILD_MODES}, got {build!r}")
    return ProcessorSupplier.of(
        functools.partial(_HashJoinP, probe_key_fn, build_key_fn, mapper, outer, build == "broadcast")
    )


class _WindowJoinP(AbstractProcessor):
    def __init__(
        self,
        key_fns: tuple[Callable[[Any], Hashable], Callable[[Any], Hashable]],
        timestamp_fns: tuple[Callable[[Any], int], Callable[[Any], int]],
        policy: WindowPolicy,
        mapper: Callable[[Any, Any], Any],
    ) -> None:
        self._key_fns = key_fns
        self._timestamp_fns = timestamp_fns
        self._policy = policy
        self._mapper = mapper
        #: window end -> key -> [left items, right items, pairs already emitted]
        self._windows: dict[int, dict[Hashable, list[Any]]] = {}
        self._next_win: int | None = None
        self._late = 0
        self._restored_next: int | None = None
        self._writer = EntryWriter()
        #: Keys whose windows changed since the last save or restore (`changed_snapshot_keys`);
        #: None until the first of them.
        self._changed: set[Hashable] | None = None

    def custom_metrics(self) -> dict[str, int]:
        return {LATE_ITEMS_METRIC: self._late}

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        policy = self._policy
        try:
            first = policy.frame_end(self._timestamp_fns[ordinal](item))
        except TypeError as error:  # a datetime timestamp, say: say so, naming the vertex
            clear = bad_timestamp(self.context.vertex_name, self._timestamp_fns[ordinal], item)
            if clear is None:
                raise
            raise clear from error
        if self._next_win is not None and first < self._next_win:
            self._late += 1
            return True
        key = self._key_fns[ordinal](item)
        if self._changed is not None:
            self._changed.add(key)
        for end in range(first, first + policy.window_size, policy.frame_size):
            sides = self._windows.setdefault(end, {}).get(key)
            if sides is None:
                sides = self._windows[end][key] = [[], [], 0]
            sides[ordinal].append(item)
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        limit = self._policy.floor_frame(watermark.timestamp)
        if not self._emit(limit):
            return False
        if not self.outbox.offer(watermark):
            return False
        next_win = limit + self._policy.frame_size
        if self._next_win is None or next_win > self._next_win:
            self._next_win = next_win
        return True

    def complete(self) -> bool:
        return self._emit(None)

    def _emit(self, limit: int | None) -> bool:
        """Emit the pairs of every window ending at or before `limit` (None: all), oldest first."""
        windows = self._windows
        offer = self.outbox.offer
        room = self.outbox.room
        mapper = self._mapper
        changed = self._changed
        for end in sorted(windows):
            if limit is not None and end > limit:
                break
            keys = windows[end]
            for key in list(keys):
                lefts, rights, done = keys[key]
                width = len(rights)
                total = len(lefts) * width
                if changed is not None:
                    changed.add(key)
                while done < total:
                    # no refused offer: it would hold up a snapshot between complete() calls
                    if room() <= 0 or not offer(mapper(lefts[done // width], rights[done % width])):
                        keys[key][2] = done
                        return False
                    done += 1
                del keys[key]
            del windows[end]
        return True

    def save_to_snapshot(self) -> bool:
        if not self._writer.save(self.outbox, self._snapshot_entries):
            return False
        self._changed = set()
        return True

    def changed_snapshot_keys(self) -> set[Hashable]:
        """Keys whose windows got items or emitted pairs since the last save or restore
        (incremental snapshots); the first time, every key held. The next-window entry is a
        `BroadcastKey`, written in every save."""
        if self._changed is None:
            return {key for keys in self._windows.values() for key in keys}
        return self._changed

    def _snapshot_entries(self) -> list[tuple[Any, Any]]:
        grouped = by_key(self._windows, self.outbox.keys_to_save())
        entries: list[tuple[Any, Any]] = list(grouped.items())
        if self._next_win is not None:
            entries.append((_NEXT_WINDOW, self._next_win))
        return entries

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if isinstance(key, BroadcastKey):
            self._restored_next = lowest(self._restored_next, value)
            return
        for end, (lefts, rights, done) in value.items():
            self._windows.setdefault(end, {})[key] = [list(lefts), list(rights), done]

    def finish_snapshot_restore(self) -> bool:
        self._changed = set()
        if self._restored_next is not None:
            self._next_win = self._restored_next
        return True


def window_join(
    left_key_fn: Callable[[Any], Hashable],
    right_key_fn: Callable[[Any], Hashable],
    left_timestamp_fn: Callable[[Any], int],
    right_timestamp_fn: Callable[[Any], int],
    policy: WindowPolicy,
    mapper: Callable[[Any, Any], Any] = pair,
) -> ProcessorSupplier:
    """Join two streams (ordinals 0 and 1) per window of `policy` on equal keys: when the
    watermark passes a window's end, emit `mapper(left, right)` for each pair of that window
    with equal keys (an inner join; a pair in several sliding windows comes once per window).

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> clicks = [(10, "ad1"), (150, "ad1")]           # (time, ad)
    >>> views = [(5, "ad1"), (120, "ad2"), (130, "ad1")]
    >>> def key(event): return event[1]
    >>> def ts(event): return event[0]
    >>> dag = DAG()
    >>> left = dag.new_vertex("clicks", P.from_iterable(clicks))
    >>> right = dag.new_vertex("views", P.from_iterable(views))
    >>> join = dag.new_vertex("join", P.window_join(key, key, ts, ts, P.WindowPolicy.tumbling(100)))
    >>> _ = dag.edge(Edge.between(left, join).partitioned(key))
    >>> _ = dag.edge(Edge.from_(right).to(join, 1).partitioned(key))
    >>> _ = dag.edge(Edge.between(join, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"))
    [((10, 'ad1'), (5, 'ad1')), ((150, 'ad1'), (130, 'ad1'))]
    ```

    :param left_key_fn: the join key of a left item (ordinal 0).
    :param right_key_fn: the join key of a right item (ordinal 1).
    :param left_timestamp_fn: the event time of a left item.
    :param right_timestamp_fn: the event time of a right item.
    :param policy: the windows (`WindowPolicy.tumbling` or `.sliding`).
    :param mapper: makes the output of a left and a right item (`pair` by default).
    """
    return ProcessorSupplier.of(
        functools.partial(
            _WindowJoinP,
            (left_key_fn, right_key_fn),
            (left_timestamp_fn, right_timestamp_fn),
            policy,
            mapper,
        )
    )

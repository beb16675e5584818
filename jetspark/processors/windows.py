"""Sliding and tumbling windows in two stages, with Jet's `SlidingWindowP` semantics.

Time is cut into frames of `frame_size` (the slide); a frame is named by its end, so the item with
timestamp `t` falls into the frame ending at `floor(t) + frame_size`. The window ending at `W` holds
the frames ending in `(W - window_size, W]`, i.e. the items of `[W - window_size, W)`.

Stage 1 (`accumulate_by_frame`) folds the items each processor receives into one accumulator per
(frame, key); when the watermark passes a frame's end it emits `FrameEntry(frame_end, key, acc)`.
Stage 2 (`combine_to_sliding_window`), fed by an edge partitioned by the entry's key, combines the
frames of all stage-1 processors and, when the watermark passes a window's end `W`, emits
`WindowResult(W - window_size, W, key, result)` for each key with data in the window, then the
watermark. `aggregate_to_sliding_window` does both in one processor (with its input partitioned by
key); `window_aggregate` adds the two stages to a DAG.

Lateness: once the window ending at `W` is out, an item whose frame ends at or before `W` is late:
it is counted in the metric `late_items_dropped` and dropped (also when only some of its windows
are out, as in Jet). How late an item may be is set by the watermark's allowed lag
(`insert_watermarks`). Early results: with `early_results_millis`, the last stage also emits, at
most that often while items arrive, the current state of every window not yet complete, marked
`early=True`; the final result follows as usual.

State and snapshots: frames are kept until the last window holding them is out. Results go out
key by key; a key whose result for the current window went out is marked (its *floor*), so a
snapshot taken between `complete()` calls never makes a restored processor repeat it. Each key's
frames and floor are one snapshot entry keyed by the grouping key (restored to the key's owner
under any parallelism); the next window to emit is a `BroadcastKey` entry, the minimum of which
every restored processor takes. `changed_snapshot_keys` names the keys whose frames or floor
changed since the last save, so an incremental snapshot writes only those (and deletions); not in
stage 1, whose keys are not partitioned.
"""

from __future__ import annotations

import copy
import functools
import operator
import time
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import attrs

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.dag import DAG, Vertex
from jetspark.core.edge import Edge
from jetspark.core.inbox import Inbox
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.core.watermark import BroadcastKey, Watermark
from jetspark.processors._snapshots import EntryWriter, by_key, lowest
from jetspark.processors._timestamps import WatermarkWatch, bad_timestamp
from jetspark.processors.aggregate import AggregateOperation, _count_one, _zero

_MISSING: Any = object()
_IMMUTABLE = frozenset({int, float, str, bool, bytes, type(None)})
_NEXT_WINDOW = BroadcastKey("next-window")
#: The metric a window or join processor counts dropped late items in.
LATE_ITEMS_METRIC = "late_items_dropped"


def clone_acc(acc: Any) -> Any:
    """A copy of an accumulator that a `combine` may consume (immutable ones are shared)."""
    return acc if acc.__class__ in _IMMUTABLE else copy.deepcopy(acc)


@attrs.frozen
class WindowPolicy:
    """Frames of `frame_size` (the slide), windows of `window_size` (a multiple of it), the grid
    shifted by `frame_offset`. Use `sliding(size, slide)` or `tumbling(size)`.

    ```pycon
    >>> from jetspark import processors as P
    >>> policy = P.WindowPolicy.sliding(1000, 250)
    >>> policy.frame_size, policy.window_size, policy.frame_end(1234)
    (250, 1000, 1250)
    >>> P.WindowPolicy.tumbling(100).is_tumbling
    True
    ```

    :ivar frame_size: the slide: windows start and end on multiples of it.
    :ivar window_size: the window's length, a multiple of `frame_size`.
    :ivar frame_offset: shifts the grid of frames (0: frames start at multiples of the slide).
    """

    frame_size: int
    window_size: int
    frame_offset: int = 0

    def __attrs_post_init__(self) -> None:
        if self.frame_size <= 0:
            raise ValueError(f"window policy: the slide (frame size) must be > 0, got {self.frame_size}")
        if self.window_size <= 0 or self.window_size % self.frame_size:
            raise ValueError(
                f"window policy: window size {self.window_size} must be a positive multiple of "
                f"the slide {self.frame_size}"
            )

    @staticmethod
    def sliding(window_size: int, slide: int, offset: int = 0) -> WindowPolicy:
        return WindowPolicy(slide, window_size, offset % slide if slide > 0 else 0)

    @staticmethod
    def tumbling(window_size: int, offset: int = 0) -> WindowPolicy:
        return WindowPolicy.sliding(window_size, window_size, offset)

    @property
    def is_tumbling(self) -> bool:
        return self.frame_size == self.window_size

    def floor_frame(self, timestamp: int) -> int:
        """The frame boundary at or below `timestamp`."""
        return timestamp - (timestamp - self.frame_offset) % self.frame_size

    def frame_end(self, timestamp: int) -> int:
        """The end (name) of the frame holding `timestamp` (Jet's `higherFrameTs`)."""
        return self.floor_frame(timestamp) + self.frame_size

    def align_frame_end(self, frame_end: int) -> int:
        """`frame_end` moved up to the nearest frame end of this grid (itself when on it): where
        a frame made under another slide or offset (a restored snapshot, a stage-1 processor with
        another policy, a frame built by hand) is kept, as Jet does with `higherFrameTs(ts - 1)`.
        Every item of such a frame is below the aligned end, so none falls outside its windows."""
        return self.frame_end(frame_end - 1)

    def frames_policy(self) -> WindowPolicy:
        """The tumbling policy of the frames themselves: what stage 1 emits by."""
        return WindowPolicy(self.frame_size, self.frame_size, self.frame_offset)


class WindowResult(NamedTuple):
    """One key's result for the window `[start, end)`; `early` for a result before the window closed.

    ```pycon
    >>> from jetspark import processors as P
    >>> result = P.WindowResult(0, 100, "/a", 2)
    >>> result.end - result.start, result.key, result.value, result.early
    (100, '/a', 2, False)
    ```

    :ivar start: where the window starts (inclusive).
    :ivar end: where the window ends (exclusive).
    :ivar key: the grouping key.
    :ivar value: the aggregate operation's result for the key in the window.
    :ivar early: True for a result emitted before the window closed (`early_results_millis`);
        False by default.
    """

    start: int
    end: int
    key: Any
    value: Any
    early: bool = False


class FrameEntry(NamedTuple):
    """Stage 1's output: one key's accumulator for the frame ending at `frame_end`.

    ```pycon
    >>> from jetspark import processors as P
    >>> entry = P.FrameEntry(frame_end=250, key="/a", acc=3)
    >>> P.frame_entry_key(entry)
    '/a'
    ```

    :ivar frame_end: the end of the frame (frames are named by their end).
    :ivar key: the grouping key.
    :ivar acc: the accumulator of the key's items in the frame.
    """

    frame_end: int
    key: Any
    acc: Any


#: Key function of the stage-1 -> stage-2 edge (partition by the frame entry's key). Picklable.
frame_entry_key: Callable[[FrameEntry], Any] = operator.itemgetter(1)


class _WindowP(AbstractProcessor):
    """Frames per (frame end, key); emits the windows the watermark closed, key by key."""

    def __init__(self, policy: WindowPolicy, op: AggregateOperation, early_millis: int = 0) -> None:
        self._policy = policy
        self._op = op
        self._frames: dict[int, dict[Hashable, Any]] = {}
        self._next_win: int | None = None  # windows ending below it are out
        self._floors: dict[Hashable, int] = {}  # key -> windows ending below it are out for the key
        self._late = 0
        # the window being emitted: its end, its keys, where we are
        self._current: int | None = None
        self._keys: list[Hashable] = []
        self._window: dict[Hashable, Any] = {}
        self._key_index = 0
        self._pending_item: Any = _MISSING
        self._writer = EntryWriter()
        self._restored_next: int | None = None
        self._early_seconds = early_millis / 1000
        self._last_early = time.monotonic()
        self._early: list[Any] | None = None
        self._early_index = 0
        self._wm_watch = WatermarkWatch()
        #: Keys whose snapshot entry changed since the last save or restore (`changed_snapshot_keys`);
        #: None until the first of them: a job that never snapshots tracks nothing.
        self._changed: set[Hashable] | None = None

    # ---- input -----------------------------------------------------------------------------

    def _is_late(self, frame_end: int) -> bool:
        next_win = self._next_win
        if next_win is not None and frame_end < next_win:
            self._late += 1
            return True
        return False

    def custom_metrics(self) -> dict[str, int]:
        return {LATE_ITEMS_METRIC: self._late}

    # ---- emission --------------------------------------------------------------------------

    def try_process_watermark(self, watermark: Watermark) -> bool:
        self._wm_watch.active = False
        limit = self._policy.floor_frame(watermark.timestamp)
        if not self._emit_windows(limit):
            return False
        next_win = limit + self._policy.frame_size
        if self._next_win is None or next_win > self._next_win:
            self._advance(next_win)
        return self.outbox.offer(watermark)

    def complete(self) -> bool:
        return self._emit_windows(None)

    def _advance(self, next_win: int) -> None:
        """Windows ending below `next_win` are out: drop frames no later window holds, and floors."""
        self._next_win = next_win
        self._drop_frames(next_win - self._policy.window_size)
        if self._floors:
            floors = self._floors
            if self._changed is not None:
                self._changed.update(k for k, f in floors.items() if f <= next_win)
            self._floors = {k: f for k, f in floors.items() if f > next_win}

    def _drop_frames(self, oldest_needed: int) -> None:
        """Frames ending at or before `oldest_needed` go: no window still to come holds them."""
        changed = self._changed
        for frame_end in [f for f in self._frames if f <= oldest_needed]:
            if changed is not None:
                changed.update(self._frames[frame_end])
            del self._frames[frame_end]

    def _next_window(self, limit: int | None) -> int | None:
        """The end of the earliest window with data, not yet out, ending at or before `limit`."""
        policy = self._policy
        span = policy.window_size - policy.frame_size
        low = self._next_win
        best: int | None = None
        for frame_end in self._frames:
            first = frame_end if low is None or frame_end >= low else low
            if first > frame_end + span:
                continue
            if best is None or first < best:
                best = first
        if best is None or (limit is not None and best > limit):
            return None
        return best

    def _emit_windows(self, limit: int | None) -> bool:
        """Emit every window ending at or before `limit` (None: all), key by key; False when the
        outbox is full (called again, it resumes)."""
        while True:
            if self._current is not None:
                if not self._emit_current():
                    return False
                self._advance(self._current + self._policy.frame_size)
                self._current = None
            end = self._next_window(limit)
            if end is None:
                return True
            self._start_window(end)

    def _window_frames(self, end: int) -> list[dict[Hashable, Any]]:
        policy = self._policy
        frames = self._frames
        start = end - policy.window_size + policy.frame_size
        return [frames[f] for f in range(start, end + 1, policy.frame_size) if f in frames]

    def _start_window(self, end: int) -> None:
        self._current = end
        self._window = self._window_accs(end)
        self._keys = list(self._window)
        self._key_index = 0

    def _window_accs(self, end: int) -> dict[Hashable, Any]:
        """Each key's accumulator over the window ending at `end`, in one pass over its frames.

        A tumbling window is its frame (handed out as it is: the frame goes with the window);
        a sliding one combines copies, since each frame serves several windows.
        """
        frames = self._window_frames(end)
        if self._policy.is_tumbling:
            return frames[0] if frames else {}
        combine = self._op.combine
        window: dict[Hashable, Any] = {}
        get = window.get
        for frame in frames:
            for key, part in frame.items():
                acc = get(key, _MISSING)
                window[key] = clone_acc(part) if acc is _MISSING else combine(acc, clone_acc(part))
        return window

    def _emit_current(self) -> bool:
        end = self._current
        assert end is not None
        keys = self._keys
        outbox = self.outbox
        offer = outbox.offer
        tumbling = self._policy.is_tumbling
        floors = self._floors
        while self._key_index < len(keys):
            key = keys[self._key_index]
            item = self._pending_item
            if item is _MISSING:
                # Stop while the outbox has no room rather than have an offer refused: a refused
                # item would hold up a snapshot between complete() calls until it went out.
                if outbox.room() <= 0:
                    return False
                if floors.get(key, end) > end:  # out before a snapshot this processor restored
                    self._key_index += 1
                    continue
                item = self._result(end, key, self._window[key])
            if not offer(item):
                self._pending_item = item
                return False
            self._pending_item = _MISSING
            self._key_index += 1
            if tumbling:
                del self._frames[end][key]
            else:
                floors[key] = end + self._policy.frame_size
            if self._changed is not None:
                self._changed.add(key)
        self._window = {}
        return True

    def _result(self, end: int, key: Hashable, acc: Any) -> Any:
        return WindowResult(end - self._policy.window_size, end, key, self._op.finish(acc))

    # ---- early results ---------------------------------------------------------------------

    def try_process(self) -> bool:
        if self._wm_watch.active:
            self._wm_watch.poll(bool(self._frames), self.context, "holds items")
        if not self._early_seconds:
            return True
        if self._early is None:
            now = time.monotonic()
            if now - self._last_early < self._early_seconds or not self._frames:
                return True
            self._last_early = now
            self._early = self._early_results()
            self._early_index = 0
        offer = self.outbox.offer
        early = self._early
        while self._early_index < len(early):
            if not offer(early[self._early_index]):
                return False
            self._early_index += 1
        self._early = None
        return True

    def _early_results(self) -> list[WindowResult]:
        policy = self._policy
        export = self._op.export
        top = max(self._frames)
        out: list[WindowResult] = []
        end = self._next_window(None)
        while end is not None and end <= top + policy.window_size - policy.frame_size:
            window = self._window_accs(end)
            for key, acc in window.items():
                if self._floors.get(key, end) > end:
                    continue
                if policy.is_tumbling:
                    acc = clone_acc(acc)
                out.append(WindowResult(end - policy.window_size, end, key, export(acc), True))
            end += policy.frame_size
        return out

    # ---- snapshots -------------------------------------------------------------------------

    def save_to_snapshot(self) -> bool:
        if not self._writer.save(self.outbox, self._snapshot_entries):
            return False
        self._changed = set()
        return True

    def changed_snapshot_keys(self) -> set[Hashable]:
        """Keys whose frames or floor changed since the last save or restore (incremental
        snapshots); the first time, every key held. The next-window entry is a `BroadcastKey`,
        written in every save.

        A key saved with the next window as its floor (none of its own) is not named when the
        next window moves on: its entry keeps the lower floor. That floor only matters for a
        window the key has frames in, and such a window going out names the key (it gets a
        floor of its own, or loses its frame)."""
        if self._changed is None:
            return {key for frame in self._frames.values() for key in frame} | set(self._floors)
        return self._changed

    def _snapshot_entries(self) -> list[tuple[Any, Any]]:
        grouped = by_key(self._frames, self.outbox.keys_to_save())
        # A key's floor: windows ending below it are out for the key. Tumbling windows need none
        # (a frame leaves with its window), and must not have one: stage 1's keys are not
        # partitioned, so another processor's frames of the key may still be due below it.
        floors = self._floors
        next_win = None if self._policy.is_tumbling else self._next_win
        entries: list[tuple[Any, Any]] = [
            (key, (floors.get(key, next_win), accs)) for key, accs in grouped.items()
        ]
        if self._next_win is not None:
            entries.append((_NEXT_WINDOW, self._next_win))
        return entries

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if isinstance(key, BroadcastKey):
            if key != _NEXT_WINDOW:
                raise ValueError(
                    f"vertex {self.context.vertex_name!r}: unexpected snapshot entry {key!r} for a window"
                )
            self._restored_next = lowest(self._restored_next, value)
            return
        floor, accs = value
        combine = self._op.combine
        align = self._policy.align_frame_end
        # Frames saved under another slide or offset land on this grid's next frame end; several
        # may land on one (combined), as in Jet's restore under a changed window policy.
        for frame_end, acc in accs.items():
            frame = self._frames.setdefault(align(frame_end), {})
            current = frame.get(key, _MISSING)
            frame[key] = acc if current is _MISSING else combine(current, acc)
        if floor is not None and not self._policy.is_tumbling:
            floor = align(floor)
            self._floors[key] = max(floor, self._floors.get(key, floor))

    def finish_snapshot_restore(self) -> bool:
        self._changed = set()
        if self._restored_next is not None:
            next_win = self._policy.align_frame_end(self._restored_next)
            self._next_win = next_win
            # A smaller window than the one saved: frames no window still to come holds.
            self._drop_frames(next_win - self._policy.window_size)
        return True


class _SlidingWindowP(_WindowP):
    """The last stage (or the only one): takes frame entries (`combine`) or items (`accumulate`)."""

    def __init__(
        self,
        policy: WindowPolicy,
        op: AggregateOperation,
        early_millis: int,
        key_fn: Callable[[Any], Hashable] | None,
        timestamp_fn: Callable[[Any], int] | None,
    ) -> None:
        super().__init__(policy, op, early_millis)
        self._key_fn = key_fn
        self._timestamp_fn = timestamp_fn

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if self._key_fn is None:
            self._combine_entries(inbox)
        else:
            self._accumulate_items(inbox)

    def _combine_entries(self, inbox: Inbox) -> None:
        """Frames from stage 1 (or built by hand), each aligned to this grid first: a frame end
        off the grid would otherwise name no window, and its items would be lost."""
        frames = self._frames
        combine = self._op.combine
        size = self._policy.frame_size
        offset = self._policy.frame_offset
        changed = self._changed
        for given_end, key, acc in inbox:
            below = given_end - 1
            frame_end = below - (below - offset) % size + size
            if self._is_late(frame_end):
                continue
            frame = frames.get(frame_end)
            if frame is None:
                frame = frames[frame_end] = {}
            current = frame.get(key, _MISSING)
            frame[key] = acc if current is _MISSING else combine(current, acc)
            if changed is not None:
                changed.add(key)
        _discard_all(inbox)

    def _accumulate_items(self, inbox: Inbox) -> None:
        """The hot loop: frame and lateness inline, the frame looked up only when it changes,
        counting without create/accumulate calls (as `aggregate_by_key` does)."""
        frames = self._frames
        key_fn = self._key_fn
        timestamp_fn = self._timestamp_fn
        assert key_fn is not None and timestamp_fn is not None
        size = self._policy.frame_size
        offset = self._policy.frame_offset
        next_win = self._next_win
        op = self._op
        counting = op.create is _zero and op.accumulate is _count_one
        create = op.create
        accumulate = op.accumulate
        changed = self._changed
        late = 0
        frame_end: Any = None
        frame: dict[Hashable, Any] = {}
        item: Any = None
        try:
            for item in inbox:
                timestamp = timestamp_fn(item)
                end = timestamp - (timestamp - offset) % size + size
                if next_win is not None and end < next_win:
                    late += 1
                    continue
                if end != frame_end:
                    frame_end = end
                    found = frames.get(end)
                    if found is None:
                        found = frames[end] = {}
                    frame = found
                key = key_fn(item)
                if counting:
                    frame[key] = frame.get(key, 0) + 1
                else:
                    acc = frame.get(key, _MISSING)
                    frame[key] = accumulate(create() if acc is _MISSING else acc, item)
                if changed is not None:
                    changed.add(key)
        except TypeError as error:  # a datetime timestamp, say: say so, naming the vertex
            clear = bad_timestamp(self.context.vertex_name, timestamp_fn, item)
            if clear is None:
                raise
            raise clear from error
        self._late += late
        _discard_all(inbox)


class _FrameAccumulatorP(_SlidingWindowP):
    """Stage 1: items -> per-frame accumulators, emitted as `FrameEntry` when the frame closes.

    No incremental snapshots: its items are not partitioned by key, so several processors of a
    member may save the same key (restored, their frames are combined), while a delta keeps
    one entry per key."""

    changed_snapshot_keys = None  # type: ignore[assignment]

    def _result(self, end: int, key: Hashable, acc: Any) -> Any:
        return FrameEntry(end, key, acc)


def _discard_all(inbox: Inbox) -> None:
    """Empty an inbox whose items were all handled: one C-level copy, not a call per item."""
    inbox.drain_to([])


def _check_window_args(factory: str, early_results_millis: int) -> None:
    if early_results_millis < 0:
        raise ValueError(f"{factory}: early_results_millis must be >= 0, got {early_results_millis}")


def accumulate_by_frame(
    key_fn: Callable[[Any], Hashable],
    timestamp_fn: Callable[[Any], int],
    policy: WindowPolicy,
    op: AggregateOperation,
) -> ProcessorSupplier:
    """Stage 1 of a window: accumulate items per (frame, `key_fn(item)`); emit
    `FrameEntry(frame_end, key, acc)` once the watermark reaches the frame's end (all at
    `complete()`), then the watermark. Late items are counted and dropped (module docstring).

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> clicks = [(10, "/a"), (40, "/a"), (120, "/a")]  # (time, page)
    >>> dag = DAG()
    >>> source = dag.new_vertex("clicks", P.from_iterable(clicks))
    >>> frames = dag.new_vertex("frames", P.accumulate_by_frame(
    ...     lambda c: c[1], lambda c: c[0], P.WindowPolicy.tumbling(100), P.counting()))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(source, frames)).edge(Edge.between(frames, sink))
    >>> sorted(run_dag(dag).result("sink"))
    [FrameEntry(frame_end=100, key='/a', acc=2), FrameEntry(frame_end=200, key='/a', acc=1)]
    ```

    :param key_fn: the grouping key of an item.
    :param timestamp_fn: the event time of an item.
    :param policy: the windows the frames are for (their slide is the frame size).
    :param op: how to aggregate (`counting()`, `summing(fn)`, ...).
    """
    return ProcessorSupplier.of(
        functools.partial(_FrameAccumulatorP, policy.frames_policy(), op, 0, key_fn, timestamp_fn)
    )


def combine_to_sliding_window(
    policy: WindowPolicy, op: AggregateOperation, early_results_millis: int = 0
) -> ProcessorSupplier:
    """Stage 2 of a window: combine `FrameEntry`s into windows; emit `WindowResult(start, end,
    key, finish(acc))` once the watermark reaches the window's end. Feed it with an edge
    partitioned by `frame_entry_key` (and distributed).

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> frames = [P.FrameEntry(100, "/a", 2), P.FrameEntry(200, "/a", 1), P.FrameEntry(200, "/a", 4)]
    >>> dag = DAG()
    >>> source = dag.new_vertex("frames", P.from_iterable(frames))
    >>> sliding = P.WindowPolicy.sliding(200, 100)
    >>> windows = dag.new_vertex("windows", P.combine_to_sliding_window(sliding, P.counting()))
    >>> _ = dag.edge(Edge.between(source, windows).partitioned(P.frame_entry_key).distributed())
    >>> _ = dag.edge(Edge.between(windows, dag.new_vertex("sink", P.collect())))
    >>> for result in sorted(run_dag(dag).result("sink")):
    ...     print(result.start, result.end, result.key, result.value)
    -100 100 /a 2
    0 200 /a 7
    100 300 /a 5
    ```

    :param policy: the windows; the same policy as stage 1's.
    :param op: the same operation stage 1 accumulated with; its `finish` makes each result.
    :param early_results_millis: also emit the current value of open windows at most this often
        (0: only final results).
    """
    _check_window_args("combine_to_sliding_window", early_results_millis)
    return ProcessorSupplier.of(
        functools.partial(_SlidingWindowP, policy, op, early_results_millis, None, None),
        keyed_input_reason="combine_to_sliding_window: a key's frames combine in one processor",
    )


def aggregate_to_sliding_window(
    key_fn: Callable[[Any], Hashable],
    timestamp_fn: Callable[[Any], int],
    policy: WindowPolicy,
    op: AggregateOperation,
    early_results_millis: int = 0,
) -> ProcessorSupplier:
    """Both stages in one processor: items in, `WindowResult`s out. Feed it with an edge
    partitioned by `key_fn`; every item then crosses the network (two stages send one
    accumulator per frame and key instead).

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> def page(click): return click[1]
    >>> def ts(click): return click[0]
    >>> dag = DAG()
    >>> source = dag.new_vertex("clicks", P.from_iterable([(10, "/a"), (40, "/b"), (120, "/a")]))
    >>> tumbling = P.WindowPolicy.tumbling(100)
    >>> windows = dag.new_vertex("windows", P.aggregate_to_sliding_window(page, ts, tumbling, P.counting()))
    >>> _ = dag.edge(Edge.between(source, windows).partitioned(page))
    >>> _ = dag.edge(Edge.between(windows, dag.new_vertex("sink", P.collect())))
    >>> for result in sorted(run_dag(dag).result("sink")):
    ...     print(result.start, result.end, result.key, result.value)
    0 100 /a 1
    0 100 /b 1
    100 200 /a 1
    ```

    :param key_fn: the grouping key of an item.
    :param timestamp_fn: the event time of an item.
    :param policy: the windows (`WindowPolicy.sliding(size, slide)` or `.tumbling(size)`).
    :param op: how to aggregate (`counting()`, `summing(fn)`, ...).
    :param early_results_millis: also emit the current value of open windows at most this often
        (0: only final results).
    """
    _check_window_args("aggregate_to_sliding_window", early_results_millis)
    return ProcessorSupplier.of(
        functools.partial(_SlidingWindowP, policy, op, early_results_millis, key_fn, timestamp_fn),
        keyed_input_reason="aggregate_to_sliding_window: a key's items meet in one processor",
    )


def window_aggregate(
    dag: DAG,
    name: str,
    upstream: Vertex,
    key_fn: Callable[[Any], Hashable],
    timestamp_fn: Callable[[Any], int],
    policy: WindowPolicy,
    op: AggregateOperation,
    ordinal: int = 0,
    early_results_millis: int = 0,
) -> Vertex:
    """Add a two-stage window aggregation of `upstream`'s output at `ordinal`; return stage 2.

    Adds `"{name}-frames"` (stage 1, local edge from `upstream`) and `name` (stage 2, edge
    partitioned by key and distributed), which emits `WindowResult`s. `upstream` must emit
    watermarks (see `insert_watermarks`), else windows only close at the end of the input.
    With `early_results_millis`, only `name` is added, one stage behind the partitioned edge
    (as Jet does): stage 2 would see a frame only once the watermark closed it, too late for
    an early result.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> def page(click): return click[1]
    >>> def ts(click): return click[0]
    >>> dag = DAG()
    >>> source = dag.new_vertex("clicks", P.from_iterable([(10, "/a"), (40, "/a"), (120, "/b")]))
    >>> stamps = dag.new_vertex("stamps", P.insert_watermarks(ts, throttling_frame_size=100))
    >>> _ = dag.edge(Edge.between(source, stamps).isolated())
    >>> sliding = P.WindowPolicy.sliding(200, 100)
    >>> windows = P.window_aggregate(dag, "per-page", stamps, page, ts, sliding, P.counting())
    >>> _ = dag.edge(Edge.between(windows, dag.new_vertex("sink", P.collect())))
    >>> for result in sorted(run_dag(dag).result("sink")):
    ...     print(result.start, result.end, result.key, result.value)
    -100 100 /a 2
    0 200 /a 2
    0 200 /b 1
    100 300 /b 1
    ```

    :param dag: the DAG to add the vertices and their edges to.
    :param name: the last stage's vertex name (stage 1 is `"{name}-frames"`).
    :param upstream: the vertex whose output is aggregated; it should emit watermarks.
    :param key_fn: the grouping key of an item.
    :param timestamp_fn: the event time of an item.
    :param policy: the windows (`WindowPolicy.sliding(size, slide)` or `.tumbling(size)`).
    :param op: how to aggregate (`counting()`, `summing(fn)`, `top_n(n)`, ...).
    :param ordinal: the outbound ordinal of `upstream` to read.
    :param early_results_millis: also emit the current value of open windows at most this often
        (0: only final results).
    """
    if early_results_millis:
        single = aggregate_to_sliding_window(key_fn, timestamp_fn, policy, op, early_results_millis)
        windows = dag.new_vertex(name, single)
        dag.edge(Edge.from_(upstream, ordinal).to(windows).partitioned(key_fn).distributed())
        return windows
    frames = dag.new_vertex(f"{name}-frames", accumulate_by_frame(key_fn, timestamp_fn, policy, op))
    windows = dag.new_vertex(name, combine_to_sliding_window(policy, op, early_results_millis))
    dag.edge(Edge.from_(upstream, ordinal).to(frames))
    dag.edge(Edge.between(frames, windows).partitioned(frame_entry_key).distributed())
    return windows

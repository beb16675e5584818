"""Watermark generation: event time from a timestamp function, an allowed lag, per source partition.

`EventTimeMapper` is the bookkeeping a source (or `insert_watermarks`) does for Jet's
`EventTimePolicy`: each source partition's watermark is its highest timestamp so far minus the
allowed lag; the watermark emitted is the minimum over the partitions that are not idle, and goes
out only when it rises. A partition that delivered nothing for the idle timeout is idle and no
longer holds the minimum back; when all are idle, the highest watermark any partition reached goes
out (as in Jet), then the idle marker (`IDLE_MESSAGE`) once, so that the coalescer downstream
ignores this processor until it sends again. A partition that
never delivered anything holds the watermark back until it turns idle.

Items are never dropped here: an item behind the emitted watermark passes, and the window or join
downstream counts it as late and drops it (lateness is decided where it matters).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import attrs

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.errors import ProcessorContractError
from jetspark.core.inbox import Inbox
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.core.watermark import IDLE_MESSAGE, BroadcastKey, Watermark
from jetspark.processors._timestamps import bad_timestamp

_NEVER: Any = float("-inf")


@attrs.frozen(kw_only=True)
class EventTimePolicy:
    """How items get event time and how far watermarks trail it.

    `timestamp_fn(item)` returns the item's event time (an int, e.g. epoch millis);
    `allowed_lag` is how far behind the top timestamp an item may still arrive without being
    late; `idle_timeout_millis` (None: never) is the quiet time after which a partition is idle.
    `throttling_frame_size` (Jet's watermark throttling): watermarks are rounded down to
    multiples of it (shifted by `throttling_frame_offset`), so one goes out only when a new
    multiple is reached. A window closes only at its slide's boundaries, so throttling to the
    slide loses no timeliness and saves a watermark per item, which costs far more than the item
    (each one travels alone through every queue and every processor downstream).

    ```pycon
    >>> from jetspark import processors as P
    >>> policy = P.EventTimePolicy(timestamp_fn=lambda item: item[0], allowed_lag=30,
    ...                            throttling_frame_size=100)
    >>> policy.allowed_lag, policy.throttling_frame_size
    (30, 100)
    ```

    :ivar timestamp_fn: the event time of an item (an int, e.g. epoch milliseconds).
    :ivar allowed_lag: how far the watermark trails the top timestamp (0 by default).
    :ivar idle_timeout_millis: quiet time after which a partition is idle (None: never).
    :ivar throttling_frame_size: watermarks are rounded down to multiples of it (1: none).
    :ivar throttling_frame_offset: shifts those multiples (0 by default).
    """

    timestamp_fn: Callable[[Any], int]
    allowed_lag: int = 0
    idle_timeout_millis: int | None = None
    throttling_frame_size: int = 1
    throttling_frame_offset: int = 0

    def __attrs_post_init__(self) -> None:
        if not callable(self.timestamp_fn):
            raise TypeError(f"EventTimePolicy: timestamp_fn must be callable, got {self.timestamp_fn!r}")
        if self.allowed_lag < 0:
            raise ValueError(f"EventTimePolicy: allowed_lag must be >= 0, got {self.allowed_lag}")
        if self.throttling_frame_size < 1:
            raise ValueError(
                f"EventTimePolicy: throttling_frame_size must be >= 1, got {self.throttling_frame_size}"
            )
        if self.idle_timeout_millis is not None and self.idle_timeout_millis <= 0:
            raise ValueError(
                f"EventTimePolicy: idle_timeout_millis must be > 0 or None, got {self.idle_timeout_millis}"
            )


class EventTimeMapper:
    """Per-partition top timestamps -> the watermark to emit (see the module docstring).

    Call `observe(partition, timestamp)` for each item and `watermark(now)` whenever it may have
    changed (after items, and periodically while no item comes, so that idleness is noticed);
    emit what `watermark` returns, if anything, and call it again only after that went out. When
    every partition turns idle it returns the highest watermark reached (if not yet emitted) and,
    on the next call, `IDLE_MESSAGE`: call it until it returns None.

    ```pycon
    >>> from jetspark import processors as P
    >>> policy = P.EventTimePolicy(timestamp_fn=int, allowed_lag=30)
    >>> mapper = P.EventTimeMapper(policy, partition_count=2, now=0.0)
    >>> mapper.observe(0, 500, now=0.0)
    >>> print(mapper.watermark(now=0.0))  # partition 1 has delivered nothing yet
    None
    >>> mapper.observe(1, 400, now=0.0)
    >>> mapper.watermark(now=0.0)
    Watermark(timestamp=370)
    ```

    :param policy: the lag, idle timeout and throttling (its `timestamp_fn` is not called here).
    :param partition_count: how many source partitions the caller tells apart.
    :param now: the monotonic time to count idleness from (`time.monotonic()` by default).
    """

    __slots__ = (
        "_frame",
        "_idle_forwarded",
        "_idle_seconds",
        "_lag",
        "_last_event",
        "_last_wm",
        "_changed",
        "_offset",
        "_replay",
        "_restored",
        "_tops",
    )

    def __init__(self, policy: EventTimePolicy, partition_count: int = 1, now: float | None = None) -> None:
        if partition_count < 1:
            raise ValueError(f"EventTimeMapper: partition_count must be >= 1, got {partition_count}")
        start = time.monotonic() if now is None else now
        self._lag = policy.allowed_lag
        self._frame = policy.throttling_frame_size
        self._offset = policy.throttling_frame_offset
        self._idle_seconds = None if policy.idle_timeout_millis is None else policy.idle_timeout_millis / 1000
        self._tops: list[Any] = [_NEVER] * partition_count
        self._last_event = [start] * partition_count
        self._last_wm: Any = _NEVER
        self._idle_forwarded = False
        self._restored = False
        #: The restored watermark is handed out once more (`hand_out_restored_again`).
        self._replay = False
        self._changed = False

    @property
    def partition_count(self) -> int:
        return len(self._tops)

    @property
    def last_emitted(self) -> int | None:
        """The last watermark handed out (None before the first)."""
        return None if self._last_wm == _NEVER else int(self._last_wm)

    def state(self) -> tuple[Any, list[Any]]:
        """What a snapshot keeps: the last watermark handed out and each partition's top."""
        return (self._last_wm, list(self._tops))

    def restore(self, state: tuple[Any, list[Any]]) -> None:
        """Take a saved state; several (from processors of an earlier parallelism) give the
        lowest of each value, so that no restored watermark runs ahead of any of them."""
        last_wm, tops = state
        if self._restored:
            last_wm = min(last_wm, self._last_wm)
            if len(tops) == len(self._tops):
                tops = [min(a, b) for a, b in zip(tops, self._tops)]
        self._restored = True
        self._changed = True
        self._last_wm = last_wm
        if len(tops) == len(self._tops):
            self._tops = list(tops)

    def hand_out_restored_again(self) -> None:
        """The next `watermark` call hands the restored watermark out once more. On Spark each
        epoch restores, and its consumers are new and wait for a watermark from every producer:
        a source with nothing new would hold their event time back for ever. (Jet's mapper does
        not: its executions are long-lived.)"""
        self._replay = self._restored

    def lift(self, timestamp: int) -> None:
        """A watermark of `timestamp` went out from elsewhere (passed on from upstream): later
        ones made here must be higher."""
        if timestamp > self._last_wm:
            self._last_wm = timestamp

    def observe(self, partition: int, timestamp: int, now: float) -> None:
        """An item with `timestamp` came from `partition` at monotonic time `now`."""
        if timestamp > self._tops[partition]:
            self._tops[partition] = timestamp
            self._changed = True
        self._last_event[partition] = now
        self._idle_forwarded = False

    @property
    def simple(self) -> bool:
        """One partition and no idle timeout: `rise_threshold` applies."""
        return len(self._tops) == 1 and self._idle_seconds is None

    @property
    def top(self) -> Any:
        """The top timestamp of partition 0 (-inf before any)."""
        return self._tops[0]

    def rise_threshold(self) -> Any:
        """For a `simple` mapper: the lowest top timestamp that makes `watermark` return a new
        watermark (the last one plus a throttling frame, plus the lag), so that a caller can skip
        the call for every item below it."""
        return self._last_wm + self._frame + self._lag

    def watermark(self, now: float) -> Watermark | None:
        """The watermark (or `IDLE_MESSAGE`) to emit now, or None; it counts as emitted."""
        if self._replay:
            self._replay = False
            if self._last_wm != _NEVER:
                return Watermark(int(self._last_wm))
        idle_after = self._idle_seconds
        if idle_after is None:
            if not self._changed:  # no top rose since the last call: nothing can have changed
                return None
            self._changed = False
            low: Any = min(self._tops)  # nothing is ever idle
        else:
            low = None
            for top, last in zip(self._tops, self._last_event):
                if now - last >= idle_after:
                    continue
                if low is None or top < low:
                    low = top
        if low is None:  # every partition is idle
            if self._idle_forwarded:
                return None
            # As Jet: first the highest watermark any partition reached (the windows the last
            # items close come out now, not after the idle period), then the idle marker.
            top = self._rise(max(self._tops))
            if top is not None:
                return top
            self._idle_forwarded = True
            return IDLE_MESSAGE
        return self._rise(low)

    def _rise(self, top: Any) -> Watermark | None:
        """The watermark for the top timestamp `top` (lag and throttling applied), if it rises."""
        if top == _NEVER:
            return None
        if isinstance(top, float):  # seconds from time.time()? frames and windows need ints
            raise TypeError(f"timestamp {top!r} is not an int (timestamps are int milliseconds)")
        wm = top - self._lag
        if self._frame > 1:
            wm -= (wm - self._offset) % self._frame
        if wm <= self._last_wm:
            return None
        self._last_wm = wm
        return Watermark(wm)


def _single_partition(_item: Any) -> int:
    return 0


class _InsertWatermarksP(AbstractProcessor):
    """Passes items on and inserts the watermarks an `EventTimeMapper` computes."""

    def __init__(
        self, policy: EventTimePolicy, partition_fn: Callable[[Any], int], partition_count: int
    ) -> None:
        self._policy = policy
        self._partition_fn = partition_fn
        self._mapper = EventTimeMapper(policy, partition_count)
        self._pending: Watermark | None = None
        self._clock = time.monotonic
        self._chunk: list[Any] = []
        self._scratch: list[Any] = []
        #: This processor's own saved state, found among the restored entries.
        self._own_state: Any = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        try:
            if self._mapper.simple:
                self._process_simple(inbox)
            else:
                self._process_partitions(inbox)
        except TypeError as error:  # a datetime timestamp, say: say so, naming the vertex
            for item in inbox:  # the first item whose timestamp is no number
                clear = bad_timestamp(self.context.vertex_name, self._policy.timestamp_fn, item)
                if clear is not None:
                    raise clear from error
            raise

    def _process_partitions(self, inbox: Inbox) -> None:
        """Several partitions or an idle timeout: item by item through the mapper."""
        if self._pending is not None and not self._flush_pending():
            return
        now = self._clock()
        offer = self.outbox.offer
        observe = self._mapper.observe
        watermark = self._mapper.watermark
        timestamp_fn = self._policy.timestamp_fn
        partition_fn = self._partition_fn
        peek = inbox.peek
        remove = inbox.remove
        while (item := peek()) is not None:
            observe(partition_fn(item), timestamp_fn(item), now)
            wm = watermark(now)  # goes out before the item that raised it, as in Jet
            if wm is not None and not offer(wm):
                self._pending = wm  # first thing next time, then the item (observed again: harmless)
                return
            if not offer(item):
                return
            remove()

    def _process_simple(self, inbox: Inbox) -> None:
        """One partition, no idle timeout: items go out in batches up to the next item that
        raises the watermark; that watermark goes out before the item (as in Jet), which then
        starts the next batch. Per item only the timestamp is read."""
        mapper = self._mapper
        outbox = self.outbox
        timestamp_fn = self._policy.timestamp_fn
        now = self._clock()
        chunk = self._chunk
        while not inbox.is_empty():
            if self._pending is not None and not self._flush_pending():
                return
            room = outbox.room()
            if room <= 0:
                return
            threshold = mapper.rise_threshold()
            top = first_top = mapper.top
            rises = False
            for item in inbox:
                timestamp = timestamp_fn(item)
                if timestamp > top:
                    top = timestamp
                    if top >= threshold:
                        rises = True  # the item stays in the inbox: it follows its watermark
                        break
                chunk.append(item)
                if len(chunk) >= room:
                    break
            if top > first_top:
                mapper.observe(0, top, now)
            if chunk:
                if not outbox.offer_batch(chunk):
                    raise ProcessorContractError(
                        f"vertex {self.context.vertex_name!r}: the outbox refused {len(chunk)} items "
                        "right after reporting room for them"
                    )
                inbox.drain_to(self._scratch, len(chunk))
                self._scratch.clear()
                chunk.clear()
            if rises:
                wm = mapper.watermark(now)
                if wm is not None and not outbox.offer(wm):
                    self._pending = wm
                    return

    def _flush_pending(self) -> bool:
        pending = self._pending
        if pending is not None:
            if not self.outbox.offer(pending):
                return False
            self._pending = None
        return True

    def try_process(self) -> bool:
        """Notice idleness while no item comes (the engine calls this whenever the inbox is empty)."""
        if not self._flush_pending():
            return False
        now = self._clock()
        while (wm := self._mapper.watermark(now)) is not None:  # the top, then the idle marker
            if not self.outbox.offer(wm):
                self._pending = wm
                return False
        return True

    def save_to_snapshot(self) -> bool:
        context = self.context
        key = ("insert-watermarks", context.global_processor_index, context.total_parallelism)
        return self.outbox.offer_to_snapshot(BroadcastKey(key), self._mapper.state())

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        """Every processor's state comes to every processor (a broadcast key). On the same
        parallelism a processor takes its own; on another (or from an older snapshot without the
        parallelism in its key) the lowest of all, so that no watermark runs ahead of its
        source's items. Taking the lowest on the same parallelism too (Jet's choice) held every
        processor at the lowest one's watermark after each restore: on Spark, where each epoch
        restores, a source with nothing new dragged the others back for ever."""
        parts = key.key if isinstance(key, BroadcastKey) else key
        context = self.context
        same_parallelism = len(parts) == 3 and parts[2] == context.total_parallelism
        if same_parallelism:
            if parts[1] == context.global_processor_index:
                self._own_state = value
            return
        self._mapper.restore(value)

    def finish_snapshot_restore(self) -> bool:
        if self._own_state is not None:
            self._mapper.restore(self._own_state)
            self._own_state = None
        if self.context.in_epochs:
            self._mapper.hand_out_restored_again()
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        """An upstream watermark above every one emitted here goes on (as in Jet, whose processor
        forwards them), and the ones made here continue above it; a lower one is dropped, so the
        output's watermarks keep rising."""
        last = self._mapper.last_emitted
        if last is not None and watermark.timestamp <= last:
            return True
        if not self._flush_pending() or not self.outbox.offer(watermark):
            return False
        self._mapper.lift(watermark.timestamp)
        return True

    def complete(self) -> bool:
        return self._flush_pending()


def insert_watermarks(
    timestamp_fn: Callable[[Any], int],
    allowed_lag: int = 0,
    idle_timeout_millis: int | None = None,
    partition_fn: Callable[[Any], int] | None = None,
    partition_count: int = 1,
    throttling_frame_size: int = 1,
    throttling_frame_offset: int = 0,
) -> ProcessorSupplier:
    """Pass items through and insert watermarks: per processor (and per source partition), the
    highest `timestamp_fn(item)` so far minus `allowed_lag`, emitted whenever it rises (with
    `throttling_frame_size`, rounded down to its multiples: give a window's slide, see
    `EventTimePolicy`).

    Put it right behind a source, on a local (or isolated) edge, so that each processor sees one
    source processor's items in their order. `partition_fn(item)` (an int below
    `partition_count`) tells a source's partitions apart: the watermark is then the minimum over
    them, as Jet computes it per Kafka partition. With `idle_timeout_millis`, a partition quiet
    for that long stops holding the watermark back, and when all are quiet the processor emits
    `IDLE_MESSAGE` once. A watermark arriving from upstream is passed on when it is above every
    watermark emitted here (the ones made here then continue above it), and dropped otherwise,
    so the watermarks that leave keep rising. Items behind the watermark pass unchanged: the windows downstream count and drop them.
    Snapshot: the last watermark and the partitions' top timestamps (a `BroadcastKey` entry per
    processor; a restored processor takes the lowest values it receives), so that a restored
    job does not emit a watermark below one already sent.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> def ts(click): return click[0]
    >>> def page(click): return click[1]
    >>> clicks = [(10, "/a"), (140, "/b"), (95, "/b"), (260, "/a")]
    >>> dag = DAG()
    >>> source = dag.new_vertex("clicks", P.from_iterable(clicks))
    >>> watermarks = P.insert_watermarks(ts, allowed_lag=30, throttling_frame_size=100)
    >>> stamps = dag.new_vertex("stamps", watermarks)
    >>> _ = dag.edge(Edge.between(source, stamps).isolated())
    >>> tumbling = P.WindowPolicy.tumbling(100)
    >>> windows = P.window_aggregate(dag, "counts", stamps, page, ts, tumbling, P.counting())
    >>> _ = dag.edge(Edge.between(windows, dag.new_vertex("sink", P.collect())))
    >>> job = run_dag(dag)
    >>> sorted((r.start, r.key, r.value) for r in job.result("sink"))
    [(0, '/a', 1), (100, '/b', 1), (200, '/a', 1)]
    >>> job.metrics()["counts-frames"]["late_items_dropped"]  # (95, "/b"): its window had closed
    1
    ```

    :param timestamp_fn: the event time of an item.
    :param allowed_lag: how far the watermark trails the highest timestamp seen.
    :param idle_timeout_millis: a partition quiet for this long stops holding the watermark back.
    :param partition_fn: the source partition of an item (an int below `partition_count`).
    :param partition_count: how many partitions `partition_fn` tells apart.
    :param throttling_frame_size: round watermarks down to multiples of this (give the window's slide).
    :param throttling_frame_offset: shifts those multiples.
    """
    policy = EventTimePolicy(
        timestamp_fn=timestamp_fn,
        allowed_lag=allowed_lag,
        idle_timeout_millis=idle_timeout_millis,
        throttling_frame_size=throttling_frame_size,
        throttling_frame_offset=throttling_frame_offset,
    )
    if partition_count < 1:
        raise ValueError(f"insert_watermarks: partition_count must be >= 1, got {partition_count}")
    if partition_fn is None and partition_count != 1:
        raise ValueError("insert_watermarks: partition_count > 1 needs a partition_fn")
    return _InsertWatermarksSupplier(
        functools.partial(_InsertWatermarksP, policy, partition_fn or _single_partition, partition_count)
    )


class _InsertWatermarksSupplier(ProcessorSupplier):
    """Makes `_InsertWatermarksP`s, and asks the DAG for isolated inbound edges."""

    def __init__(self, factory: Callable[[], _InsertWatermarksP]) -> None:
        self._factory = factory

    def get(self, count: int) -> list[_InsertWatermarksP]:
        return [self._factory() for _ in range(count)]

    def isolated_input_reason(self) -> str | None:
        return "insert_watermarks: one source processor's stream, in its order"

    def __repr__(self) -> str:
        return "insert_watermarks(...)"

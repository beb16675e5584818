"""Sources: `from_iterable` (a bounded collection) and `generator_stream` (a sequence, optionally
rate-limited and endless).

Both split their input into *slices* so that every processor of the vertex works: processor `g`
of a vertex with total parallelism `T` takes the positions `g, g + T, g + 2T, ...`. A slice is
`(start, stride)` plus how many of its items were emitted (accepted by the outbox).

Snapshots and a changed parallelism
-----------------------------------
Each processor saves one entry per slice it owns: key `("slice", start, stride)`, value = items
emitted. On restore the engine routes a keyed entry to the processor that owns the key's partition
under the *new* plan, so each slice is resumed by exactly one processor, whatever the new member
count or local parallelism. Slices are never re-split: a processor may resume several slices (the
new parallelism is lower) or none (higher), and then simply has less or nothing to do. A restored
processor resumes only the slices it received; a slice absent from the snapshot was finished (every
live processor saves all of its slices, finished ones included, and a processor that finished all
of them has ended and owns nothing that needs resuming). So a restore with any parallelism neither
loses nor repeats an item.

Items go out in batches of at most the outbox's `room()` (`offer_batch`), so no offer is ever
rejected and left pending: a slice's `emitted` count is exact whenever a snapshot is taken.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.context import ProcessorContext
from jetspark.core.errors import ProcessorContractError
from jetspark.core.processor import Processor
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.core.watermark import IDLE_MESSAGE, Watermark

_SLICE = "slice"


class _Slice:
    """Positions `start, start + stride, ...`; `emitted` of them went out already."""

    __slots__ = ("emitted", "start", "stride")

    def __init__(self, start: int, stride: int, emitted: int = 0) -> None:
        self.start = start
        self.stride = stride
        self.emitted = emitted

    @property
    def key(self) -> tuple[str, int, int]:
        return (_SLICE, self.start, self.stride)

    @property
    def next_position(self) -> int:
        return self.start + self.stride * self.emitted

    def __repr__(self) -> str:
        return f"_Slice(start={self.start}, stride={self.stride}, emitted={self.emitted})"


class _SlicedSource(AbstractProcessor):
    """Owns slices: one of its own at first, those it receives when restored; saves them all."""

    _slices: list[_Slice]
    #: The factory's name, for error messages.
    factory = "source"

    def init_processor(self, context: ProcessorContext) -> None:
        self._slices = [_Slice(context.running_processor_index, context.running_processor_count)]
        self._restored = False
        self._saved = 0

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if not (isinstance(key, tuple) and len(key) == 3 and key[0] == _SLICE):
            raise ValueError(
                f"vertex {self.context.vertex_name!r} processor #{self.context.global_processor_index}: "
                f"unexpected snapshot entry {key!r} for a {self.factory}() source"
            )
        self._forget_own_slice()
        self._slices.append(_Slice(key[1], key[2], value))

    def finish_snapshot_restore(self) -> bool:
        self._forget_own_slice()
        self._slices.sort(key=lambda s: s.start)
        self._slices_changed()
        return True

    def _forget_own_slice(self) -> None:
        """A restored processor resumes only the slices it was given (see the module docstring)."""
        if not self._restored:
            self._restored = True
            self._slices = []

    def _slices_changed(self) -> None:
        """Hook: the set of slices was replaced by a restore."""

    def save_to_snapshot(self) -> bool:
        slices = self._slices
        offer = self.outbox.offer_to_snapshot
        while self._saved < len(slices):
            piece = slices[self._saved]
            if not offer(piece.key, piece.emitted):
                return False
            self._saved += 1
        self._saved = 0
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        """A source has no inbound edge, so it never receives a watermark."""
        return True

    def _emit(self, batch: Sequence[Any]) -> None:
        """Offer a batch that fits the room asked for just before (so it cannot be refused)."""
        if batch and not self.outbox.offer_batch(batch):
            raise ProcessorContractError(
                f"vertex {self.context.vertex_name!r} processor #{self.context.global_processor_index}: "
                f"the outbox refused {len(batch)} items right after reporting room for them"
            )


class SizedSourceSupplier(ProcessorSupplier):
    """Supplies the processors of a bounded source and knows how many items the whole vertex
    emits at most (`items_total`), so that a progress display can show a percentage and an ETA."""

    def __init__(self, factory: Callable[[], Processor], items_total: int) -> None:
        self.factory = factory
        self.items_total = items_total

    def get(self, count: int) -> list[Processor]:
        return [self.factory() for _ in range(count)]

    def __repr__(self) -> str:
        return f"SizedSourceSupplier({getattr(self.factory, 'func', self.factory)!r}, {self.items_total})"


class _FromIterableP(_SlicedSource):
    """Emits its slices of a sequence, one slice after the other, a `room()`-sized batch at a time."""

    factory = "from_iterable"

    def __init__(self, items: Sequence[Any]) -> None:
        self._items = items
        self._index = 0

    def _slices_changed(self) -> None:
        self._index = 0

    def complete(self) -> bool:
        outbox = self.outbox
        items = self._items
        slices = self._slices
        while self._index < len(slices):
            piece = slices[self._index]
            start, stride = piece.next_position, piece.stride
            left = len(range(start, len(items), stride))
            if left == 0:
                self._index += 1
                continue
            room = outbox.room()
            if room <= 0:
                return False
            count = min(room, left)
            self._emit(items[start : start + count * stride : stride])
            piece.emitted += count
        return True


def from_iterable(items: Iterable[Any]) -> ProcessorSupplier:
    """A bounded source of `items`, split across all processors of the vertex.

    Processor `g` of total parallelism `T` emits the items at positions `g, g + T, ...`, so the
    order of items is kept within each processor's share only. Snapshot-able, also into a job with
    another parallelism (see the module docstring). Items must not be None.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> letters = dag.new_vertex("letters", P.from_iterable("abc"), 2)  # two processors share them
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(letters, sink))
    >>> sorted(run_dag(dag).result("sink"))
    ['a', 'b', 'c']
    ```

    :param items: the items (not None); a range or tuple is kept as it is, anything else is copied
        into a tuple when the supplier is made.
    """
    # A range or a tuple is kept as it is (immutable, cheap to slice); anything else is copied.
    sequence: Sequence[Any] = items if isinstance(items, (range, tuple)) else tuple(items)
    if not isinstance(sequence, range) and None in sequence:  # `in` runs in C; find the culprit only then
        for position, item in enumerate(sequence):
            if item is None:
                raise ValueError(
                    f"from_iterable: item at position {position} is None; items must not be None"
                )
    return SizedSourceSupplier(functools.partial(_FromIterableP, sequence), len(sequence))


class _GeneratorP(_SlicedSource):
    """Emits `fn(seq)` for the sequence numbers of its slices, in rising order, as they fall due."""

    factory = "generator_stream"
    waits_for_data = True

    def __init__(
        self,
        count: int | None,
        items_per_second: float | None,
        fn: Callable[[int], Any],
        timestamp_fn: Callable[[Any], int] | None,
        idle_timeout_millis: int | None,
    ) -> None:
        self._count = count
        self._rate = items_per_second
        self._fn = fn
        self._timestamp_fn = timestamp_fn
        self._idle_timeout = None if idle_timeout_millis is None else idle_timeout_millis / 1000
        self._pending: Watermark | None = None
        self._start_time: float | None = None
        self._base: list[int] = []
        self._top_timestamp: int | None = None
        self._last_watermark: int | None = None
        self._last_emit_time = 0.0
        self._idle_sent = False

    def _slices_changed(self) -> None:
        self._start_time = None

    def _exhausted(self, piece: _Slice) -> bool:
        return self._count is not None and piece.next_position >= self._count

    def _due(self, now: float) -> int | None:
        """How many more items than at the start each slice may have emitted by now (None: no limit)."""
        if self._rate is None:
            return None
        if self._start_time is None:
            self._start_time = now
            self._base = [piece.emitted for piece in self._slices]
        stride = self._slices[0].stride if self._slices else 1
        return int((now - self._start_time) * self._rate / stride)

    def _next_slice(self, allowed: int | None) -> _Slice | None:
        """The slice with the lowest next sequence number that may emit now."""
        best: _Slice | None = None
        for index, piece in enumerate(self._slices):
            if self._exhausted(piece):
                continue
            if allowed is not None and piece.emitted - self._base[index] >= allowed:
                continue
            if best is None or piece.next_position < best.next_position:
                best = piece
        return best

    def complete(self) -> bool:
        now = time.monotonic()
        if not self._offer_pending_watermark():
            return False
        allowed = self._due(now)
        piece = self._next_slice(allowed)
        if piece is not None:
            room = self.outbox.room()
            if room <= 0:
                return False
            # at most `room` sequence numbers per call, even when `fn` maps them all to None
            fn = self._fn
            timestamp_fn = self._timestamp_fn
            batch: list[Any] = []
            for _ in range(room):
                item = fn(piece.next_position)
                piece.emitted += 1
                if item is not None:
                    batch.append(item)
                    if timestamp_fn is not None:
                        self._observe_timestamp(timestamp_fn(item))
                piece = self._next_slice(allowed)
                if piece is None:
                    break
            if batch:
                self._emit(batch)
                self._last_emit_time = now
                self._idle_sent = False
        if not self._offer_watermark_or_idle(now):
            return False
        return all(self._exhausted(piece) for piece in self._slices)

    def _offer_pending_watermark(self) -> bool:
        """Offer again a watermark (or IDLE) the outbox rejected; True when none is left."""
        pending = self._pending
        if pending is None:
            return True
        if not self.outbox.offer(pending):
            return False
        self._pending = None
        if pending is IDLE_MESSAGE:
            self._idle_sent = True
        else:
            self._last_watermark = pending.timestamp
        return True

    def _observe_timestamp(self, timestamp: int) -> None:
        if self._top_timestamp is None or timestamp > self._top_timestamp:
            self._top_timestamp = timestamp

    def _offer_watermark_or_idle(self, now: float) -> bool:
        """Emit a watermark when the top timestamp rose, or IDLE after a quiet spell."""
        top = self._top_timestamp
        if top is not None and (self._last_watermark is None or top > self._last_watermark):
            if not self.outbox.offer(Watermark(top)):
                self._pending = Watermark(top)
                return False
            self._last_watermark = top
        elif (
            self._idle_timeout is not None
            and not self._idle_sent
            and now - self._last_emit_time >= self._idle_timeout
        ):
            if not self.outbox.offer(IDLE_MESSAGE):
                self._pending = IDLE_MESSAGE
                return False
            self._idle_sent = True
        return True

    def init_processor(self, context: ProcessorContext) -> None:
        super().init_processor(context)
        self._last_emit_time = time.monotonic()


def _identity(seq: int) -> Any:
    return seq


def generator_stream(
    count: int | None = None,
    items_per_second: float | None = None,
    fn: Callable[[int], Any] = _identity,
    timestamp_fn: Callable[[Any], int] | None = None,
    idle_timeout_millis: int | None = None,
) -> ProcessorSupplier:
    """A source of `fn(seq)` for `seq = 0, 1, 2, ...`: endless, or `count` items when given.

    The sequence is split across the processors like `from_iterable`'s positions. With
    `items_per_second` the whole vertex emits at about that rate: each call emits what is due by
    now (it never sleeps), and a backlog built up while the job was busy goes out as a burst.
    An item `fn` maps to None is skipped. With `timestamp_fn(item)` each processor emits, after a
    burst, a watermark equal to the highest timestamp emitted so far, whenever it rose. With
    `idle_timeout_millis` a processor that emitted nothing for that long emits `IDLE_MESSAGE`
    once, so that it does not hold back the watermark downstream. The sequence position is saved
    in snapshots, so a restored job continues where it stopped.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> squares = dag.new_vertex("squares", P.generator_stream(count=5, fn=lambda seq: seq * seq))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(squares, sink))
    >>> sorted(run_dag(dag).result("sink"))
    [0, 1, 4, 9, 16]
    ```

    :param count: how many sequence numbers in all; None: endless.
    :param items_per_second: the rate of the whole vertex; None: as fast as the outbox takes them.
    :param fn: maps a sequence number to the item (the number itself by default); None skips it.
    :param timestamp_fn: gives an item's event time (ms), to emit watermarks; None: no watermarks.
    :param idle_timeout_millis: after this long without an item a processor reports itself idle.
    """
    if count is not None and count < 0:
        raise ValueError(f"generator_stream: count must be >= 0 or None, got {count}")
    if items_per_second is not None and items_per_second <= 0:
        raise ValueError(f"generator_stream: items_per_second must be > 0 or None, got {items_per_second}")
    if idle_timeout_millis is not None and idle_timeout_millis < 0:
        raise ValueError(f"generator_stream: idle_timeout_millis must be >= 0, got {idle_timeout_millis}")
    factory = functools.partial(_GeneratorP, count, items_per_second, fn, timestamp_fn, idle_timeout_millis)
    return ProcessorSupplier.of(factory) if count is None else SizedSourceSupplier(factory, count)

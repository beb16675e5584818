"""The engine's Outbox: per-ordinal buffers flushed into outbound collectors.

`offer` appends to the ordinal's buffer and fails once the buffer holds `batch_size` items (Jet's
per-call batch budget); the tasklet flushes the buffers into the downstream queues after every
call, so back-pressure from full queues shows up as full buffers. The hot path is a length check
and an append. Watermarks and other special items first flush the buffer (order is kept), then go
to every downstream queue.

Contract checks, each a `ProcessorContractError` naming the processor:
- after a rejected offer the processor must return: another offer in the same call (before the
  flush that ends it) raises, as Jet's "offer() called again" assertion does;
- the next offer must then be of the same item (`==`) to the same ordinals;
- a watermark must be greater than the last one offered to its ordinal (so the error names the
  processor that emitted it);
- offers raise while the tasklet forbids them (from `snapshot_commit_finish`), and for good once
  it sealed the outbox (after `complete()` returned True, and from `close()`);
- `offer_to_snapshot` only while the tasklet allows it (from `save_to_snapshot` and
  `snapshot_commit_prepare`).
The checks live on the slow path, which a refusal, a seal or a ban already switches on.

Back-pressure is measured as Flink does, in time: from a flush that a full downstream queue left
unfinished to the next flush that empties every buffer (`backpressured_seconds()`). It costs
two falsy checks per call (not per item) while nothing is blocked.
"""

from __future__ import annotations

import logging
import pickle
import reprlib
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from itertools import compress, islice, repeat
from typing import Any

from jetspark.core.errors import ProcessorContractError
from jetspark.core.outbox import Outbox
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT, INT_TAG_CRC, STR_TAG_CRC
from jetspark.core.partitioner import key_bytes as canonical_bytes
from jetspark.core.watermark import IDLE_MESSAGE, IDLE_TIMESTAMP, BroadcastKey, Watermark
from jetspark.engine.routing import OutboundCollector
from jetspark.engine.snapshot import SnapshotEntry, encode_blocks, entry_partition

_log = logging.getLogger("jetspark.engine")
_NOTHING: Any = object()
_dumps = pickle.dumps
_PROTOCOL = pickle.HIGHEST_PROTOCOL
_crc32 = zlib.crc32
#: `SnapshotEntry(...)` without its Python-level `__new__` (a NamedTuple's is a lambda).
_new_tuple = tuple.__new__
_NONE_TYPE = type(None)
#: Classes `offer_from`'s copy into the buffer must not take: they need `offer`'s handling.
_NOT_PLAIN = frozenset((_NONE_TYPE, Watermark))
DEFAULT_BATCH_SIZE = 1024
SnapshotSink = Callable[[list[SnapshotEntry]], None]
#: Below every int (Python's ints have no minimum): a first watermark of any value rises above it.
_BELOW_EVERY_TIMESTAMP: Any = float("-inf")


def _same_item(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


class OutboxImpl(Outbox):
    """Outbox of one processor. `owner` names the processor in error messages."""

    def __init__(
        self,
        collectors: Sequence[OutboundCollector],
        owner: str,
        batch_size: int = DEFAULT_BATCH_SIZE,
        snapshot_sink: SnapshotSink | None = None,
        partition_count: int = DEFAULT_PARTITION_COUNT,
    ) -> None:
        self.collectors = list(collectors)
        self.owner = owner
        self.batch_size = batch_size
        self.buffers: list[list[Any]] = [[] for _ in self.collectors]
        self._last_watermarks: list[int] = [_BELOW_EVERY_TIMESTAMP] * len(self.collectors)
        #: Per ordinal: the watermark an earlier execution sent last, sent again at this one's
        #: start (`replay_watermarks`); the processor's own offers up to it are dropped, not refused.
        self._replayed: list[int] = [_BELOW_EVERY_TIMESTAMP] * len(self.collectors)
        #: Per ordinal: the last watermark sent was the idle marker.
        self._idle_last: list[bool] = [False] * len(self.collectors)
        self.snapshot_buffer: list[SnapshotEntry] = []
        self._snapshot_sink = snapshot_sink
        self._partition_count = partition_count
        self._unfinished_item: Any = _NOTHING
        self._unfinished_ordinals: tuple[int, ...] = ()
        #: An offer was refused in the current call (until `flush`, which ends every call).
        self._refused_in_call = False
        self._accepted: set[int] = set()
        self._forbidden_by: str | None = None
        #: Why offers are over for good (the processor completed, or is closing), else None.
        self._sealed: str | None = None
        self._blocked = False
        #: True while an offer is unfinished or offers are forbidden: the fast paths step aside.
        self._slow = False
        #: batch_size, or 0 while slow: one comparison in `_offer_single` covers both checks.
        self._single_limit = batch_size
        self._buffer0: list[Any] = self.buffers[0] if self.buffers else []
        self._snapshot_allowed_in: str | None = None
        #: During an incremental save (`save_only`): the keys that changed, and those offered.
        self._snapshot_changed: set[Any] | None = None
        self._snapshot_offered: set[Any] = set()
        #: Partitions of the entries offered in the current (or last) snapshot's save.
        self.snapshot_partitions: set[int] = set()
        self.emitted_count = 0
        #: Seconds of earlier back-pressure spells; `_blocked_since` the start (monotonic) of the
        #: current one, 0.0 when none.
        self._backpressured = 0.0
        self._blocked_since = 0.0
        self._warned_no_edge = False
        #: Whether `offer_all_to_snapshot` takes every entry at once (the engine), or one at a
        #: time within the bucket's bound like `offer_to_snapshot` (the test kit's small-outbox
        #: modes: a save then takes several calls, as under Jet's TestSupport).
        self.bulk_snapshot = True
        all_ordinals = tuple(range(len(self.collectors)))
        self._all_ordinals = all_ordinals
        self._bind_offer()

    def _bind_offer(self) -> None:
        """`offer`'s fast path for one outbound edge; the warning path for none."""
        if len(self.collectors) == 1:
            self.offer = self._offer_single  # type: ignore[method-assign]
        elif not self.collectors:
            self.offer = self._offer_to_no_edge  # type: ignore[method-assign]

    def take_place_of(self, other: OutboxImpl) -> None:
        """Become `other`, a later execution's outbox for the same processor (its collectors, its
        buffers, its state), so that a processor that goes on with its state (a Spark epoch's
        state cache) and kept this outbox, or its `offer`, from `init` sends where it must. The
        caller uses this object from now on, `other` no more."""
        if type(other) is not type(self):
            raise TypeError(f"{self.owner}: cannot take the place of a {type(other).__name__}")
        self.__dict__.clear()
        self.__dict__.update(other.__dict__)
        if "offer" in self.__dict__:  # `other`'s fast path is bound to `other`: bind ours
            self._bind_offer()

    # ---- Outbox ---------------------------------------------------------------------------

    def bucket_count(self) -> int:
        return len(self.collectors)

    def has_unfinished_item(self) -> bool:
        return self._unfinished_item is not _NOTHING

    def offer(self, item: Any) -> bool:
        return self._offer_to_ordinals(self._all_ordinals, item)

    def _offer_to_no_edge(self, item: Any) -> bool:
        # A vertex without outbound edges (a sink) that emits an item drops it: say so once, as
        # a forgotten `dag.edge(...)` to the sink loses every item without a word otherwise.
        # Watermarks are left alone: `AbstractProcessor` forwards them by default, sinks too.
        if item.__class__ is not Watermark and not self._warned_no_edge:
            self._warn_dropped(item)
        return self._offer_to_ordinals(self._all_ordinals, item)

    def _warn_dropped(self, item: Any) -> None:
        self._warned_no_edge = True
        _log.warning(
            "%s emits items but its vertex has no outbound edge: they are dropped (was an edge to "
            "a sink forgotten?), first: %s",
            self.owner,
            reprlib.repr(item),
        )

    def _offer_single(self, item: Any) -> bool:
        # The hot path of every emitted item when the vertex has one outbound edge.
        buffer = self._buffer0
        if len(buffer) < self._single_limit and item.__class__ is not Watermark and item is not None:
            buffer.append(item)
            return True
        return self._offer_to_ordinals(self._all_ordinals, item)

    def offer_from(self, items: Iterator[Any], ordinal: int | Sequence[int] = -1) -> list[Any]:
        if ordinal in (-1, 0) and len(self.collectors) == 1:
            # One edge: copy as many items as there is room for straight into its buffer (in C),
            # then check them all at once; `_single_limit` is 0 while the outbox is slow.
            buffer = self._buffer0
            room = self._single_limit - len(buffer)
            while room > 0:
                start = len(buffer)
                buffer.extend(islice(items, room))
                taken = len(buffer) - start
                if not _NOT_PLAIN.isdisjoint(map(type, buffer[start:])):
                    # A watermark (or None) among them: hand them to offer() one by one, in order.
                    special = buffer[start:]
                    del buffer[start:]
                    return self._offer_each(special, items, ordinal)
                if taken < room:
                    return []
                room = self._single_limit - len(buffer)
        return self._offer_each([], items, ordinal)

    def _offer_each(self, taken: list[Any], items: Iterator[Any], ordinal: int | Sequence[int]) -> list[Any]:
        """Offer `taken`, then the rest of `items`, one by one; returns what is left to offer."""
        offer: Callable[[Any], bool] = (
            self.offer if ordinal == -1 else lambda item: self.offer_to(ordinal, item)
        )
        for index, item in enumerate(taken):
            if not offer(item):
                return taken[index:]
        for item in items:
            if not offer(item):
                return [item]
        return []

    def room(self, ordinal: int = -1) -> int:
        if self._slow:
            return 0
        if ordinal == -1:
            buffers = self.buffers
            if len(buffers) == 1:  # the common case, asked once per item by some processors
                return self.batch_size - len(self._buffer0)
            if not buffers:
                return self.batch_size
            return self.batch_size - max(map(len, buffers))
        self._check_ordinal(ordinal)
        return self.batch_size - len(self.buffers[ordinal])

    def offer_batch(self, items: Sequence[Any], ordinal: int = -1) -> bool:
        if self._slow:
            self._check_reoffer(None, items)
        if len(items) > self.room(ordinal):
            return False
        # A range holds ints only; anything else is checked at C speed, calling no item's __eq__.
        if items.__class__ is not range and not _NOT_PLAIN.isdisjoint(map(type, items)):
            kinds = set(map(type, items))
            raise ProcessorContractError(
                f"{self.owner}: offer_batch() got {'None' if _NONE_TYPE in kinds else 'a Watermark'} among its "
                "items; items must not be None, and watermarks go through offer()"
            )
        if not self.collectors and items and not self._warned_no_edge:
            self._warn_dropped(items[0])
        for one in self._all_ordinals if ordinal == -1 else (ordinal,):
            self.buffers[one].extend(items)
        return True

    def offer_to(self, ordinal: int | Sequence[int], item: Any) -> bool:
        if (  # the common case, one valid ordinal and a plain item, costs what offer() costs
            isinstance(ordinal, int)
            and 0 <= ordinal < len(self.buffers)
            and not self._slow
            and item is not None
            and item.__class__ is not Watermark
        ):
            buffer = self.buffers[ordinal]
            if len(buffer) < self.batch_size:
                buffer.append(item)
                return True
        if isinstance(ordinal, int):
            if ordinal == -1:
                ordinals = self._all_ordinals
            else:
                self._check_ordinal(ordinal)
                ordinals = (ordinal,)
        else:
            ordinals = tuple(dict.fromkeys(ordinal))  # an ordinal named twice gets the item once
            for one in ordinals:
                self._check_ordinal(one)
        return self._offer_to_ordinals(ordinals, item)

    def offer_to_snapshot(self, key: Any, value: Any) -> bool:
        # The common case, a full save of an int, str or tuple key with nothing refused, costs
        # the two pickles, the key's CRC and an append: `_slow` is false exactly when
        # `_check_reoffer` and `_clear_unfinished` have nothing to do. The partition is
        # `default_partitioner`'s (its fast paths, inlined; a property test holds them equal).
        # Anything that fails goes the checked way, which raises the error naming the key.
        if self._slow or self._snapshot_allowed_in is None or self._snapshot_changed is not None:
            return self._offer_to_snapshot_checked(key, value)
        buffer = self.snapshot_buffer
        cls = key.__class__
        if len(buffer) >= self.batch_size or (cls is not int and cls is not str and cls is not tuple):
            return self._offer_to_snapshot_checked(key, value)
        try:
            if cls is int:
                partition = _crc32(b"%d" % key, INT_TAG_CRC) % self._partition_count
            elif cls is str:
                partition = _crc32(key.encode("utf-8", "surrogatepass"), STR_TAG_CRC) % self._partition_count
            else:
                partition = _crc32(canonical_bytes(key)) % self._partition_count
            key_bytes = _dumps(key, _PROTOCOL)
            value_bytes = _dumps(value, _PROTOCOL)
        except Exception:
            return self._offer_to_snapshot_checked(key, value)
        self.snapshot_partitions.add(partition)
        buffer.append(_new_tuple(SnapshotEntry, (partition, key_bytes, value_bytes)))
        return True

    def offer_all_to_snapshot(self, keys: Sequence[Any], values: Sequence[Any]) -> int:
        # Every entry at once: each key's partition by a C-level pass over all of them, then a
        # block per partition (`core.snapshot_block`: its keys and its values pickled by one
        # call), so a save costs a small share of what a Python call per entry costs. The
        # bucket's bound is for single offers: all the entries are taken. Anything the bulk
        # path does not cover (an unfinished or forbidden offer, an unhashable key, one that
        # cannot be routed or pickled) goes one by one, the checked way, which raises the error
        # naming the entry.
        if len(keys) != len(values):
            raise ValueError(
                f"{self.owner}: offer_all_to_snapshot got {len(keys)} keys but {len(values)} values"
            )
        if self._slow or self._snapshot_allowed_in is None or len(keys) == 0 or not self.bulk_snapshot:
            return super().offer_all_to_snapshot(keys, values)
        changed = self._snapshot_changed
        kept_keys, kept_values = keys, values
        try:
            classes = set(map(type, keys))
            if changed is not None:  # an incremental save keeps the changed keys' entries
                if any(issubclass(cls, BroadcastKey) for cls in classes):  # and every broadcast one
                    wanted = [isinstance(key, BroadcastKey) or key in changed for key in keys]
                elif changed.issuperset(keys):  # all changed (a save of `keys_to_save()`): one C pass
                    wanted = [True]
                else:
                    wanted = list(map(changed.__contains__, keys))
                if not all(wanted):
                    kept_keys, kept_values = list(compress(keys, wanted)), list(compress(values, wanted))
                    classes = set(map(type, kept_keys))
            partitions = self._bulk_partitions(kept_keys, classes)
            blocks = encode_blocks(partitions, kept_keys, kept_values)
        except Exception:
            return super().offer_all_to_snapshot(keys, values)
        if changed is not None:
            self._snapshot_offered.update(kept_keys)
        self.snapshot_partitions.update(partitions)
        self.snapshot_buffer.extend(blocks)
        return len(keys)

    def _bulk_partitions(self, keys: Sequence[Any], classes: set[type]) -> list[int]:
        """Each key's partition: `entry_partition`'s, with `default_partitioner`'s fast paths in
        bulk for keys all ints or all strs; raises TypeError for a key that cannot be routed."""
        count = repeat(self._partition_count)
        if classes == {int}:
            crcs = map(_crc32, map(b"%d".__mod__, keys), repeat(INT_TAG_CRC))
        elif classes == {str}:
            encoded = map(str.encode, keys, repeat("utf-8"), repeat("surrogatepass"))
            crcs = map(_crc32, encoded, repeat(STR_TAG_CRC))
        else:
            return list(map(entry_partition, keys, count))
        return list(map(int.__mod__, crcs, count))

    def _offer_to_snapshot_checked(self, key: Any, value: Any) -> bool:
        """`offer_to_snapshot` with every check: a refused or forbidden offer, an incremental
        save, a key of any type."""
        if self._snapshot_allowed_in is None:
            raise ProcessorContractError(
                f"{self.owner}: offer_to_snapshot() is allowed only from save_to_snapshot() and "
                "snapshot_commit_prepare()"
            )
        self._check_reoffer(-2, (key, value))
        changed = self._snapshot_changed
        if changed is not None and not isinstance(key, BroadcastKey):  # broadcast: always written
            try:
                wanted = key in changed
            except TypeError:  # an unhashable key cannot be named as changed: it is kept
                wanted = True
            if not wanted:
                return True  # unchanged since the last snapshot: the incremental one leaves it out
            self._snapshot_offered.add(key)
        if len(self.snapshot_buffer) >= self.batch_size:
            self._reject((key, value), (-2,))
            return False
        try:
            partition = entry_partition(key, self._partition_count)
        except Exception as error:
            raise ProcessorContractError(
                f"{self.owner}: snapshot key {key!r} cannot be routed to a partition on restore: {error}"
            ) from error
        try:
            key_bytes = _dumps(key, _PROTOCOL)
        except Exception as error:
            raise ProcessorContractError(
                f"{self.owner}: snapshot key {key!r} cannot be pickled: {error}"
            ) from error
        try:
            value_bytes = _dumps(value, _PROTOCOL)
        except Exception as error:
            raise ProcessorContractError(
                f"{self.owner}: snapshot value for key {key!r} cannot be pickled: {error}"
            ) from error
        self.snapshot_partitions.add(partition)
        self.snapshot_buffer.append(_new_tuple(SnapshotEntry, (partition, key_bytes, value_bytes)))
        self._clear_unfinished()
        return True

    # ---- engine side ----------------------------------------------------------------------

    def forbid_offers(self, method: str | None) -> None:
        """While set, any offer raises: `method` must not emit (e.g. snapshot_commit_finish)."""
        self._forbidden_by = method
        self._update_slow()

    def seal(self, when: str | None) -> None:
        """From now on every offer raises `ProcessorContractError`: the processor's stream has
        ended downstream (`when` says how, e.g. "after complete() returned True"), so an accepted
        item would be lost. Also holds for offers from other threads of the processor."""
        self._sealed = when
        self._update_slow()

    @property
    def sealed(self) -> str | None:
        return self._sealed

    @property
    def unfinished_item(self) -> Any:
        """The item a refused offer left behind (None if there is none), for error messages."""
        return None if self._unfinished_item is _NOTHING else self._unfinished_item

    def block(self, blocked: bool) -> None:
        """While blocked, only an unfinished item may still be offered; any other offer returns
        False (leaving nothing unfinished), so that a snapshot can be taken right after."""
        self._blocked = blocked
        self._update_slow()

    def _update_slow(self) -> None:
        self._set_slow(
            self._forbidden_by is not None
            or self._sealed is not None
            or self._unfinished_item is not _NOTHING
            or self._blocked
        )

    def _set_slow(self, slow: bool) -> None:
        self._slow = slow
        self._single_limit = 0 if slow else self.batch_size

    def allow_snapshot_offers(self, method: str | None) -> None:
        self._snapshot_allowed_in = method

    def save_only(self, changed: set[Any]) -> None:
        """An incremental snapshot: keep only offers of `changed` keys (`end_incremental`)."""
        self._snapshot_changed = changed
        self._snapshot_offered = set()

    def keys_to_save(self) -> set[Any] | None:
        return self._snapshot_changed if self._snapshot_allowed_in == "save_to_snapshot" else None

    def end_incremental(self) -> None:
        """A deletion entry (empty value bytes: no pickle is empty) for every changed key the
        processor did not offer: it removed that key since the last snapshot. None for a
        `BroadcastKey`: an incremental file holds all of them (`checkpoint.deltas.merge`)."""
        changed = self._snapshot_changed
        if changed is None:
            return
        for key in changed - self._snapshot_offered:
            if isinstance(key, BroadcastKey):
                continue
            partition = entry_partition(key, self._partition_count)
            self.snapshot_partitions.add(partition)
            self.snapshot_buffer.append(
                SnapshotEntry(partition, pickle.dumps(key, pickle.HIGHEST_PROTOCOL), b"")
            )
        self._snapshot_changed = None
        self._snapshot_offered = set()

    def flush(self) -> bool:
        """Move buffered items downstream; True when every buffer is empty afterwards.

        The tasklet flushes after every call: this ends the call, so an item refused in it may be
        offered again."""
        self._refused_in_call = False
        done = True
        for ordinal, buffer in enumerate(self.buffers):
            if buffer and not self._flush_ordinal(ordinal):
                done = False
        if self.snapshot_buffer and self._snapshot_sink is not None:
            self._snapshot_sink(self.snapshot_buffer)
            self.snapshot_buffer = []
        if not done:  # a downstream queue is at capacity: back-pressure begins, or goes on
            if not self._blocked_since:
                self._blocked_since = time.monotonic()
        elif self._blocked_since:
            self._backpressured += time.monotonic() - self._blocked_since
            self._blocked_since = 0.0
        return done

    def backpressured_seconds(self) -> float:
        """Seconds the outbox held items that a full downstream queue refused, so far (the
        current spell included)."""
        since = self._blocked_since
        return self._backpressured + (time.monotonic() - since if since else 0.0)

    def offer_special_to_all(self, item: Any) -> bool:
        """Flush, then send a special item (barrier, DONE) to every queue of every ordinal."""
        if not self.flush():
            return False
        for collector in self.collectors:
            collector.offer_special(item)
        return True

    def watermark_state(self) -> list[tuple[int | None, bool]]:
        """Per ordinal: the last rising watermark sent (None: none) and whether the idle marker
        followed it; what `replay_watermarks` sends again in a later execution."""
        return [
            (None if last == _BELOW_EVERY_TIMESTAMP else int(last), idle)
            for last, idle in zip(self._last_watermarks, self._idle_last)
        ]

    def replay_watermarks(self, state: Sequence[tuple[int | None, bool]]) -> None:
        """At the start of an execution that goes on from an earlier one with the same processor
        (a Spark epoch's state cache): send each ordinal the watermark (and idle marker) it was
        sent last, since the consumers are new and wait for a watermark from every producer: a
        producer with nothing new in this execution would otherwise hold their event time back."""
        for ordinal, (last, idle) in enumerate(state[: len(self.collectors)]):
            collector = self.collectors[ordinal]
            if last is not None:
                collector.offer_special(Watermark(last))
                self._last_watermarks[ordinal] = last
                self._replayed[ordinal] = last
            if idle:
                collector.offer_special(IDLE_MESSAGE)
                self._idle_last[ordinal] = True

    def sent_any_watermark(self) -> bool:
        """Whether any outbound edge has been sent a watermark (a replayed one included)."""
        return any(last != _BELOW_EVERY_TIMESTAMP for last in self._last_watermarks)

    def output_watermark(self) -> int | None:
        """The lowest last watermark over the outbound edges; None until every edge has one."""
        if not self._last_watermarks:
            return None
        lowest = min(self._last_watermarks)
        return None if lowest == _BELOW_EVERY_TIMESTAMP else int(lowest)

    def buffered(self) -> int:
        """Items waiting in the buffers; the tasklet compares it around a call to detect progress."""
        return sum(len(buffer) for buffer in self.buffers) + len(self.snapshot_buffer)

    def is_empty(self) -> bool:
        return not any(self.buffers) and not self.snapshot_buffer

    # ---- internals ------------------------------------------------------------------------

    def _flush_ordinal(self, ordinal: int) -> bool:
        buffer = self.buffers[ordinal]
        taken = self.collectors[ordinal].offer_items(buffer)
        if taken == 0:
            return False
        self.emitted_count += taken
        if taken == len(buffer):
            fresh: list[Any] = []
            self.buffers[ordinal] = fresh
            if ordinal == 0:
                self._buffer0 = fresh
            return True
        del buffer[:taken]
        return False

    def _check_ordinal(self, ordinal: int) -> None:
        if not 0 <= ordinal < len(self.collectors):
            raise ProcessorContractError(
                f"{self.owner}: ordinal {ordinal} out of range; the vertex has {len(self.collectors)} "
                "outbound edge(s)"
            )

    def _check_reoffer(self, ordinal_key: Any, item: Any) -> None:
        if self._forbidden_by is not None:
            raise ProcessorContractError(
                f"{self.owner}: {self._forbidden_by}() must not emit, but offered {reprlib.repr(item)}"
            )
        if self._sealed is not None:
            raise ProcessorContractError(
                f"{self.owner}: offered {reprlib.repr(item)} {self._sealed}; the processor's output "
                "has ended (its end of stream went downstream), so the item would be lost"
            )
        if self._unfinished_item is _NOTHING:
            return
        if self._refused_in_call:  # Jet: "offer() called again" before reset()
            raise ProcessorContractError(
                f"{self.owner}: offer() called again in the same call after it returned False (for "
                f"{reprlib.repr(self._unfinished_item)}); return from the method after a refused offer "
                "and offer the same item again on the next call"
            )
        if ordinal_key == -2:
            same = self._unfinished_ordinals == (-2,) and _same_item(self._unfinished_item, item)
        else:
            same = self._unfinished_ordinals == ordinal_key and _same_item(self._unfinished_item, item)
        if not same:
            raise ProcessorContractError(
                f"{self.owner}: offered {reprlib.repr(item)} after the outbox rejected "
                f"{reprlib.repr(self._unfinished_item)}; "
                "after a rejected offer the same item must be offered again to the same ordinals"
            )

    def _reject(self, item: Any, ordinals: tuple[int, ...]) -> None:
        self._unfinished_item = item
        self._unfinished_ordinals = ordinals
        self._refused_in_call = True
        self._set_slow(True)

    def _clear_unfinished(self) -> None:
        if self._unfinished_item is not _NOTHING:
            self._unfinished_item = _NOTHING
            self._unfinished_ordinals = ()
            self._update_slow()
        if self._accepted:
            self._accepted.clear()

    def _offer_to_ordinals(self, ordinals: tuple[int, ...], item: Any) -> bool:
        if self._blocked and self._unfinished_item is _NOTHING:
            return False
        self._check_reoffer(ordinals, item)
        if item is None:
            raise ProcessorContractError(f"{self.owner}: None cannot be offered")
        if item.__class__ is Watermark:
            return self._offer_watermark(ordinals, item)
        accepted = self._accepted
        for ordinal in ordinals:
            if ordinal in accepted:
                continue
            buffer = self.buffers[ordinal]
            if len(buffer) >= self.batch_size:
                continue
            buffer.append(item)
            accepted.add(ordinal)
        if len(accepted) == len(ordinals):
            self._clear_unfinished()
            return True
        self._reject(item, ordinals)
        return False

    def _offer_watermark(self, ordinals: tuple[int, ...], watermark: Watermark) -> bool:
        accepted = self._accepted
        timestamp = watermark.timestamp
        rising = timestamp != IDLE_TIMESTAMP  # the idle marker may follow any watermark
        last = self._last_watermarks
        for ordinal in ordinals:
            if ordinal in accepted:
                continue
            if rising and timestamp <= last[ordinal]:
                if timestamp <= self._replayed[ordinal]:  # sent at this execution's start already
                    accepted.add(ordinal)
                    continue
                raise ProcessorContractError(
                    f"{self.owner}: watermark {timestamp} offered to ordinal {ordinal} is not greater than "
                    f"the previous one ({last[ordinal]}); watermarks must rise"
                )
            if self.buffers[ordinal] and not self._flush_ordinal(ordinal):
                continue
            self.collectors[ordinal].offer_special(watermark)
            if rising:
                last[ordinal] = timestamp
            self._idle_last[ordinal] = not rising
            accepted.add(ordinal)
        if len(accepted) == len(ordinals):
            self._clear_unfinished()
            return True
        self._reject(watermark, ordinals)
        return False

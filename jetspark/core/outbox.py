"""The Outbox: where a processor deposits its output, one bucket per outbound edge ordinal."""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

#: Entries a save offers per `offer_all_to_snapshot` call and per `save_to_snapshot` call
#: (`KeyedState`, the built-ins, `emit_from_traverser_to_snapshot`): a cooperative call then
#: lasts about 25 ms, not the whole save.
SNAPSHOT_CHUNK = 1 << 15


class Outbox(abc.ABC):
    """Output of a processor, bounded: an offer returns False when the bucket is full.

    After an offer returned False, the processor must return from the current call and offer the
    *same* item (to the same ordinals) again before offering anything else; the engine raises
    `ProcessorContractError` if it does not, and for any offer later in the same call (the outbox
    moves items downstream only between calls, so a retry loop could never succeed). Offering to several ordinals remembers which ones
    already accepted the item and retries only the others.

    A processor with no outbound edges may offer: the items are accepted and dropped.
    """

    @abc.abstractmethod
    def bucket_count(self) -> int:
        """Number of outbound edge ordinals (the snapshot bucket is not counted)."""

    @abc.abstractmethod
    def offer(self, item: Any) -> bool:
        """Offer `item` to every outbound edge; True when all accepted it."""

    @abc.abstractmethod
    def offer_to(self, ordinal: int | Sequence[int], item: Any) -> bool:
        """Offer `item` to one ordinal (-1 means all) or to several; True when all accepted it."""

    @abc.abstractmethod
    def offer_to_snapshot(self, key: Any, value: Any) -> bool:
        """Add a snapshot entry. Allowed only from `save_to_snapshot` and `snapshot_commit_prepare`.

        The key and the value are serialized at once, so the caller may change either in place
        as soon as the offer returned True. A key wrapped in `BroadcastKey` is restored to every
        processor; any other key to the processor that owns the key's partition when the job
        restores, so it must be hashable like a dict key: an unhashable key (a list, a set) raises
        `ProcessorContractError` here.
        """

    def offer_all_to_snapshot(self, keys: Sequence[Any], values: Sequence[Any]) -> int:
        """Add the snapshot entries `(keys[i], values[i])`, in order; the number taken.

        A jetspark extension for saving much state at once: allowed where `offer_to_snapshot`
        is, with its rules (each entry serialized before this returns). The engine's outbox takes
        them all and serializes them in bulk, a C-level pass per step instead of a Python call
        per entry. Here (an outbox without a bulk path) they are offered one by one until one is
        refused: then fewer than `len(keys)` are taken, and the next call (after returning False
        from the save) must begin with the entry at the returned index, the refused one.
        """
        if len(keys) != len(values):
            raise ValueError(f"offer_all_to_snapshot: {len(keys)} keys but {len(values)} values")
        offer = self.offer_to_snapshot
        for taken, (key, value) in enumerate(zip(keys, values)):
            if not offer(key, value):
                return taken
        return len(keys)

    def keys_to_save(self) -> Collection[Any] | None:
        """During `save_to_snapshot`: None for a full snapshot (offer every entry); for an
        incremental one, the keys whose entries it writes (what `changed_snapshot_keys()` just
        returned; do not change the collection).

        A jetspark extension that makes an incremental save cost in proportion to what changed: a
        processor may offer only the entries of these keys that it still holds (the others would
        be dropped anyway; one it no longer holds becomes a deletion), plus its `BroadcastKey`
        entries, which every save writes whole. Outside a save, and by default, None.
        """
        return None

    @abc.abstractmethod
    def room(self, ordinal: int = -1) -> int:
        """How many more items `offer_batch` (or `offer`) accepts now on `ordinal` (-1: on all).

        A jetspark extension for batch-at-a-time processors: 0 while an offer is unfinished.
        """

    @abc.abstractmethod
    def offer_batch(self, items: Sequence[Any], ordinal: int = -1) -> bool:
        """Offer all `items`, in order, to `ordinal` (-1: every edge); all or nothing.

        A jetspark extension. Returns False and takes nothing when `len(items) > room(ordinal)`;
        unlike `offer`, a refusal leaves no unfinished item behind. Watermarks are not allowed here.
        """

    def offer_from(self, items: Iterator[Any], ordinal: int | Sequence[int] = -1) -> list[Any]:
        """Offer the items of `items` in order to `ordinal` (-1: every edge) until it ends or one is
        refused. Returns [] when `items` ended; else the refused item followed by any items this
        call took from `items` after it: offer them first, in order, on the next call.

        `emit_from_traverser` uses it, so an outbox that moves many items at once (the engine's
        copies them into its buffer in C) makes every emitting processor faster.
        """
        offer: Callable[[Any], bool] = (
            self.offer if ordinal == -1 else functools.partial(self.offer_to, ordinal)
        )
        for item in items:
            if not offer(item):
                return [item]
        return []

    @abc.abstractmethod
    def has_unfinished_item(self) -> bool:
        """True after an offer returned False and before the same item was accepted."""

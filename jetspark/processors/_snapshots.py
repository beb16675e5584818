"""Saving a processor's state as a list of snapshot entries, resumed where the outbox was full."""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Hashable, Mapping
from typing import Any

from jetspark.core.outbox import SNAPSHOT_CHUNK, Outbox

_KEY, _VALUE = operator.itemgetter(0), operator.itemgetter(1)


class EntryWriter:
    """Offers the entries `make()` returns, over as many `save_to_snapshot` calls as it takes (a
    chunk a call): `make` runs once per snapshot, and each call resumes at the first entry not
    yet accepted."""

    __slots__ = ("_entries", "_index")

    def __init__(self) -> None:
        self._entries: list[tuple[Any, Any]] | None = None
        self._index = 0

    def save(self, outbox: Outbox, make: Callable[[], list[tuple[Any, Any]]]) -> bool:
        """True once every entry went to the snapshot; False to be called again."""
        if self._entries is None:
            self._entries = make()
            self._index = 0
        entries = self._entries
        if self._index < len(entries):  # in bulk (`Outbox.offer_all_to_snapshot`), a chunk a call
            chunk = entries[self._index : self._index + SNAPSHOT_CHUNK]
            self._index += outbox.offer_all_to_snapshot(list(map(_KEY, chunk)), list(map(_VALUE, chunk)))
            if self._index < len(entries):
                return False
        self._entries = None
        return True


def lowest(current: int | None, restored: int) -> int:
    """The lower of a value restored so far (None: none yet) and another one restored: a
    processor restored from several takes the lowest, so that it runs ahead of none of them."""
    return restored if current is None or restored < current else current


def by_key(
    nested: Mapping[int, Mapping[Hashable, Any]], only: Collection[Hashable] | None
) -> dict[Hashable, dict[int, Any]]:
    """Per key, its value in each inner map, by the outer key (a window's frames by their end,
    say): one snapshot entry per key. With `only` (an incremental snapshot: `Outbox.keys_to_save`)
    just those keys, each looked up in every inner map, so the cost follows what changed; a key
    in no inner map is left out (the engine writes its deletion)."""
    grouped: dict[Hashable, dict[int, Any]] = {}
    if only is None:
        for outer, inner in nested.items():
            for key, value in inner.items():
                grouped.setdefault(key, {})[outer] = value
        return grouped
    for key in only:
        found = {outer: inner[key] for outer, inner in nested.items() if key in inner}
        if found:
            grouped[key] = found
    return grouped

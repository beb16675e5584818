"""Saving a processor's state as a list of snapshot entries, resumed where the outbox was full."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jetspark.core.outbox import Outbox


class EntryWriter:
    """Offers the entries `make()` returns, over as many `save_to_snapshot` calls as it takes:
    `make` runs once per snapshot, and each call resumes at the first entry not yet accepted."""

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
        offer = outbox.offer_to_snapshot
        while self._index < len(entries):
            key, value = entries[self._index]
            if not offer(key, value):
                return False
            self._index += 1
        self._entries = None
        return True


def lowest(current: int | None, restored: int) -> int:
    """The lower of a value restored so far (None: none yet) and another one restored: a
    processor restored from several takes the lowest, so that it runs ahead of none of them."""
    return restored if current is None or restored < current else current

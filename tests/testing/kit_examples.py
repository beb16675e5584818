"""Example processors shared by the kit's tests: correct ones that the broken variants derive from."""

from __future__ import annotations

from typing import Any

from jetspark import AbstractProcessor, Traverser, traverse_iterable


class Dedup(AbstractProcessor):
    """Emits each item the first time it is seen. State: the seen items, one snapshot entry each,
    keyed by the item, so it restores into any number of processors of a partitioned edge."""

    def __init__(self) -> None:
        self.seen: set[Any] = set()
        self._snapshot: Traverser[tuple[Any, Any]] | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if item in self.seen:
            return True
        if not self.try_emit(item):
            return False
        self.seen.add(item)
        return True

    def save_to_snapshot(self) -> bool:
        if self._snapshot is None:
            self._snapshot = traverse_iterable([(item, True) for item in self.seen])
        if not self.emit_from_traverser_to_snapshot(self._snapshot):
            return False
        self._snapshot = None
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.seen.add(key)


class CountByKey(AbstractProcessor):
    """Counts items per key (the item itself); emits (key, count) sorted by key at complete().
    Snapshot: one entry per key."""

    def __init__(self) -> None:
        self.counts: dict[Any, int] = {}
        self._out: Traverser[Any] | None = None
        self._snapshot: Traverser[tuple[Any, Any]] | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.counts[item] = self.counts.get(item, 0) + 1
        return True

    def complete(self) -> bool:
        if self._out is None:
            self._out = traverse_iterable(sorted(self.counts.items()))
        return self.emit_from_traverser(self._out)

    def save_to_snapshot(self) -> bool:
        if self._snapshot is None:
            self._snapshot = traverse_iterable(list(self.counts.items()))
        if not self.emit_from_traverser_to_snapshot(self._snapshot):
            return False
        self._snapshot = None
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.counts[key] = self.counts.get(key, 0) + value

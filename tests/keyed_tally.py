"""A user's processor keeping its state in a `KeyedState`: shared by the unit and property tests."""

from __future__ import annotations

from typing import Any

from jetspark import AbstractProcessor, KeyedState


class KeyedTally(AbstractProcessor):
    """Items `(ts, key)`: counts per key and emits `(key, count)`; a key's count goes away at 2
    (a deletion in the next incremental snapshot). Each item changes its key through another
    dict method, chosen by `ts`, so that every mutation the state tracks is exercised."""

    def init_processor(self, context: Any) -> None:
        self.counts: KeyedState[str, int] = KeyedState()

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        ts, key = item
        n = self.counts.get(key, 0) + 1
        if not self.try_emit((key, n)):
            return False
        if n >= 2:
            if ts % 3 == 0:
                del self.counts[key]
            elif ts % 3 == 1:
                self.counts.pop(key)
            else:
                self.counts.update({key: 0})
                self.counts.pop(key, None)
        elif ts % 4 == 0:
            self.counts[key] = n
        elif ts % 4 == 1:
            self.counts.update([(key, n)])
        elif ts % 4 == 2:
            self.counts.setdefault(key, 0)
            self.counts |= {key: n}
        else:
            self.counts.update(**{key: n})
        return True

    def save_to_snapshot(self) -> bool:
        return self.counts.save(self)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.counts.restore(key, value)

    def changed_snapshot_keys(self) -> Any:
        return self.counts.changed_keys()

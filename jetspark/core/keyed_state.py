"""`KeyedState`: a processor's keyed state as a dict that knows which keys changed, so that its
snapshots can be incremental without hand-written bookkeeping.

A processor whose state is a map from key to value has three things to get right for incremental
snapshots (docs/fault-tolerance.md, "Incremental snapshots"): track the keys it changed or removed
since its last save, name them in `changed_snapshot_keys()`, and make a save that may be called
again after the snapshot bucket was full visit only those keys (`Outbox.keys_to_save()`).
`KeyedState` does all three; the processor delegates one line each:

    def init_processor(self, context):
        self.counts = KeyedState()

    def save_to_snapshot(self):
        return self.counts.save(self)

    def restore_from_snapshot_entry(self, key, value):
        self.counts.restore(key, value)

    def changed_snapshot_keys(self):
        return self.counts.changed_keys()

Every way a dict changes a key marks it: `d[k] = v`, `del d[k]`, `pop`, `popitem`, `setdefault`
(which hands out the value, so it may be changed in place), `update`, `|=`, `clear`. A value
changed in place after `d[k]` (a list appended to) is not seen: assign it back, or call
`touch(k)`. Until the first save (or restore) every key counts as changed, so the first snapshot
is whole. The keys are the snapshot keys, routed on restore like any entry's key: partition the
processor's input by the same key, and keep one `KeyedState` per processor (two would share one
key space).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from itertools import repeat
from typing import Any, Protocol, TypeVar

from jetspark.core.outbox import SNAPSHOT_CHUNK

K = TypeVar("K")
V = TypeVar("V")

_MISSING: Any = object()
#: A save walks the held keys (not the changed ones) when at least 1/this of them changed.
DICT_ORDER_SHARE = 8


def keys_to_offer(held: Collection[Any], only: Collection[Any] | None) -> list[Any]:
    """The keys of `held` (a processor's keyed state) a save offers: all of them (`only` None:
    a full snapshot), else those of `only` (`Outbox.keys_to_save()`: the changed keys) that
    `held` still has. In `held`'s own order when the changed keys are many: a set's order is its
    hash order, and reading half a million keys and their values in that order jumps across
    memory (2.6x slower than a dict's insertion order at 500 k keys, measured: most of an
    incremental save in which every key changed)."""
    if only is None:
        return list(held)
    if not isinstance(only, (set, frozenset)):
        only = set(only)
    if len(only) * DICT_ORDER_SHARE >= len(held):
        return list(filter(only.__contains__, held))
    return list(filter(held.__contains__, only))


class _Saver(Protocol):
    """What `KeyedState.save` needs of the processor (an `AbstractProcessor` has it)."""

    @property
    def outbox(self) -> Any: ...


class KeyedState(dict[K, V]):
    """A dict that records the keys changed or removed since the last snapshot (see module)."""

    __slots__ = ("_changed", "_saved", "_saving")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Keys changed or removed since the last save or restore; None: all of them (none yet).
        self._changed: set[Any] | None = None
        #: The keys of the save under way, and how many of them were taken.
        self._saving: list[Any] | None = None
        self._saved = 0

    # ---- the snapshot side ------------------------------------------------------------------

    def changed_keys(self) -> Collection[K]:
        """The keys changed or removed since the last save or restore (every key before either):
        what the processor's `changed_snapshot_keys()` returns."""
        return set(self) if self._changed is None else self._changed

    def save(self, processor: _Saver) -> bool:
        """Offer the entries the snapshot being taken needs: the changed keys' in an incremental
        one (`Outbox.keys_to_save()`), all of them in a full one. Returns False when the snapshot
        bucket is full, and after each chunk of 32,768 entries (about 25 ms); called again, it
        goes on where it stopped. Returns True when done, and the tracking starts afresh."""
        outbox = processor.outbox
        if self._saving is None:
            self._saving = keys_to_offer(self, outbox.keys_to_save())
        saving = self._saving
        # In bulk (`Outbox.offer_all_to_snapshot`), a chunk per call, so that a cooperative call
        # stays short: the engine's outbox takes a whole chunk; another outbox may take part of
        # one, and the next call goes on from the first entry it refused.
        if self._saved < len(saving):
            keys = saving[self._saved : self._saved + SNAPSHOT_CHUNK]
            self._saved += outbox.offer_all_to_snapshot(keys, list(map(dict.__getitem__, repeat(self), keys)))
            if self._saved < len(saving):
                return False
        self._saving = None
        self._saved = 0
        self._changed = set()
        return True

    def restore(self, key: K, value: V) -> None:
        """Put back one restored entry (not a change: the snapshot holds it already)."""
        dict.__setitem__(self, key, value)
        if self._changed is None:
            self._changed = set()

    def touch(self, key: K) -> None:
        """Mark `key` changed: its value was changed in place (a list appended to, say)."""
        if self._changed is not None:
            self._changed.add(key)

    # ---- every dict mutation marks what it changes --------------------------------------------

    def __setitem__(self, key: K, value: V) -> None:
        dict.__setitem__(self, key, value)
        if self._changed is not None:
            self._changed.add(key)

    def __delitem__(self, key: K) -> None:
        dict.__delitem__(self, key)
        if self._changed is not None:
            self._changed.add(key)

    def pop(self, key: K, default: Any = _MISSING) -> Any:
        if default is _MISSING:
            value = dict.pop(self, key)
        elif not dict.__contains__(self, key):
            return default
        else:
            value = dict.pop(self, key)
        if self._changed is not None:
            self._changed.add(key)
        return value

    def popitem(self) -> tuple[K, V]:
        key, value = dict.popitem(self)
        if self._changed is not None:
            self._changed.add(key)
        return key, value

    def setdefault(self, key: K, default: Any = None) -> Any:
        value = dict.setdefault(self, key, default)
        if self._changed is not None:
            self._changed.add(key)  # the caller may change the value it gets in place
        return value

    def update(self, other: Any = (), /, **kwargs: V) -> None:
        pairs: Iterable[tuple[Any, Any]]
        if isinstance(other, Mapping):
            pairs = other.items()
        elif hasattr(other, "keys"):
            pairs = ((k, other[k]) for k in other.keys())  # noqa: SIM118 (dict.update's protocol)
        else:
            pairs = other
        for key, value in pairs:
            self[key] = value
        for key, value in kwargs.items():
            self[key] = value  # type: ignore[index]

    def __ior__(self, other: Any) -> KeyedState[K, V]:  # type: ignore[override,misc]
        self.update(other)
        return self

    def clear(self) -> None:
        if self._changed is not None:
            self._changed.update(self)
        dict.clear(self)

    def __repr__(self) -> str:
        return f"KeyedState({dict.__repr__(self)})"

    def __reduce__(self) -> Any:
        # a processor shipped before it ran: its state, and whether tracking had started
        return (_rebuild, (dict(self), self._changed))


def _rebuild(items: dict[Any, Any], changed: set[Any] | None) -> KeyedState[Any, Any]:
    state: KeyedState[Any, Any] = KeyedState(items)
    state._changed = changed
    return state

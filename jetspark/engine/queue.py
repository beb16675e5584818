"""A bounded queue from one producer processor to one consumer processor (Jet's conveyor lane).

Entries are whole data chunks (lists) or special items. Capacity counts data items only: special
items are always accepted, so a barrier or DONE can never deadlock behind a full queue. A lock
guards the counters because a non-cooperative producer or consumer runs on its own thread.

A queue has two halves, as trio's memory channels do: the producer's outbound collectors use only
its `QueueSender` side and the consumer's inbound stream only its `QueueReceiver` side. An
in-process `BoundedQueue` is both; at a Spark stage boundary each task holds one half only (the
capture queue sends into shuffle records, the replay queue receives from them), and wiring checks
that each end gets the half it uses.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class QueueSender(Protocol):
    """The producer's half: how much fits, and putting chunks and special items."""

    def room(self) -> int:
        """How many data items fit now."""
        ...

    def put_chunk(self, chunk: list[Any]) -> None:
        """Append a data chunk; the caller checked `room()`. The queue takes ownership of the list."""
        ...

    def put_special(self, item: Any) -> None:
        """Append a special item, regardless of capacity."""
        ...


@runtime_checkable
class QueueReceiver(Protocol):
    """The consumer's half: taking the head entry, and the data items waiting."""

    def take(self) -> Any:
        """Remove and return the head entry (a chunk or a special item), or None when empty."""
        ...

    def __len__(self) -> int:
        """Data items waiting."""
        ...


class BoundedQueue:
    """Both halves of an in-process queue."""

    __slots__ = ("capacity", "_entries", "_size", "_lock", "name")

    def __init__(self, capacity: int, name: str = "") -> None:
        self.capacity = capacity
        self._entries: deque[Any] = deque()
        self._size = 0
        self._lock = threading.Lock()
        self.name = name

    def room(self) -> int:
        """How many data items fit now."""
        return self.capacity - self._size

    def put_chunk(self, chunk: list[Any]) -> None:
        """Append a data chunk; the caller checked `room()`. The queue takes ownership of the list."""
        with self._lock:
            self._entries.append(chunk)
            self._size += len(chunk)

    def put_special(self, item: Any) -> None:
        """Append a special item, regardless of capacity."""
        with self._lock:
            self._entries.append(item)

    def take(self) -> Any:
        """Remove and return the head entry (a chunk or a special item), or None when empty."""
        with self._lock:
            if not self._entries:
                return None
            entry = self._entries.popleft()
            if type(entry) is list:
                self._size -= len(entry)
            return entry

    def peek_is_chunk(self) -> bool:
        entries = self._entries
        return bool(entries) and type(entries[0]) is list

    def is_empty(self) -> bool:
        return not self._entries

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"BoundedQueue({self.name}, {self._size}/{self.capacity}, entries={len(self._entries)})"

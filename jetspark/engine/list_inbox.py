"""The engine's Inbox: a list and a head index, so that filling and draining cost per batch.

The list is never mutated: one chunk may be shared by the inboxes of every consumer of a broadcast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableSequence
from itertools import islice
from typing import Any

from jetspark.core.errors import not_a_bool
from jetspark.core.inbox import Inbox

_EMPTY: list[Any] = []


class ListInbox(Inbox):
    __slots__ = ("_items", "_head")

    def __init__(self) -> None:
        self._items: list[Any] = _EMPTY
        self._head = 0

    # ---- engine side ----------------------------------------------------------------------

    def fill(self, items: list[Any]) -> None:
        """Replace the (empty) content with `items`, which the inbox will not mutate."""
        self._items = items
        self._head = 0

    def clear(self) -> None:
        self._items = _EMPTY
        self._head = 0

    # ---- Inbox ----------------------------------------------------------------------------

    def is_empty(self) -> bool:
        return self._head >= len(self._items)

    def peek(self) -> Any:
        head = self._head
        items = self._items
        return items[head] if head < len(items) else None

    def poll(self) -> Any:
        head = self._head
        items = self._items
        if head < len(items):
            self._head = head + 1
            return items[head]
        return None

    def remove(self) -> None:
        if self._head >= len(self._items):
            raise IndexError("remove() on an empty inbox")
        self._head += 1

    def drain(self, consumer: Callable[[Any], object]) -> int:
        items = self._items
        start = self._head
        end = len(items)
        for index in range(start, end):
            consumer(items[index])
            self._head = index + 1
        return end - start

    def drain_while(self, handler: Callable[..., bool], ordinal: int | None = None) -> bool:
        # The loop every item of an AbstractProcessor goes through: no call but the handler's.
        items = self._items
        end = len(items)
        head = self._head
        index = head  # kept on every way out: the head moves past the items handled
        # A result other than True or False (None from a forgotten return) is caught where the
        # loop stops, so it costs nothing per item: a falsy one would re-offer the item forever.
        try:
            if ordinal is None:
                for index in range(head, end):
                    if not (done := handler(items[index])):
                        if done is False:
                            return False
                        raise not_a_bool(handler, None, done)
            else:
                for index in range(head, end):
                    if not (done := handler(ordinal, items[index])):
                        if done is False:
                            return False
                        raise not_a_bool(handler, None, done)
            index = end
            return True
        finally:
            self._head = index

    def drain_to(self, target: MutableSequence[Any], limit: int | None = None) -> int:
        start = self._head
        end = len(self._items) if limit is None else min(len(self._items), start + max(limit, 0))
        target.extend(self._items[start:end])
        self._head = end
        return end - start

    def size(self) -> int:
        return len(self._items) - self._head

    def __iter__(self) -> Iterator[Any]:
        return islice(self._items, self._head, None)

    def __repr__(self) -> str:
        return f"ListInbox({list(self)!r})"

"""Traverser: a pull-style sequence whose `next()` returns None when no item is available.

Unlike a Python iterator it needs no exception to end, and a traverser over a live source may
return None now and an item later. Items are never None.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Traverser(Generic[T]):
    """Wraps a `next` function; `map`, `filter` and `flat_map` build derived traversers lazily."""

    __slots__ = ("next",)

    def __init__(self, next_fn: Callable[[], T | None]) -> None:
        self.next = next_fn

    def map(self, fn: Callable[[T], R | None]) -> Traverser[R]:
        """Apply `fn` to each item; items it maps to None are skipped."""
        source = self.next

        def next_mapped() -> R | None:
            while True:
                item = source()
                if item is None:
                    return None
                mapped = fn(item)
                if mapped is not None:
                    return mapped

        return Traverser(next_mapped)

    def filter(self, predicate: Callable[[T], bool]) -> Traverser[T]:
        """Keep the items for which `predicate` is true."""
        source = self.next

        def next_filtered() -> T | None:
            while True:
                item = source()
                if item is None or predicate(item):
                    return item

        return Traverser(next_filtered)

    def flat_map(self, fn: Callable[[T], Traverser[R]]) -> Traverser[R]:
        """Replace each item with the items of the traverser `fn` returns for it."""
        source = self.next
        current: list[Traverser[R]] = [empty()]

        def next_flat() -> R | None:
            while True:
                item = current[0].next()
                if item is not None:
                    return item
                outer = source()
                if outer is None:
                    return None
                current[0] = fn(outer)

        return Traverser(next_flat)

    def __iter__(self) -> Iterator[T]:
        """Iterate until the first None."""
        while (item := self.next()) is not None:
            yield item


def _none() -> None:
    return None


def empty() -> Traverser[Any]:
    """A traverser with no items."""
    return Traverser(_none)


def traverse_iterable(items: Iterable[T]) -> Traverser[T]:
    """Traverse the items of an iterable (None items are not allowed)."""
    # A C-level callable: taking an item costs no Python frame.
    return Traverser(functools.partial(next, iter(items), None))


def traverse_items(*items: T) -> Traverser[T]:
    """Traverse the given items."""
    return traverse_iterable(items)


def singleton(item: T) -> Traverser[T]:
    """Traverse a single item."""
    return traverse_iterable((item,))

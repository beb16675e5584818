"""Traverser: a pull-style sequence whose `next()` returns None when no item is available.

Unlike a Python iterator it needs no exception to end, and a traverser over a live source may
return None now and an item later (an `AppendableTraverser` refilled, say): the derived
traversers (`map`, `filter`, `flat_map`, `peek`, ...) then go on too. Items are never None.
"""

from __future__ import annotations

import functools
import operator
from collections import deque
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

    def take_while(self, predicate: Callable[[T], bool]) -> Traverser[T]:
        """The items up to (without) the first for which `predicate` is false; then None for good."""
        source = self.next
        ended = [False]

        def next_taken() -> T | None:
            if ended[0]:
                return None
            item = source()
            if item is None or predicate(item):
                return item
            ended[0] = True
            return None

        return Traverser(next_taken)

    def drop_while(self, predicate: Callable[[T], bool]) -> Traverser[T]:
        """Skip the items while `predicate` is true; from the first false one on, every item."""
        source = self.next
        dropping = [True]

        def next_kept() -> T | None:
            if not dropping[0]:
                return source()
            while (item := source()) is not None:
                if not predicate(item):
                    dropping[0] = False
                    return item
            return None

        return Traverser(next_kept)

    def append(self, item: T) -> Traverser[T]:
        """These items, and `item` once where this traverser first returns None (its later
        items follow, if it has any)."""
        source = self.next
        pending = [item]

        def next_appended() -> T | None:
            taken = source()
            if taken is None and pending:
                return pending.pop()
            return taken

        return Traverser(next_appended)

    def prepend(self, item: T) -> Traverser[T]:
        """`item` first, then these items."""
        source = self.next
        pending = [item]

        def next_prepended() -> T | None:
            return pending.pop() if pending else source()

        return Traverser(next_prepended)

    def peek(self, action: Callable[[T], object]) -> Traverser[T]:
        """The same items; `action(item)` is called with each as it is taken."""
        source = self.next

        def next_peeked() -> T | None:
            item = source()
            if item is not None:
                action(item)
            return item

        return Traverser(next_peeked)

    def on_first_null(self, action: Callable[[], object]) -> Traverser[T]:
        """The same items; `action()` is called once, the first time this traverser returns None."""
        source = self.next
        called = [False]

        def next_watched() -> T | None:
            item = source()
            if item is None and not called[0]:
                called[0] = True
                action()
            return item

        return Traverser(next_watched)

    def __iter__(self) -> Iterator[T]:
        """Iterate until the first None."""
        while (item := self.next()) is not None:
            yield item


def _none() -> None:
    return None


def empty() -> Traverser[Any]:
    """A traverser with no items."""
    return Traverser(_none)


_is_an_item = functools.partial(operator.is_not, None)


def traverse_iterable(items: Iterable[T]) -> Traverser[T]:
    """Traverse the items of an iterable (an iterator, a generator, a list, ...); None items are
    skipped, so that they cannot end the traversal early (Jet's `traverseIterable` fails on one)."""
    # C-level callables only: taking an item (and skipping a None) costs no Python frame.
    return Traverser(functools.partial(next, filter(_is_an_item, items), None))


def traverse_items(*items: T) -> Traverser[T]:
    """Traverse the given items; None items are skipped (as Jet's `traverseItems`)."""
    return traverse_iterable(items)


def lazy(supplier: Callable[[], Traverser[T]]) -> Traverser[T]:
    """A traverser that calls `supplier()` for the real one only when first asked for an item."""
    real: list[Callable[[], T | None]] = []

    def next_lazily() -> T | None:
        if not real:
            real.append(supplier().next)
        return real[0]()

    return Traverser(next_lazily)


class AppendableTraverser(Traverser[T]):
    """A traverser over a queue that the owner appends to; `next()` returns None while it is
    empty and the next appended item afterwards. Handy as the result of a flat-map function
    reused for every item (empty it before appending again)."""

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: deque[T] = deque()
        super().__init__(self._take)

    def _take(self) -> T | None:
        queue = self._queue
        return queue.popleft() if queue else None

    def append(self, item: T) -> AppendableTraverser[T]:
        """Add `item` at the end (in place, unlike `Traverser.append`)."""
        if item is None:
            raise ValueError("an AppendableTraverser cannot hold None")
        self._queue.append(item)
        return self

    def is_empty(self) -> bool:
        return not self._queue


class ResettableSingletonTraverser(Traverser[T]):
    """Holds at most one item: `accept(item)` sets it, `next()` returns it once, then None."""

    __slots__ = ("_item",)

    def __init__(self) -> None:
        self._item: T | None = None
        super().__init__(self._take)

    def _take(self) -> T | None:
        item, self._item = self._item, None
        return item

    def accept(self, item: T) -> None:
        """Set the item; the previous one must have been taken (else it would be lost)."""
        if self._item is not None:
            raise ValueError(f"accept({item!r}) while the previous item {self._item!r} was not taken yet")
        self._item = item


def singleton(item: T) -> Traverser[T]:
    """Traverse a single item."""
    return traverse_iterable((item,))

"""The Inbox: the batch of items a processor receives from one inbound edge."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, MutableSequence
from typing import Any

from jetspark.core.errors import not_a_bool


class Inbox(abc.ABC):
    """A queue of items handed to `Processor.process` (or `restore_from_snapshot`).

    The processor removes each item once it is done with it. Items left in the inbox when the call
    returns are handed to the next call again; nothing is added to a non-empty inbox. Iteration
    looks at the items without removing them.
    """

    @abc.abstractmethod
    def is_empty(self) -> bool:
        """True when no items are left."""

    @abc.abstractmethod
    def peek(self) -> Any:
        """The head item without removing it, or None when the inbox is empty."""

    @abc.abstractmethod
    def poll(self) -> Any:
        """Remove and return the head item, or None when the inbox is empty."""

    @abc.abstractmethod
    def remove(self) -> None:
        """Remove the head item; raises IndexError when the inbox is empty."""

    @abc.abstractmethod
    def drain(self, consumer: Callable[[Any], object]) -> int:
        """Pass every item to `consumer`, removing each; returns how many were drained."""

    @abc.abstractmethod
    def drain_to(self, target: MutableSequence[Any], limit: int | None = None) -> int:
        """Move up to `limit` items (all when None) to the end of `target`; returns the count."""

    def drain_while(self, handler: Callable[..., bool], ordinal: int | None = None) -> bool:
        """Pass head items to `handler`, removing each one it returns True for.

        `handler(item)`, or `handler(ordinal, item)` when `ordinal` is given. Stops at the first
        False (that item stays at the head) and returns False; True once the inbox is empty. A
        falsy result other than False (None from a forgotten `return`) raises
        `ProcessorContractError` naming the handler, instead of offering the item again forever.
        `AbstractProcessor.process` uses it, so an inbox that walks its items without a
        `peek`/`remove` call per item makes every user processor faster.
        """
        while (item := self.peek()) is not None:
            if not (done := handler(item) if ordinal is None else handler(ordinal, item)):
                if done is False:
                    return False
                raise not_a_bool(handler, None, done)
            self.remove()
        return True

    @abc.abstractmethod
    def size(self) -> int:
        """Number of items left."""

    @abc.abstractmethod
    def __iter__(self) -> Iterator[Any]:
        """Iterate over the items left, head first, without removing them."""

    def __len__(self) -> int:
        return self.size()

    def __bool__(self) -> bool:
        return not self.is_empty()

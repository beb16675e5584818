"""ListInbox: the engine's inbox over a list it never mutates, read through a head index."""

from __future__ import annotations

from typing import Any

import pytest

from jetspark.engine.list_inbox import ListInbox


def filled(items: list[Any]) -> ListInbox:
    inbox = ListInbox()
    inbox.fill(items)
    return inbox


def test_a_new_inbox_is_empty() -> None:
    inbox = ListInbox()
    assert inbox.is_empty() and inbox.size() == 0 and len(inbox) == 0 and not inbox
    assert inbox.peek() is None
    assert inbox.poll() is None
    assert list(inbox) == []


def test_peek_does_not_remove_and_poll_does() -> None:
    inbox = filled(["a", "b"])
    assert inbox.peek() == "a" and inbox.peek() == "a" and inbox.size() == 2
    assert inbox.poll() == "a"
    assert inbox.peek() == "b" and inbox.size() == 1 and bool(inbox)
    assert inbox.poll() == "b"
    assert inbox.poll() is None and inbox.is_empty()


def test_remove_drops_the_head_and_fails_when_empty() -> None:
    inbox = filled([1, 2])
    inbox.remove()
    assert list(inbox) == [2]
    inbox.remove()
    with pytest.raises(IndexError, match="empty inbox"):
        inbox.remove()


def test_falsy_items_are_items() -> None:
    # Only None means "no item": 0, "" and False are delivered like anything else.
    inbox = filled([0, "", False])
    assert [inbox.poll(), inbox.poll(), inbox.poll()] == [0, "", False]
    assert inbox.is_empty()


def test_drain_passes_every_item_in_order_and_empties() -> None:
    inbox = filled([1, 2, 3])
    inbox.poll()
    seen: list[int] = []
    assert inbox.drain(seen.append) == 2
    assert seen == [2, 3] and inbox.is_empty()
    assert inbox.drain(seen.append) == 0


def test_drain_keeps_the_item_whose_consumer_raised() -> None:
    inbox = filled([1, 2, 3])

    def consumer(item: int) -> None:
        if item == 2:
            raise ValueError("boom")

    with pytest.raises(ValueError):
        inbox.drain(consumer)
    assert list(inbox) == [2, 3]  # 1 was done; 2 was not, so it stays


def test_drain_to_appends_up_to_the_limit() -> None:
    inbox = filled(list(range(5)))
    target = ["x"]
    assert inbox.drain_to(target, 2) == 2
    assert target == ["x", 0, 1] and inbox.size() == 3
    assert inbox.drain_to(target, 10) == 3
    assert target == ["x", 0, 1, 2, 3, 4] and inbox.is_empty()
    assert inbox.drain_to(target) == 0


def test_drain_to_without_limit_takes_all() -> None:
    inbox = filled(list(range(4)))
    target: list[int] = []
    assert inbox.drain_to(target) == 4 and target == [0, 1, 2, 3]


def test_drain_to_with_limit_zero_takes_nothing() -> None:
    inbox = filled([1])
    target: list[int] = []
    assert inbox.drain_to(target, 0) == 0 and target == [] and inbox.size() == 1


def test_iteration_shows_the_remaining_items_without_removing() -> None:
    inbox = filled([1, 2, 3])
    inbox.poll()
    assert list(inbox) == [2, 3]
    assert list(inbox) == [2, 3]
    assert inbox.size() == 2


def test_the_filled_list_is_never_mutated() -> None:
    # One chunk may be shared by the inboxes of every consumer of a broadcast edge.
    chunk = [1, 2, 3]
    one, two = filled(chunk), filled(chunk)
    one.poll()
    one.drain_to([])
    two.remove()
    two.drain(lambda _item: None)
    assert chunk == [1, 2, 3]


def test_clear_and_refill() -> None:
    inbox = filled([1, 2])
    inbox.clear()
    assert inbox.is_empty()
    inbox.fill([3])
    assert inbox.poll() == 3


def test_repr_lists_the_remaining_items() -> None:
    inbox = filled([1, 2])
    inbox.poll()
    assert repr(inbox) == "ListInbox([2])"


def test_a_negative_drain_limit_never_brings_removed_items_back() -> None:
    inbox = filled([1, 2, 3])
    inbox.poll()
    inbox.poll()
    target: list[int] = []
    assert inbox.drain_to(target, -2) == 0  # a negative limit drains nothing
    assert target == []
    assert list(inbox) == [3] and inbox.size() == 1

"""Jet's `TraverserTest`, `TraversersTest`, `AppendableTraverserTest` and
`ResettableSingletonTraverserTest` (hazelcast-jet-core), ported.

Jet's `Traverser` default methods are jetspark's `Traverser` methods (`takeWhile` is `take_while`,
`onFirstNull` is `on_first_null`, ...), `Traversers.lazy` is `lazy_traverser`. Each test is named
after the Jet case it ports.

Added to jetspark for this port (Jet has them, jetspark did not): `Traverser.take_while`,
`drop_while`, `append`, `prepend`, `peek`, `on_first_null`, `lazy_traverser`,
`AppendableTraverser`, `ResettableSingletonTraverser`.

Differences:
- Jet has a factory per Java source kind (`traverseIterator`, `traverseSpliterator`,
  `traverseEnumeration`, `traverseStream`, `traverseArray`); Python has one iteration protocol,
  so each is `traverse_iterable` over the Python counterpart (an iterator, a `map` object, a
  callable-sentinel iterator, a generator, a tuple).
- A None among the items: Jet's `traverseItems`, `traverseArray` and `traverseIterator(it, true)`
  skip it, its other factories throw. jetspark's `traverse_iterable` skips it always (fixed: it
  used to end the traversal there, silently dropping every later item); raising would cost a
  Python call per item, where skipping is done in C. The four `...WithNull_then_failure` cases
  check the skip.
- `ResettableSingletonTraverserTest.when_itemNotConsumed_thenAcceptFails`: Jet's is an
  assertion; jetspark raises `ValueError` always.
"""

from __future__ import annotations

from typing import Any

import pytest

from jetspark import (
    AppendableTraverser,
    ResettableSingletonTraverser,
    Traverser,
    empty_traverser,
    lazy_traverser,
    traverse_items,
    traverse_iterable,
)

root: AppendableTraverser[int] = AppendableTraverser()


def reset_root() -> AppendableTraverser[int]:
    """Jet's resetRootTraverser: drain the shared root, then give it 0, 1, 2."""
    while root.next() is not None:
        pass
    for item in (0, 1, 2):
        root.append(item)
    return root


def drain(t: Traverser[Any]) -> list[Any]:
    out = []
    while (item := t.next()) is not None:
        out.append(item)
    return out


def check(t: Traverser[Any], expected: list[Any], expected_after_add: list[Any] | None) -> None:
    """Jet's check: the items, then None for good; after 3 is appended to the root, the rest."""
    assert drain(t) == expected
    assert t.next() is None and t.next() is None
    if expected_after_add is not None:
        root.append(3)
        assert drain(t) == expected_after_add
        assert t.next() is None and t.next() is None


# ---- TraverserTest ----------------------------------------------------------------------------


def test_TraverserTest__smokeTest_map() -> None:
    check(reset_root().map(lambda i: i), [0, 1, 2], [3])
    check(reset_root().map(lambda i: i + 1), [1, 2, 3], [4])
    check(reset_root().map(lambda i: None if i % 2 else i), [0, 2], [])
    check(reset_root().map(lambda i: None), [], [])
    check(reset_root().map(lambda i: None if i == 0 else i), [1, 2], [3])
    check(reset_root().map(lambda i: None if i != 0 else i), [0], [])


def test_TraverserTest__smokeTest_filter() -> None:
    check(reset_root().filter(lambda i: True), [0, 1, 2], [3])
    check(reset_root().filter(lambda i: False), [], [])
    check(reset_root().filter(lambda i: i != 1), [0, 2], [3])
    check(reset_root().filter(lambda i: i == 1), [1], [])
    check(reset_root().filter(lambda i: i != 0), [1, 2], [3])
    check(reset_root().filter(lambda i: i != 2), [0, 1], [3])
    check(reset_root().filter(lambda i: i != 3), [0, 1, 2], [])


def test_TraverserTest__smokeTest_takeWhile() -> None:
    check(reset_root().take_while(lambda i: False), [], [])
    check(reset_root().take_while(lambda i: True), [0, 1, 2], [3])
    check(reset_root().take_while(lambda i: i < 3), [0, 1, 2], [])
    check(reset_root().take_while(lambda i: i < 2), [0, 1], [])
    check(reset_root().take_while(lambda i: i < 1), [0], [])
    check(reset_root().take_while(lambda i: i < 0), [], [])


def test_TraverserTest__smokeTest_dropWhile() -> None:
    check(reset_root().drop_while(lambda i: True), [], [])
    check(reset_root().drop_while(lambda i: False), [0, 1, 2], [3])
    check(reset_root().drop_while(lambda i: i < 3), [], [3])
    check(reset_root().drop_while(lambda i: i < 2), [2], [3])
    check(reset_root().drop_while(lambda i: i < 1), [1, 2], [3])
    check(reset_root().drop_while(lambda i: i < 0), [0, 1, 2], [3])


def test_TraverserTest__smokeTest_append() -> None:
    check(traverse_items(0, 1, 2).append(5), [0, 1, 2, 5], None)
    check(traverse_items(0, 1, 2).append(5).append(6), [0, 1, 2, 5, 6], None)
    check(empty_traverser().append(0), [0], None)


def test_TraverserTest__smokeTest_prepend() -> None:
    check(reset_root().prepend(5), [5, 0, 1, 2], [3])
    check(reset_root().prepend(5).prepend(6), [6, 5, 0, 1, 2], [3])
    check(empty_traverser().prepend(0), [0], None)


def test_TraverserTest__smokeTest_flatMap() -> None:
    check(reset_root().flat_map(lambda i: traverse_items(0, 1, 2)), [0, 1, 2] * 3, [0, 1, 2])
    check(reset_root().flat_map(lambda i: empty_traverser()), [], [])
    # 0 -> {}, 1 -> {0}, 2 -> {0, 1}
    check(
        reset_root().flat_map(lambda i: traverse_items(0, 1, 2).take_while(lambda j: j < i)),
        [0, 0, 1],
        [0, 1, 2],
    )


def test_TraverserTest__flatMap_continueAfterNull() -> None:
    source: AppendableTraverser[int] = AppendableTraverser()
    source.append(0)
    mapped = source.flat_map(traverse_items)
    assert mapped.next() == 0
    assert mapped.next() is None
    source.append(1)  # the source had returned None; what comes later is flat-mapped too
    assert mapped.next() == 1


def test_TraverserTest__when_flatMapAdded_then_upstreamItemNotTaken() -> None:
    def must_not_be_called() -> Any:
        raise AssertionError("item must not be taken")

    flat = Traverser(must_not_be_called).flat_map(lambda t: empty_traverser())  # takes nothing yet
    with pytest.raises(AssertionError, match="item must not be taken"):
        flat.next()


def test_TraverserTest__smokeTest_peek() -> None:
    peeked: list[int] = []
    check(reset_root().peek(peeked.append), [0, 1, 2], [3])
    assert peeked == [0, 1, 2, 3]
    peeked.clear()
    check(reset_root().peek(peeked.append).append(4), [0, 1, 2, 4], [3])  # not the appended item
    assert peeked == [0, 1, 2, 3]
    peeked.clear()
    check(reset_root().peek(peeked.append).prepend(4), [4, 0, 1, 2], [3])  # nor the prepended one
    assert peeked == [0, 1, 2, 3]
    peeked.clear()
    check(reset_root().peek(peeked.append).filter(lambda i: i == 0), [0], [])  # but filtered-out ones
    assert peeked == [0, 1, 2, 3]


def test_TraverserTest__smokeTest_onFirstNull() -> None:
    calls: list[str] = []
    t = reset_root().on_first_null(lambda: calls.append("called"))
    assert [t.next(), t.next(), t.next()] == [0, 1, 2]
    assert calls == []
    assert t.next() is None
    assert calls == ["called"]
    assert t.next() is None
    assert calls == ["called"]  # once only
    root.append(3)
    assert t.next() == 3
    assert t.next() is None
    assert calls == ["called"]


def test_TraverserTest__when_allFilteredOut_then_onFirstNullCalledImmediately() -> None:
    calls: list[str] = []
    t = reset_root().filter(lambda i: False).on_first_null(lambda: calls.append("called"))
    assert calls == []
    assert t.next() is None
    assert calls == ["called"]


def test_TraverserTest__when_allFilteredOutUsingMap_then_onFirstNullCalledImmediately() -> None:
    calls: list[str] = []
    t = reset_root().map(lambda i: None).on_first_null(lambda: calls.append("called"))
    assert calls == []
    assert t.next() is None
    assert calls == ["called"]


# ---- TraversersTest ---------------------------------------------------------------------------


def validate(t: Traverser[Any]) -> None:
    assert [t.next(), t.next(), t.next()] == [1, 2, None]


def test_TraversersTest__when_traverserOverArgs_then_seeAllItems() -> None:
    validate(traverse_items(1, 2))


def test_TraversersTest__when_traverseIterator_then_seeAllItems() -> None:
    validate(traverse_iterable(iter([1, 2])))


def test_TraversersTest__when_traverseSpliterator_then_seeAllItems() -> None:
    validate(traverse_iterable(map(int, "12")))


def test_TraversersTest__when_traverseEnumeration_then_seeAllItems() -> None:
    items = iter([1, 2, 0])
    validate(traverse_iterable(iter(items.__next__, 0)))


def test_TraversersTest__when_traverseStream_then_seeAllItems() -> None:
    validate(traverse_iterable(x for x in (1, 2)))


def test_TraversersTest__when_traverseIterable_then_seeAllItems() -> None:
    validate(traverse_iterable([1, 2]))


def test_TraversersTest__when_traverseArray_then_seeAllItems() -> None:
    validate(traverse_iterable((1, 2)))


def test_TraversersTest__when_traverserOverArgsWithNull_then_skipNulls() -> None:
    validate(traverse_items(1, None, 2))


def test_TraversersTest__when_traverseArrayWithNull_then_skipNulls() -> None:
    validate(traverse_iterable((1, None, 2)))


def test_TraversersTest__when_traverseIteratorWithNull_then_failure() -> None:
    validate(traverse_iterable(iter([1, None, 2])))  # jetspark skips (see the module docstring)


def test_TraversersTest__when_traverseIteratorIgnoringNulls_then_filteredOut() -> None:
    validate(traverse_iterable(iter([None, 1, None, 2, None])))


def test_TraversersTest__when_traverseSpliteratorWithNull_then_failure() -> None:
    validate(traverse_iterable(map(lambda x: x, [1, None, 2])))  # skipped, as above


def test_TraversersTest__when_traverseEnumerationWithNull_then_failure() -> None:
    items = iter([1, None, 2, 0])
    validate(traverse_iterable(iter(items.__next__, 0)))  # skipped, as above


def test_TraversersTest__when_traverseIterableWithNull_then_failure() -> None:
    validate(traverse_iterable([1, None, 2]))  # skipped, as above


def test_TraversersTest__when_traverseStreamConsumed_then_streamClosed() -> None:
    closed: list[bool] = []

    def stream() -> Any:
        try:
            yield 1
        finally:
            closed.append(True)

    t = traverse_iterable(stream())
    t.next()
    assert closed == []
    t.next()
    assert closed == [True]


def test_TraversersTest__when_lazyLeftAlone_then_supplierNotCalled() -> None:
    def supplier() -> Traverser[Any]:
        raise AssertionError("the supplier must not be called")

    lazy_traverser(supplier)


def test_TraversersTest__lazyTraversalTransparent() -> None:
    validate(lazy_traverser(lambda: traverse_iterable(x for x in (1, 2))))


def test_TraversersTest__peek() -> None:
    peeked: list[int] = []
    t = traverse_items(1, 2, 3).peek(peeked.append)
    assert [t.next(), t.next(), t.next(), t.next()] == [1, 2, 3, None]
    assert peeked == [1, 2, 3]


# ---- AppendableTraverserTest ------------------------------------------------------------------


def test_AppendableTraverserTest__smokeTest() -> None:
    t: AppendableTraverser[str] = AppendableTraverser()
    assert t.is_empty()
    t.append("1")
    assert not t.is_empty()
    assert t.next() == "1"
    assert t.is_empty()
    assert t.next() is None
    t.append("2")
    t.append("3")
    assert [t.next(), t.next(), t.next()] == ["2", "3", None]


def test_AppendableTraverserTest__test_flatMapperUsage() -> None:
    t: AppendableTraverser[int] = AppendableTraverser()

    def refill(item: int) -> AppendableTraverser[int]:
        assert t.is_empty()
        t.append(item)
        t.append(item + 1)
        return t

    flat = traverse_items(10, 20).flat_map(refill)
    assert [flat.next() for _ in range(5)] == [10, 11, 20, 21, None]


# ---- ResettableSingletonTraverserTest ---------------------------------------------------------


def test_ResettableSingletonTraverserTest__when_acceptNotCalled_thenNextReturnsNull() -> None:
    assert ResettableSingletonTraverser().next() is None


def test_ResettableSingletonTraverserTest__when_acceptItem_thenNextReturnsIt() -> None:
    t: ResettableSingletonTraverser[int] = ResettableSingletonTraverser()
    t.accept(1)
    assert t.next() == 1


def test_ResettableSingletonTraverserTest__when_itemConsumed_thenNextReturnsNull() -> None:
    t: ResettableSingletonTraverser[int] = ResettableSingletonTraverser()
    t.accept(1)
    t.next()
    assert t.next() is None


def test_ResettableSingletonTraverserTest__when_itemNotConsumed_thenAcceptFails() -> None:
    t: ResettableSingletonTraverser[int] = ResettableSingletonTraverser()
    t.accept(1)
    with pytest.raises(ValueError, match="previous item 1 was not taken"):
        t.accept(2)


# ---- FlatMappingTraverserTest (impl.util): Jet's FlatMappingTraverser is Traverser.flat_map ----


def test_FlatMappingTraverserTest__smokeTest() -> None:
    t = traverse_items(0, 1, 2, 3).flat_map(lambda n: traverse_iterable(range(n)))
    assert [t.next() for _ in range(8)] == [0, 0, 1, 0, 1, 2, None, None]


def test_FlatMappingTraverserTest__when_flatMapToNullTraverser_then_skipOverToNext() -> None:
    t = traverse_items(1, 2, 3).flat_map(lambda i: empty_traverser() if i != 3 else traverse_items("a"))
    assert [t.next(), t.next(), t.next()] == ["a", None, None]

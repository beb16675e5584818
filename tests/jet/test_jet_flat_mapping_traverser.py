"""Jet's `FlatMappingTraverserTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.util`), ported.

Jet's `new FlatMappingTraverser<>(source, fn)` is jetspark's `source.flat_map(fn)` (Jet's
`Traverser.flatMap` builds the same class); `traverseStream(IntStream.range(0, n))` is
`traverse_iterable(range(n))`. Each test is named after the Jet case it ports.
"""

from __future__ import annotations

from jetspark import empty_traverser, singleton_traverser, traverse_items, traverse_iterable


def test_FlatMappingTraverserTest__smokeTest() -> None:
    trav = traverse_items(0, 1, 2, 3).flat_map(lambda num_items: traverse_iterable(range(num_items)))
    assert [trav.next() for _ in range(6)] == [0, 0, 1, 0, 1, 2]
    assert trav.next() is None
    assert trav.next() is None


def test_FlatMappingTraverserTest__when_flatMapToNullTraverser_then_skipOverToNext() -> None:
    """Jet: fails if the traverser's internal "no current traverser" were the very instance
    `Traversers.empty()` returns; here the same shape: items mapped to `empty_traverser()` are
    skipped over, not taken for the end."""
    trav = traverse_items(1, 2, 3).flat_map(
        lambda item: empty_traverser() if item != 3 else singleton_traverser("a")
    )
    assert trav.next() == "a"
    assert trav.next() is None
    assert trav.next() is None

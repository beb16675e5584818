"""jetspark.core.traverser: factories and the lazy map / filter / flat_map combinators."""

from collections.abc import Iterator
from typing import TypeVar

from jetspark.core import Traverser, empty_traverser, singleton_traverser, traverse_items, traverse_iterable

T = TypeVar("T")


def drain(traverser: Traverser[T]) -> list[T]:
    return list(traverser)


def live(*batches: list[int]) -> Traverser[int]:
    """A traverser over a live source: yields each batch, then None once, then the next batch."""
    script: list[int | None] = []
    for batch in batches:
        script.extend(batch)
        script.append(None)
    return Traverser(lambda: script.pop(0) if script else None)


# ---- factories -----------------------------------------------------------------------------


def test_empty() -> None:
    traverser = empty_traverser()
    assert traverser.next() is None
    assert traverser.next() is None
    assert drain(traverser) == []


def test_singleton() -> None:
    traverser = singleton_traverser("x")
    assert traverser.next() == "x"
    assert traverser.next() is None
    assert traverser.next() is None


def test_traverse_items() -> None:
    assert drain(traverse_items(1, 2, 3)) == [1, 2, 3]
    assert drain(traverse_items()) == []


def test_traverse_iterable_is_lazy_and_single_pass() -> None:
    pulled: list[int] = []

    def numbers() -> Iterator[int]:
        for n in range(3):
            pulled.append(n)
            yield n

    traverser = traverse_iterable(numbers())
    assert pulled == []
    assert traverser.next() == 0
    assert pulled == [0]
    assert drain(traverser) == [1, 2]
    assert traverser.next() is None


def test_falsy_items_are_items() -> None:
    assert drain(traverse_items(0, "", False, ())) == [0, "", False, ()]


def test_iteration_stops_at_the_first_none() -> None:
    traverser = live([1, 2], [3])
    assert drain(traverser) == [1, 2]
    assert drain(traverser) == [3]
    assert drain(traverser) == []


# ---- map -----------------------------------------------------------------------------------


def test_map() -> None:
    assert drain(traverse_items(1, 2, 3).map(lambda n: n * 10)) == [10, 20, 30]


def test_map_skips_items_mapped_to_none() -> None:
    assert drain(traverse_items(1, 2, 3, 4).map(lambda n: n if n % 2 else None)) == [1, 3]


def test_map_is_lazy() -> None:
    seen: list[int] = []

    def record(n: int) -> int:
        seen.append(n)
        return n

    mapped = traverse_items(1, 2, 3).map(record)
    assert seen == []
    assert mapped.next() == 1
    assert seen == [1]


def test_map_over_a_live_source_resumes() -> None:
    mapped = live([1], [2, 3]).map(lambda n: -n)
    assert mapped.next() == -1
    assert mapped.next() is None
    assert drain(mapped) == [-2, -3]


# ---- filter --------------------------------------------------------------------------------


def test_filter() -> None:
    assert drain(traverse_items(*range(10)).filter(lambda n: n % 3 == 0)) == [0, 3, 6, 9]


def test_filter_rejecting_everything() -> None:
    assert drain(traverse_items(1, 2).filter(lambda n: False)) == []


def test_filter_over_a_live_source_resumes() -> None:
    filtered = live([1, 2], [3, 4]).filter(lambda n: n % 2 == 0)
    assert filtered.next() == 2
    assert filtered.next() is None
    assert drain(filtered) == [4]


# ---- flat_map ------------------------------------------------------------------------------


def test_flat_map() -> None:
    expanded = traverse_items(1, 2, 3).flat_map(lambda n: traverse_items(*[n] * n))
    assert drain(expanded) == [1, 2, 2, 3, 3, 3]


def test_flat_map_skips_empty_inner_traversers() -> None:
    def inner(n: int) -> Traverser[int]:
        return traverse_items(n) if n > 2 else empty_traverser()

    assert drain(traverse_items(1, 2, 3, 4).flat_map(inner)) == [3, 4]


def test_flat_map_pulls_the_outer_item_only_when_the_inner_one_is_done() -> None:
    pulled: list[int] = []

    def outer() -> Iterator[int]:
        for n in (1, 2):
            pulled.append(n)
            yield n

    expanded = traverse_iterable(outer()).flat_map(lambda n: traverse_items(n, n))
    assert expanded.next() == 1
    assert expanded.next() == 1
    assert pulled == [1]
    assert expanded.next() == 2
    assert pulled == [1, 2]


def test_flat_map_over_a_live_source_resumes() -> None:
    expanded = live([1], [2]).flat_map(lambda n: traverse_items(n, n + 10))
    assert drain(expanded) == [1, 11]
    assert drain(expanded) == [2, 12]
    assert expanded.next() is None


def test_combinators_compose() -> None:
    result = (
        traverse_items("a b", "", "c")
        .flat_map(lambda line: traverse_iterable(line.split()))
        .filter(lambda word: word != "b")
        .map(str.upper)
    )
    assert drain(result) == ["A", "C"]

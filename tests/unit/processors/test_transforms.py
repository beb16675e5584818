"""map, filter, flat_map and fused, run on the local runner with and without back-pressure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, ProcessorSupplier, traverse_items

ITEMS = list(range(60))


def run_transform(
    setting: Any, transform: ProcessorSupplier, items: Iterable[Any] = ITEMS, lp: int = -1
) -> list[Any]:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items), lp)
    step = dag.new_vertex("step", transform, lp)
    sink = dag.new_vertex("sink", P.collect(), lp)
    dag.edge(setting.edge(source, step))
    dag.edge(setting.edge(step, sink))
    return setting.run(dag).result("sink")  # type: ignore[no-any-return]


def by_repr(items: Iterable[Any]) -> list[Any]:
    return sorted(items, key=repr)


# ---- map -------------------------------------------------------------------------------------


def test_map_keeps_order_on_one_processor(single: Any) -> None:
    assert run_transform(single, P.map(lambda x: x * 10)) == [x * 10 for x in ITEMS]


def test_map_to_none_drops_the_item(single: Any) -> None:
    result = run_transform(single, P.map(lambda x: None if x % 3 == 0 else -x))
    assert result == [-x for x in ITEMS if x % 3]


@pytest.mark.parametrize("lp", [1, 2])
def test_map_on_several_members_emits_each_output_once(setting: Any, lp: int) -> None:
    assert by_repr(run_transform(setting, P.map(lambda x: (x, x * x)), lp=lp)) == by_repr(
        (x, x * x) for x in ITEMS
    )


def test_map_calls_fn_once_per_item_even_when_offers_are_rejected(single: Any) -> None:
    calls: list[int] = []

    def fn(x: int) -> int:
        calls.append(x)
        return x + 1

    assert run_transform(single, P.map(fn)) == [x + 1 for x in ITEMS]
    assert calls == ITEMS


def test_map_rejects_a_non_callable() -> None:
    with pytest.raises(TypeError, match="map: expected a callable"):
        P.map(42)  # type: ignore[arg-type]


# ---- filter ----------------------------------------------------------------------------------


def test_filter_keeps_matching_items_in_order(single: Any) -> None:
    assert run_transform(single, P.filter(lambda x: x % 4 == 1)) == [x for x in ITEMS if x % 4 == 1]


def test_filter_on_several_members(setting: Any) -> None:
    assert sorted(run_transform(setting, P.filter(lambda x: x % 2), lp=2)) == [x for x in ITEMS if x % 2]


def test_filter_calls_the_predicate_once_per_item(single: Any) -> None:
    calls: list[int] = []

    def keep(x: int) -> bool:
        calls.append(x)
        return True

    assert run_transform(single, P.filter(keep)) == ITEMS
    assert calls == ITEMS


# ---- flat_map --------------------------------------------------------------------------------


def expand(x: int) -> list[Any]:
    """0 to 3 outputs per item, with a None among them that must be skipped."""
    return [(x, i) if i != 1 else None for i in range(x % 4)]


def test_flat_map_emits_all_outputs_in_order(single: Any) -> None:
    expected = [out for x in ITEMS for out in expand(x) if out is not None]
    assert run_transform(single, P.flat_map(expand)) == expected


def test_flat_map_accepts_generators_and_traversers(single: Any) -> None:
    def with_generator(x: int) -> Iterable[int]:
        yield from range(x % 3)

    assert run_transform(single, P.flat_map(with_generator)) == [i for x in ITEMS for i in range(x % 3)]
    assert run_transform(single, P.flat_map(lambda x: traverse_items(x, -x))) == [
        y for x in ITEMS for y in (x, -x)
    ]


def test_flat_map_calls_fn_once_per_item_under_back_pressure(single: Any) -> None:
    calls: list[int] = []

    def fn(x: int) -> list[int]:
        calls.append(x)
        return [x] * 5

    assert run_transform(single, P.flat_map(fn)) == [x for x in ITEMS for _ in range(5)]
    assert calls == ITEMS


def test_flat_map_on_several_members(setting: Any) -> None:
    expected = [out for x in ITEMS for out in expand(x) if out is not None]
    assert by_repr(run_transform(setting, P.flat_map(expand), lp=2)) == by_repr(expected)


# ---- fused -----------------------------------------------------------------------------------


CHAINS: dict[str, list[Any]] = {
    "map-filter": [("map", lambda x: x * 2), ("filter", lambda x: x % 3 != 0)],
    "map-none": [("map", lambda x: x if x % 5 else None), ("map", str)],
    "filter-only": [("filter", lambda x: x > 40)],
    "flat-map-only": [("flat_map", expand)],
    "flat-map-in-the-middle": [
        ("filter", lambda x: x % 2 == 0),
        ("flat_map", lambda x: range(x % 5)),
        ("map", lambda i: i * 100 if i else None),
    ],
    "two-flat-maps": [
        ("flat_map", lambda x: [x, x + 1000]),
        ("filter", lambda x: x % 3 != 1),
        ("flat_map", lambda x: [x, None, -x]),
        ("map", abs),
    ],
}


@pytest.mark.parametrize("name", list(CHAINS))
def test_fused_equals_the_chain_of_steps(single: Any, reference: Any, name: str) -> None:
    steps = CHAINS[name]
    assert run_transform(single, P.fused(steps)) == reference(steps, ITEMS)


@pytest.mark.parametrize("name", ["map-filter", "two-flat-maps"])
def test_fused_on_several_members(setting: Any, reference: Any, name: str) -> None:
    steps = CHAINS[name]
    assert by_repr(run_transform(setting, P.fused(steps), lp=2)) == by_repr(reference(steps, ITEMS))


def test_chain_builder_equals_the_list_of_steps(single: Any, reference: Any) -> None:
    chain = P.Chain().map(lambda x: x + 1).filter(lambda x: x % 2).flat_map(lambda x: [x, x])
    assert len(chain) == 3
    assert [kind for kind, _ in chain] == ["map", "filter", "flat_map"]
    assert run_transform(single, P.fused(chain)) == reference(list(chain), ITEMS)


def test_chain_is_immutable() -> None:
    base = P.Chain().map(str)
    longer = base.filter(bool)
    assert len(base) == 1
    assert len(longer) == 2


def test_fused_calls_each_step_once_per_item(single: Any) -> None:
    calls: list[tuple[str, int]] = []

    def double(x: int) -> int:
        calls.append(("map", x))
        return x * 2

    def odd_tens(x: int) -> bool:
        calls.append(("filter", x))
        return x % 20 == 0

    result = run_transform(single, P.fused([("map", double), ("filter", odd_tens)]))
    assert result == [x * 2 for x in ITEMS if x * 2 % 20 == 0]
    assert calls == [call for x in ITEMS for call in (("map", x), ("filter", x * 2))]


@pytest.mark.parametrize(
    ("steps", "error", "message"),
    [
        ([], ValueError, "no steps"),
        ([("reduce", len)], ValueError, "step 0 has kind 'reduce'"),
        ([("map", len), ("filter", 3)], TypeError, "step 1 .filter. needs a callable"),
        ([("map",)], ValueError, "step 0 must be a .kind, fn. tuple"),
    ],
)
def test_fused_rejects_malformed_steps(steps: list[Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        P.fused(steps)

"""Jet's `AggregateOperationsTest` (hazelcast-jet-core, `com.hazelcast.jet.aggregate`), ported:
the cases of the operations jetspark has (`counting`, `summing`, `averaging`, `to_list`,
`top_n`).

Jet's `validateOp` / `validateOpWithoutDeduct` are `validate_op` / `validate_op_without_deduct`
below, step by step: accumulate one item (or list) into each of two accumulators, check the first,
export it and pickle the export (Jet serializes it), combine, check that the export did not
change, export and finish, deduct (when the operation has one), and accumulate both sides into one
accumulator. jetspark's functions return the accumulator (an int is immutable), so each step
takes the returned value. Jet's `LongAccumulator`/`DoubleAccumulator` are plain numbers here,
`LongLongAccumulator(count, sum)`/`LongDoubleAccumulator` are `averaging`'s `[count, sum]`, and
Jet's null items for `counting` are strings (a jetspark item is never None). Each test is named
after the Jet case it ports.

Differences:
- `assertNotSame(exported, acc)`: checked only for a mutable accumulator (a list); an export of an
  immutable int may well be the accumulator itself, harmlessly.
- `when_topN`: Jet's accumulator is a priority queue; jetspark's a list it trims to `n` once it
  holds `2n`, so the accumulator is compared as a sorted list (what Jet's `ArrayList::new` of a
  heap of two shows, as a multiset).
- `when_bottomN`: jetspark has no `bottom_n`; `top_n(2, key=negated)` is the same operation.

Skipped, with no counterpart: the three overflow cases (`when_averagingLong_tooManyItems_...`,
`..._sumTooLarge_...`, `when_averagingDouble_tooManyItems_...`): Python's ints do not overflow;
and the operations jetspark does not have (`maxBy`, `minBy`, `allOf*`, `linearTrend`,
`reducing`, `toSet`, `toMap*`, `mapping*`, `filtering`, `flatMapping`, `concatenating*`,
`groupingBy*`, `pickAny*`, `sorting`, and the `java.util.stream.Collector` adapters).
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Iterable
from typing import Any

from jetspark import processors as P
from jetspark.processors import AggregateOperation


def _identity(value: Any) -> Any:
    return value


def _accumulate_all(op: AggregateOperation, items: Iterable[Any]) -> Any:
    acc = op.create()
    for item in items:
        acc = op.accumulate(acc, item)
    return acc


def _check_export_and_finish(op: AggregateOperation, acc: Any, expect_finished: Any) -> None:
    exported = op.export(acc)
    assert exported == expect_finished, "exported"
    if isinstance(acc, list | dict | set):
        assert exported is not acc, "an export must not hand out a mutable accumulator"
    assert op.finish(acc) == expect_finished, "finished"


def validate_op(
    op: AggregateOperation,
    get_acc_val: Callable[[Any], Any],
    item1: Any,
    item2: Any,
    expect_acced1: Any,
    expect_combined: Any,
    expect_finished: Any,
) -> None:
    assert op.combine is not None, "combine"
    assert op.deduct is not None, "deduct"
    acc1 = op.accumulate(op.create(), item1)
    acc2 = op.accumulate(op.create(), item2)
    # checks come early: combine and deduct may change their accumulator
    assert get_acc_val(acc1) == expect_acced1, "accumulated"
    acc1_exported = op.export(acc1)
    acc1_exported_serialized = pickle.dumps(acc1_exported)

    acc1 = op.combine(acc1, acc2)
    assert get_acc_val(acc1) == expect_combined, "combined"
    # acc1 was changed: what was exported of it before must stay as it was
    assert pickle.dumps(acc1_exported) == acc1_exported_serialized

    _check_export_and_finish(op, acc1, expect_finished)

    acc1 = op.deduct(acc1, acc2)
    assert get_acc_val(acc1) == expect_acced1, "deducted"

    both = _accumulate_all(op, [item1, item2])
    assert get_acc_val(both) == expect_combined, "accumulated both"


def validate_op_without_deduct(
    op: AggregateOperation,
    get_acc_val: Callable[[Any], Any],
    items_left: list[Any],
    items_right: list[Any],
    expect_acced_left: Any,
    expect_combined: Any,
    expect_finished: Any,
) -> None:
    assert op.deduct is None, "deduct"
    assert op.combine is not None, "combine"
    acc1 = _accumulate_all(op, items_left)
    acc2 = _accumulate_all(op, items_right)
    assert get_acc_val(acc1) == expect_acced_left, "accumulated"
    acc1_exported = op.export(acc1)
    acc1_exported_serialized = pickle.dumps(acc1_exported)

    acc1 = op.combine(acc1, acc2)
    assert get_acc_val(acc1) == expect_combined, "combined"
    assert pickle.dumps(acc1_exported) == acc1_exported_serialized

    _check_export_and_finish(op, acc1, expect_finished)

    acc3 = _accumulate_all(op, [*items_left, *items_right])
    assert get_acc_val(acc3) == expect_combined, "accumulated"


def test_AggregateOperationsTest__when_counting() -> None:
    validate_op(P.counting(), _identity, "a", "b", 1, 2, 2)


def test_AggregateOperationsTest__when_summingLong() -> None:
    validate_op(P.summing(int), _identity, 1, 2, 1, 3, 3)


def test_AggregateOperationsTest__when_summingDouble() -> None:
    validate_op(P.summing(float), _identity, 0.5, 1.5, 0.5, 2.0, 2.0)


def test_AggregateOperationsTest__when_averagingLong() -> None:
    validate_op(P.averaging(int), list, 1, 2, [1, 1], [2, 3], 1.5)


def test_AggregateOperationsTest__when_averagingLong_noInput_then_NaN() -> None:
    op = P.averaging(int)
    assert math.isnan(op.finish(op.create()))


def test_AggregateOperationsTest__when_averagingDouble() -> None:
    validate_op(P.averaging(float), list, 1.5, 2.5, [1, 1.5], [2, 4.0], 2.0)


def test_AggregateOperationsTest__when_averagingDouble_noInput_then_NaN() -> None:
    op = P.averaging(float)
    assert math.isnan(op.finish(op.create()))


def test_AggregateOperationsTest__when_topN() -> None:
    validate_op_without_deduct(P.top_n(2), sorted, [7, 1, 5, 3], [8, 6, 2, 4], [5, 7], [7, 8], [8, 7])


def _negated(value: int) -> int:
    return -value


def test_AggregateOperationsTest__when_bottomN() -> None:
    validate_op_without_deduct(
        P.top_n(2, key=_negated), sorted, [7, 1, 5, 3], [8, 6, 2, 4], [1, 3], [1, 2], [1, 2]
    )


def test_AggregateOperationsTest__when_toList() -> None:
    validate_op_without_deduct(P.to_list(), _identity, [1], [2], [1], [1, 2], [1, 2])

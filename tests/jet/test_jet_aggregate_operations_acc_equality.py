"""Jet's `AggregateOperations_accEqualityTest` (hazelcast-jet-core, `com.hazelcast.jet.aggregate`,
`hazelcast-jet-core/src/test/java/com/hazelcast/jet/aggregate/AggregateOperations_accEqualityTest.java`),
ported.

Jet's one test, `testTwoAccumulatorsEqual`, runs for every built-in operation with a `deductFn`:
such an operation must have a `deductFn`, and two fresh accumulators must be equal (a sliding
window compares a deducted accumulator with a fresh one to find keys it can drop). jetspark's
accumulators are plain values (Jet's `LongAccumulator`, `LongLongAccumulator` are an int and a
two-element list), and equality is Python's `==`. Jet's parameters map to jetspark's operations:
`counting()` to `counting()`, `summingLong`/`summingDouble` to `summing` of an int/float
function, `averagingLong`/`averagingDouble` to `averaging` of an int/float function.

Skipped, with no counterpart in jetspark: the parameters `linearTrend(...)`, `allOf(counting(),
summingLong(...))` and `reducing(...)` (jetspark has no such operations).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jetspark import processors as P


def _long_value(x: int) -> int:
    return int(x)


def _double_value(x: float) -> float:
    return float(x)


OPERATIONS: dict[str, Callable[[], P.AggregateOperation]] = {
    "counting()": P.counting,
    "summingLong(Long::longValue)": lambda: P.summing(_long_value),
    "summingDouble(Double::doubleValue)": lambda: P.summing(_double_value),
    "averagingLong(Long::longValue)": lambda: P.averaging(_long_value),
    "averagingDouble(Double::doubleValue)": lambda: P.averaging(_double_value),
}


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_AggregateOperations_accEqualityTest__testTwoAccumulatorsEqual(name: str) -> None:
    operation = OPERATIONS[name]()
    assert operation.deduct is not None, "this test is not needed if deduct is not implemented"

    accumulator1 = operation.create()
    accumulator2 = operation.create()

    assert accumulator1 == accumulator2, "two empty accumulators not equal"

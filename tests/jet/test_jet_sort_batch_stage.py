"""Jet's `SortBatchStageTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported.

Jet's pipeline `batchStageFromList(input).rebalance().sort(...)` on its test cluster becomes a DAG
on the local runner with 2 members: a source of the shuffled input with local parallelism 2 (the
`rebalance()`: items spread over several upstream processors), a distributed `all_to_one` edge,
`processors.sort`, and a collecting sink whose output must be in order (Jet's `assertOrdered`).
Jet's `itemCount` is 1024. Jet sorts with a comparator; jetspark's `sort` takes a key and
`reverse`: `(a, b) -> b - a` is `reverse=True`. Each test is named after the Jet case it ports.

Differences:
- `sort_lessItemsThanProcessors`: Jet's sort is two stages (each processor sorts its part, one
  merges), so fewer items than processors leaves some empty; jetspark's is one processor behind an
  `all_to_one` edge, so the port gives the sort vertex more processors (4) than items (3): all but
  one get nothing, which must not disturb the order.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from jetspark import DAG, Edge, JobFailedError
from jetspark import processors as P
from jetspark.runners.local import LocalRunner
from jetspark.testing import run_dag

ITEM_COUNT = 1024
MEMBERS = 2


def sorted_output(
    items: list[Any],
    key: Callable[[Any], Any] | None = None,
    reverse: bool = False,
    sort_parallelism: int = 1,
    source_parallelism: int = 2,
) -> list[Any]:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items), source_parallelism)
    sort = dag.new_vertex("sort", P.sort(key=key, reverse=reverse), sort_parallelism)
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(source, sort).all_to_one().distributed())
    dag.edge(Edge.between(sort, sink).all_to_one().distributed())
    return list(run_dag(dag, runner=LocalRunner(member_count=MEMBERS)).result("sink"))


def shuffled(items: list[Any], seed: int = 0) -> list[Any]:
    items = list(items)
    random.Random(seed).shuffle(items)
    return items


def test_SortBatchStageTest__sort_withRepeatingItems() -> None:
    expected = [t // 10 for t in range(ITEM_COUNT)]
    assert sorted_output(shuffled(expected)) == expected


def test_SortBatchStageTest__sort_withComparator() -> None:
    expected = sorted(range(ITEM_COUNT), reverse=True)
    assert sorted_output(shuffled(expected), reverse=True) == expected


def _failing_key(item: int) -> int:
    if item == 5:
        raise RuntimeError("expectedFailure")
    return item


def test_SortBatchStageTest__sort_exceptionDuringComparing() -> None:
    with pytest.raises(JobFailedError, match="expectedFailure") as failure:
        sorted_output(list(range(20)), key=_failing_key)
    # Jet: the root cause is the RuntimeError
    cause: BaseException | None = failure.value
    while cause is not None and cause.__cause__ is not None:
        cause = cause.__cause__
    assert isinstance(cause, RuntimeError) and str(cause) == "expectedFailure"


def test_SortBatchStageTest__sort_lessItemsThanProcessors() -> None:
    expected = [0, 1, 2]
    assert sorted_output(shuffled(expected), sort_parallelism=4, source_parallelism=1) == expected

"""Jet's `AssertionsTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline.test`), ported: the
cases of the assertions jetspark's test kit has.

Jet's `Assertions.assertOrdered(expected)` and `assertAnyOrder(expected)` are sinks that collect
their input on one processor and assert at the end of the job; jetspark's counterpart is
`jetspark.testing.assert_dag_output(dag, {"sink": expected}, any_order=...)`, which runs the DAG
and checks what its collecting sink received (docs/testing.md). The jobs run on the local runner
with 2 members and local parallelism 2 (Jet's `PipelineTestSupport` cluster); Jet's
`TestSources.items(...)` (one processor in the cluster) is `from_iterable` on one processor
(`FirstMemberOnly`), and the assertion's single processor is a `collect()` sink on one processor.
Jet's failing job (`executeAndPeel` expecting an `AssertionError`) is an `AssertionError` raised
by `assert_dag_output`. Each test is named after the Jet case it ports.

Differences:
- `test_assertAnyOrder_distributedSource`: Jet reads an `IMap` of `(str(i), i)` entries on every
  member; here `from_iterable` of those entries runs on every processor of both members, into the
  one collecting processor over a distributed edge.

Skipped:
- The `*_not_terminal*` cases: Jet's assertions are pipeline stages that pass their input on to
  a further sink; `assert_dag_output` checks after the job and is not a vertex.
- `test_assertContains*`, `test_assertCollected*`, `test_assertCollectedEventually*`,
  `test_multiple_assertions_in_pipeline`: jetspark's kit has no "contains", custom-predicate or
  streaming ("eventually", which ends a streaming job by an `AssertionCompletedException`)
  assertion sink.
"""

from __future__ import annotations

from typing import Any

import pytest

from jetspark import DAG, Edge, JobConfig
from jetspark import processors as P
from jetspark.core.suppliers import FirstMemberOnly
from jetspark.runners.local import LocalRunner
from jetspark.testing import assert_dag_output

MEMBER_COUNT = 2
LOCAL_PARALLELISM = 2
ITEM_COUNT = 1024
CONFIG = JobConfig(default_local_parallelism=LOCAL_PARALLELISM)


def items_into_sink(items: list[Any], distributed_source: bool = False) -> DAG:
    """Jet's `p.readFrom(TestSources.items(items))` (or a distributed source of them) into the
    one processor of the assertion sink."""
    dag = DAG()
    supplier = P.from_iterable(items)
    source = dag.new_vertex("source", supplier if distributed_source else FirstMemberOnly(supplier))
    sink = dag.new_vertex("sink", FirstMemberOnly(P.collect()))
    dag.edge(Edge.between(source, sink).distributed())
    return dag


def assert_ordered(items: list[Any], expected: list[Any]) -> None:
    """Jet's `.apply(Assertions.assertOrdered(expected))` and `execute()`."""
    assert_dag_output(
        items_into_sink(items),
        {"sink": expected},
        config=CONFIG,
        runner=LocalRunner(MEMBER_COUNT),
        any_order=False,
    )


def assert_any_order(items: list[Any], expected: list[Any], distributed_source: bool = False) -> None:
    """Jet's `.apply(Assertions.assertAnyOrder(expected))` and `execute()`."""
    assert_dag_output(
        items_into_sink(items, distributed_source),
        {"sink": expected},
        config=CONFIG,
        runner=LocalRunner(MEMBER_COUNT),
        any_order=True,
    )


def test_AssertionsTest__test_assertOrdered() -> None:
    assert_ordered([1, 2, 3, 4], [1, 2, 3, 4])


def test_AssertionsTest__test_assertOrdered_should_fail() -> None:
    with pytest.raises(AssertionError, match="DAG output differs from the expected output"):
        assert_ordered([4, 3, 2, 1], [1, 2, 3, 4])


def test_AssertionsTest__test_assertAnyOrder() -> None:
    assert_any_order([4, 3, 2, 1], [1, 2, 3, 4])


def test_AssertionsTest__test_assertAnyOrder_distributedSource() -> None:
    entries = [(str(i), i) for i in range(ITEM_COUNT)]
    assert_any_order(entries, list(entries), distributed_source=True)


def test_AssertionsTest__test_assertAnyOrder_should_fail() -> None:
    with pytest.raises(AssertionError, match="DAG output differs from the expected output"):
        assert_any_order([3, 2, 1], [1, 2, 3, 4])


def test_AssertionsTest__test_assertAnyOrder_duplicate_entry() -> None:
    assert_any_order([1, 3, 2, 3], [1, 2, 3, 3])


def test_AssertionsTest__test_assertAnyOrder_duplicate_entry_only_in_source_should_fail() -> None:
    with pytest.raises(AssertionError, match="DAG output differs from the expected output"):
        assert_any_order([1, 3, 2, 3], [1, 2, 3])


def test_AssertionsTest__test_assertAnyOrder_duplicate_entry_only_in_assert_should_fail() -> None:
    with pytest.raises(AssertionError, match="DAG output differs from the expected output"):
        assert_any_order([1, 2, 3], [1, 2, 3, 3])

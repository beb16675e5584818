"""Jet's `TestSourcesTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline.test`), ported: the
sources for tests, as jetspark's `from_iterable` and `generator_stream`.

On the local runner with 2 members, as Jet's `PipelineTestSupport` cluster. Jet's
`TestSources.items(...)` is non-distributed (total parallelism one): `from_iterable` behind
`FirstMemberOnly` with local parallelism 1; `itemsDistributed(...)` is `from_iterable` on every
processor of every member. Jet's `Assertions.assertOrdered` and `assertAnyOrder` are a
`collect()` sink (on one processor for the ordered case) and a check after the job.
Jet's `itemStream(itemsPerSecond)` (`SimpleEvent(timestamp, sequence)` items, rate-limited,
non-distributed) is `generator_stream(items_per_second=..., fn=...)` on one processor; Jet's
`assertCollectedEventually(timeout, check)` is a sink that runs the check on what it collected
after each batch and, once it passes, ends the job with Jet's `AssertionCompletedException`
(`AssertionCompletedError` here): the job fails with it as the cause, as Jet's test expects.
Each test is named after the Jet case it ports.

`FirstMemberOnly` runs one processor, on the first member: its context counts the other members
(`total_parallelism` = members x local parallelism, as Jet's does), and `from_iterable` and
`generator_stream` deal their positions by `running_processor_index` and
`running_processor_count`, which count the processors that run, so the one processor emits every
position (before, dealing by the global index, it emitted 0, 2, 4, ... and lost the odd ones).

Skipped: `test_longStream`, `test_itemStream_withWindowing` and
`test_itemStream_in_expected_range` check that the number of items per second of event time
stays close to the rate asked for; on CI's two busy cores a count per second of wall-clock time
is not deterministic (`generator_stream`'s rate is covered by tests/unit/processors/test_sources.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobConfig, JobFailedError
from jetspark import processors as P
from jetspark.core.inbox import Inbox
from jetspark.core.suppliers import FirstMemberOnly, ProcessorSupplier
from jetspark.runners.local import LocalRunner

MEMBER_COUNT = 2
TIMEOUT = 60


class SimpleEvent(NamedTuple):
    """Jet's `SimpleEvent`."""

    timestamp: int
    sequence: int


class AssertionCompletedError(Exception):
    """Jet's `AssertionCompletedException`: the assertion passed, the job may end."""


class TooFewItemsError(AssertionError):
    """The check wants more items: it may pass later (any other failure cannot be mended)."""


class AssertCollectedEventuallyP(AbstractProcessor):
    """Jet's `assertCollectedEventually`: collects, checks after each batch, ends the job once the
    check passes; fails the job when it has not passed within `timeout` seconds. Jet retries any
    failed check until then; here only `TooFewItemsError`, so that a check that can no longer
    pass fails at once."""

    def __init__(self, timeout: float, check: Callable[[list[Any]], None]) -> None:
        self.timeout = timeout
        self.check = check
        self.items: list[Any] = []
        self.deadline = 0.0

    def init_processor(self, context: Any) -> None:
        self.deadline = time.monotonic() + self.timeout

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.drain_to(self.items)
        try:
            self.check(self.items)
        except TooFewItemsError:
            if time.monotonic() > self.deadline:
                raise
            return
        raise AssertionCompletedError("Assertion passed successfully")


def run(dag: DAG, member_count: int = MEMBER_COUNT) -> Any:
    return LocalRunner(member_count).run(dag, JobConfig(default_local_parallelism=2), timeout=TIMEOUT)


def ordered_items_dag(member_count: int) -> DAG:
    """Jet's `TestSources.items(0..9999)` into `assertOrdered` (both of total parallelism one)."""
    dag = DAG()
    source = dag.new_vertex("source", FirstMemberOnly(P.from_iterable(ITEMS)), 1)
    sink = dag.new_vertex("sink", FirstMemberOnly(P.collect()), 1)
    dag.edge(Edge.between(source, sink))
    return dag


ITEMS = list(range(10_000))


def test_TestSourcesTest__test_items() -> None:
    assert run(ordered_items_dag(MEMBER_COUNT)).result("sink") == ITEMS


def test_TestSourcesTest__test_items__oneMember() -> None:
    """Jet's case on a one-member job, where the single processor is the vertex's only one."""
    assert run(ordered_items_dag(1), member_count=1).result("sink") == ITEMS


def test_TestSourcesTest__test_itemsDistributed() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(ITEMS))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, sink).distributed())
    assert sorted(run(dag).result("sink")) == ITEMS


def item_stream(items_per_second: int) -> ProcessorSupplier:
    """Jet's `TestSources.itemStream(itemsPerSecond)`."""
    return P.generator_stream(
        items_per_second=items_per_second,
        fn=lambda sequence: SimpleEvent(time.time_ns() // 1_000_000, sequence),
    )


def item_stream_dag(expected_item_count: int) -> DAG:
    """Jet's `itemStream(...)` into `assertCollectedEventually(10, ...)`: more than
    `expected_item_count` items, their sequence numbers 0, 1, 2, ..."""

    def check(items: list[Any]) -> None:
        if len(items) <= expected_item_count:
            raise TooFewItemsError(f"list should contain at least {expected_item_count} items")
        for i, item in enumerate(items):
            assert item.sequence == i

    dag = DAG()
    source = dag.new_vertex("source", FirstMemberOnly(item_stream(1_000)), 1)
    asserting = ProcessorSupplier.of(lambda: AssertCollectedEventuallyP(10, check))
    sink = dag.new_vertex("sink", FirstMemberOnly(asserting), 1)
    dag.edge(Edge.between(source, sink))
    return dag


def assert_completed(dag: DAG, member_count: int = MEMBER_COUNT) -> None:
    """Jet's `expectedException.expectMessage(AssertionCompletedException)` and `executeAndPeel()`."""
    with pytest.raises(JobFailedError) as failed:
        run(dag, member_count)
    if not isinstance(failed.value.__cause__, AssertionCompletedError):
        raise AssertionError(f"the job did not end with AssertionCompletedError: {failed.value}")


def test_TestSourcesTest__test_itemStream() -> None:
    assert_completed(item_stream_dag(20))


def test_TestSourcesTest__test_itemStream__oneMember() -> None:
    """Jet's case on a one-member job."""
    assert_completed(item_stream_dag(20), member_count=1)

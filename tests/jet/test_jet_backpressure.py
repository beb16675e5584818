"""Jet's `BackpressureTest` (hazelcast-jet-core, `com.hazelcast.jet.benchmark`), ported: a
consumer that stalls now and then holds its producers back, and nothing is lost.

On the local runner with 2 members and local parallelism 2, as Jet's 2 members (Jet: up to 4
cooperative threads each). Jet's source vertex runs `GenerateP` on the first member and a no-op
on the second (a meta supplier choosing by member); every item crosses to one partition owned by
the second member (a distributed, partitioned edge whose partitioner always answers that
partition, found in the meta supplier's `init` from the partition assignment), so a single
`HiccupP` there receives everything and its producers on the other member must wait for it.
Jet's sink `writeMapP("counts")` is a `collect()` of the `(key, count)` entries; the check is
Jet's `assertCounts`. Jet's `HiccupP` alternates, by the wall clock, stalls of 301-871 ms
(`tryProcess` refuses every item) with runs of 700-2700 ms; here the stalls and runs are counted
in `try_process` calls (3 or 7 refused calls, then 700 or 2000 accepted items), so that the test
does not depend on time (a refused call makes the tasklet idle, so a longer stall only makes the
test slower), and the edge's queues are small (`with_queue_size`) so that a stall fills them. The counts
are scaled down (Jet: 1000 keys x 10000 items per key and processor, a nightly benchmark). Each
test is named after the Jet case it ports.

Differences: none beyond the scale and the counted stalls.

Skipped: none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jetspark import (
    DAG,
    AbstractProcessor,
    Edge,
    JobConfig,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    traverse_iterable,
)
from jetspark import processors as P
from jetspark.core.context import MetaSupplierContext, ProcessorContext
from jetspark.core.partitioner import whole_item
from jetspark.core.suppliers import MemberSuppliers
from jetspark.core.traverser import Traverser
from jetspark.runners.local import LocalRunner

CLUSTER_SIZE = 2
PARALLELISM_PER_MEMBER = 2
KEY_COUNT = 100
COUNT_PER_KEY_AND_SLICE = 200
#: Calls refused in a stall, and items accepted in a run, in turn.
HICCUP_CALLS = (3, 7)
RUN_ITEMS = (700, 2_000)
QUEUE_SIZE = 16
TIMEOUT = 60


class Shared:
    """What the meta supplier finds out and the partitioner reads."""

    partition_owned_by_member2 = -1
    #: Items the `HiccupP`s refused (stalled on), and their members.
    refused = 0
    hiccup_members: set[int] = set()


class GenerateP(AbstractProcessor):
    """Emits `(str(key), 1)` for every key, `COUNT_PER_KEY_AND_SLICE` times."""

    def __init__(self) -> None:
        self.key = 0
        self.items_emitted_per_key = 0
        self.traverser: Traverser[Any] = Traverser(self._next)

    def _next(self) -> Any:
        if self.items_emitted_per_key == COUNT_PER_KEY_AND_SLICE:
            return None
        item = (str(self.key), 1)
        self.key += 1
        if self.key == KEY_COUNT:
            self.items_emitted_per_key += 1
            self.key = 0
        return item

    def complete(self) -> bool:
        return self.emit_from_traverser(self.traverser)


class NoopSourceP(AbstractProcessor):
    """Jet's `noopP()` on the second member: emits nothing."""

    def complete(self) -> bool:
        return True


class SourceMetaSupplier(ProcessorMetaSupplier):
    """Jet's `ProcessorMetaSupplier.of(address -> address is member 1 ? GenerateP : noopP)`."""

    def init(self, context: MetaSupplierContext) -> None:
        Shared.partition_owned_by_member2 = context.partition_assignment[1][0]

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        return {
            index: ProcessorSupplier.of(GenerateP if index == 0 else NoopSourceP) for index in member_indexes
        }


def to_member2(key: Any, partition_count: int) -> int:
    return Shared.partition_owned_by_member2


class CombineP(AbstractProcessor):
    """Sums the counts per key; emits them when complete."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.result_traverser: Traverser[Any] | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        key, value = item
        self.counts[key] = self.counts.get(key, 0) + value
        return True

    def complete(self) -> bool:
        if self.result_traverser is None:
            self.result_traverser = traverse_iterable(list(self.counts.items()))
        return self.emit_from_traverser(self.result_traverser)


class HiccupP(CombineP):
    """Jet's `HiccupP`: refuses every item for a while, then takes items for a while, in turn."""

    def init_processor(self, context: ProcessorContext) -> None:
        self.phase = 0
        self.is_hiccuping = False
        self.left = RUN_ITEMS[0]
        self.items_processed = 0
        self.member = context.member_index

    def _update_hiccup_status(self) -> None:
        if self.left > 0:
            return
        self.phase += 1
        self.is_hiccuping = not self.is_hiccuping
        choices = HICCUP_CALLS if self.is_hiccuping else RUN_ITEMS
        self.left = choices[self.phase % len(choices)]

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self._update_hiccup_status()
        self.left -= 1
        if self.is_hiccuping:
            Shared.refused += 1
            Shared.hiccup_members.add(self.member)
            return False
        self.items_processed += 1
        return super().try_process_item(ordinal, item)


def assert_counts(word_counts: dict[str, int]) -> None:
    for i in range(KEY_COUNT):
        count = word_counts.get(str(i))
        assert count is not None, f"Missing count for {i}"
        assert count == COUNT_PER_KEY_AND_SLICE * PARALLELISM_PER_MEMBER, (
            f"The count for key {i} is not correct"
        )


def test_BackpressureTest__testBackpressure() -> None:
    Shared.refused = 0
    Shared.hiccup_members = set()
    dag = DAG()
    source = dag.new_vertex("source", SourceMetaSupplier())
    hiccup = dag.new_vertex("hiccup", HiccupP)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(
        Edge.between(source, hiccup)
        .distributed()
        .partitioned(whole_item, to_member2)
        .with_queue_size(QUEUE_SIZE)
    )
    dag.edge(Edge.between(hiccup, sink))

    job = LocalRunner(CLUSTER_SIZE).run(
        dag, JobConfig(default_local_parallelism=PARALLELISM_PER_MEMBER), timeout=TIMEOUT
    )
    entries = job.result("sink")
    counts = dict(entries)
    assert len(counts) == len(entries) == KEY_COUNT
    assert_counts(counts)
    assert job.metrics()["hiccup"]["received"] == KEY_COUNT * COUNT_PER_KEY_AND_SLICE * PARALLELISM_PER_MEMBER
    assert Shared.refused > 0  # it did stall
    assert Shared.hiccup_members == {1}  # on the second member only

"""Properties of snapshot restore: entries reach their owners, and suspend/resume loses nothing.

Part one checks `restore_entries_for` (runners/wiring.py) directly: state saved by the processors
of one plan (old member count and local parallelism) is handed to the processors of another, each
keyed entry to exactly the processor that owns its key's partition, each `BroadcastKey` entry to
all. Part two runs a counting job on the local runner with snapshots (exactly-once or
at-least-once), suspends it at a point Hypothesis picks, resumes it (possibly with another member
count) and compares the final counts, and the suspend snapshot itself, with the model.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark.core import (
    DAG,
    AbstractProcessor,
    BroadcastKey,
    Edge,
    Inbox,
    JobConfig,
    ProcessingGuarantee,
    ProcessorContext,
    Traverser,
    default_partitioner,
    traverse_iterable,
)
from jetspark.core.context import RESULTS_ATTRIBUTE
from jetspark.engine.snapshot import SnapshotData, encode_entry, entry_partition
from jetspark.planning.pipeline import build_plan
from jetspark.runners.local import JobStatus, LocalRunner
from jetspark.runners.wiring import restore_entries_for
from tests.waiting import wait_until


class Noop(AbstractProcessor):
    pass


state_keys = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.text(max_size=6),
    st.tuples(st.text(max_size=3), st.integers(min_value=0, max_value=99)),
)
layouts = st.tuples(st.integers(min_value=1, max_value=5), st.integers(min_value=1, max_value=4))


def plan_for(members: int, lp: int, partitions: int) -> Any:
    dag = DAG()
    dag.new_vertex("v", Noop, lp)
    return build_plan(dag, JobConfig(), members, partition_count=partitions)


@given(
    st.dictionaries(state_keys, st.integers(), max_size=40),
    st.lists(st.integers(), max_size=4),
    layouts,
    layouts,
    st.integers(min_value=1, max_value=300),
)
def test_every_entry_restores_to_its_partition_owner(
    state: dict[Any, int],
    broadcast_values: list[int],
    old: tuple[int, int],
    new: tuple[int, int],
    partitions: int,
) -> None:
    # The snapshot as the old plan's processors wrote it: each keyed entry from its owner, in
    # processor order, and a few broadcast entries from processor 0.
    old_plan = plan_for(*old, partitions)
    by_owner: dict[int, list[tuple[Any, Any]]] = {}
    for key, value in state.items():
        owner = old_plan.arrangement.global_owner(default_partitioner(key, partitions), old[1])
        by_owner.setdefault(owner, []).append((key, value))
    entries = [entry for owner in sorted(by_owner) for entry in by_owner[owner]]
    broadcasts = {BroadcastKey(("b", n)): value for n, value in enumerate(broadcast_values)}
    entries += list(broadcasts.items())
    data: SnapshotData = {
        "v": [encode_entry(k, v, entry_partition(k, partitions)) for k, v in entries],
        "other vertex": [encode_entry(1, "not mine", entry_partition(1, partitions))],
    }

    new_plan = plan_for(*new, partitions)
    received: dict[Any, list[int]] = {}
    for member, local in new_plan.vertex_plan("v").processor_ids():
        restored = restore_entries_for(data, new_plan, "v", member, local)
        assert restored is not None
        context = new_plan.processor_context("v", member, local)
        keyed = [(k, v) for k, v in restored if not isinstance(k, BroadcastKey)]
        for key, value in keyed:
            assert default_partitioner(key, partitions) in context.processor_partitions, (key, member, local)
            assert value == state[key]
            received.setdefault(key, []).append(context.global_processor_index)
        assert {k: v for k, v in restored if isinstance(k, BroadcastKey)} == broadcasts
        # the processor's share keeps the snapshot's order
        assert [k for k, _ in restored] == [k for k, _ in entries if k in dict(restored)]
    assert set(received) == set(state)
    assert all(len(owners) == 1 for owners in received.values()), received


def test_nothing_to_restore_without_snapshot_data() -> None:
    plan = plan_for(2, 2, 10)
    assert restore_entries_for(None, plan, "v", 1, 1) is None
    assert restore_entries_for({}, plan, "v", 1, 1) == []


# ---- suspend and resume on the local runner -------------------------------------------------


class Run:
    """What the processors of one test example share with the test (all in this process)."""

    def __init__(self, total: int, keys: int, pause_at: int) -> None:
        self.total = total
        self.keys = keys
        self.pause_at = pause_at
        self.gate = threading.Event()  # closed: sources of the first job wait at `pause_at`
        self.lock = threading.Lock()
        self.paused: set[int] = set()
        self.misplaced: list[Any] = []

    def key(self, item: int) -> int:
        return item % self.keys


class Source(AbstractProcessor):
    """Emits its share of 0..total-1; the not-yet-emitted items are its state.

    The state is a BroadcastKey entry per processor, so that a restore with another parallelism
    can re-split the union of what is left: every processor sees every entry.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.restored: list[int] = []

    def init_processor(self, context: ProcessorContext) -> None:
        self.me = context.global_processor_index
        self.pending = list(range(self.run.total))[self.me :: context.total_parallelism]
        self.position = 0
        self.emitted = 0

    def complete(self) -> bool:
        run = self.run
        while True:
            if not run.gate.is_set() and self.emitted >= min(run.pause_at, len(self.pending)):
                with run.lock:
                    run.paused.add(self.me)
                return False  # wait here until the test suspended the job
            if self.position == len(self.pending):
                return True
            item = self.pending[self.position]
            if not self.try_emit((item, run.key(item))):
                return False
            self.position += 1
            self.emitted += 1
            if self.emitted % 3 == 0:
                return False  # give snapshots a chance between small bursts

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(
            BroadcastKey(("left", self.me)), tuple(self.pending[self.position :])
        )

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.restored.extend(value)

    def finish_snapshot_restore(self) -> bool:
        self.pending = sorted(self.restored)[self.me :: self.context.total_parallelism]
        return True


class Count(AbstractProcessor):
    """Counts items per key; emits (key, count) pairs when its input ends."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.counts: dict[int, int] = {}
        self.saving: Traverser[tuple[Any, Any]] | None = None
        self.results: Traverser[Any] | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.counts[item[1]] = self.counts.get(item[1], 0) + 1
        return True

    def save_to_snapshot(self) -> bool:
        if self.saving is None:
            self.saving = traverse_iterable(list(self.counts.items()))
        if not self.emit_from_traverser_to_snapshot(self.saving):
            return False
        self.saving = None
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        partition = default_partitioner(key, self.context.partition_count)
        if key in self.counts or partition not in self.context.processor_partitions:
            with self.run.lock:
                self.run.misplaced.append((key, self.context.global_processor_index))
        self.counts[key] = value

    def complete(self) -> bool:
        if self.results is None:
            self.results = traverse_iterable(list(self.counts.items()))
        return self.emit_from_traverser(self.results)


class Collect(AbstractProcessor):
    def process(self, ordinal: int, inbox: Inbox) -> None:
        items: list[Any] = []
        inbox.drain_to(items)
        self.context.attributes[RESULTS_ATTRIBUTE].add(self.context.vertex_name, items)


def counting_dag(run: Run, source_lp: int, count_lp: int, queue_size: int) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", lambda: Source(run), source_lp)
    count = dag.new_vertex("count", lambda: Count(run), count_lp)
    sink = dag.new_vertex("sink", Collect, 1)
    dag.edge(
        Edge.between(source, count)
        .partitioned(lambda item: item[1])
        .distributed()
        .with_queue_size(queue_size)
    )
    dag.edge(Edge.between(count, sink).with_queue_size(queue_size))
    return dag


@settings(max_examples=40, deadline=None)
@given(
    total=st.integers(min_value=0, max_value=150),
    keys=st.integers(min_value=1, max_value=12),
    pause_at=st.integers(min_value=0, max_value=60),
    members=st.integers(min_value=1, max_value=3),
    resumed_members=st.none() | st.integers(min_value=1, max_value=3),
    source_lp=st.integers(min_value=1, max_value=2),
    count_lp=st.integers(min_value=1, max_value=3),
    queue_size=st.integers(min_value=1, max_value=8),
    batch_size=st.integers(min_value=1, max_value=8),
    interval=st.sampled_from([1, 3, 60_000]),
    guarantee=st.sampled_from([ProcessingGuarantee.EXACTLY_ONCE, ProcessingGuarantee.AT_LEAST_ONCE]),
)
def test_suspend_and_resume_counts_every_item_once(
    total: int,
    keys: int,
    pause_at: int,
    members: int,
    resumed_members: int | None,
    source_lp: int,
    count_lp: int,
    queue_size: int,
    batch_size: int,
    interval: int,
    guarantee: ProcessingGuarantee,
) -> None:
    # The suspend snapshot is terminal, and a terminal barrier aligns under either guarantee, so
    # even at-least-once must count every item exactly once across suspend and resume.
    run = Run(total, keys, pause_at)
    dag = counting_dag(run, source_lp, count_lp, queue_size)
    config = JobConfig(processing_guarantee=guarantee, snapshot_interval_millis=interval)
    job = LocalRunner(members, batch_size=batch_size).submit(dag, config)
    try:
        wait_until(lambda: len(run.paused) == members * source_lp, "every source to reach its pause point")
        job.suspend(timeout=20)
    finally:
        run.gate.set()
    assert job.status is JobStatus.SUSPENDED, job.error
    snapshot = job.last_snapshot
    assert snapshot is not None

    # The suspend snapshot is consistent: counted so far + still to emit == everything, once.
    left = [i for _, value in snapshot.entries("source") for i in value]
    assert sorted(left) == sorted(set(left)), "an item is left to emit by two sources"
    counted: Counter[int] = Counter()
    for key, value in snapshot.entries("count"):
        counted[key] += value
    emitted = set(range(total)) - set(left)
    assert counted == Counter(run.key(i) for i in emitted)

    resumed = job.resume(resumed_members)  # None: the same member count
    resumed.join(timeout=30)
    assert run.misplaced == [], "count state restored to a processor that does not own its key"
    pairs = resumed.result("sink")
    assert len(pairs) == len({key for key, _ in pairs}), f"a key counted by two processors: {pairs}"
    assert dict(pairs) == dict(Counter(run.key(i) for i in range(total)))

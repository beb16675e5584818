"""Jet's `JobRestartWithSnapshotTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

Jet's `SequencesInPartitionsGeneratorP` is `SequencesInPartitionsGeneratorP` below: each of its
processors owns some of `numPartitions` partitions (partition i goes to the processor whose
global index is `i % totalParallelism`) and emits `(partition, offset)` for offsets
`0..elementsInPartition-1`, always from the partition furthest behind; it saves each partition's
offset under a `BroadcastKey(partition)` and, on restore, keeps the offsets of the partitions it
owns. Jet's `writeMapP` sink (an IMap: a key written again is overwritten) is a collecting sink
read into a dict. Each test is named after the Jet case it ports.

Differences:
- `when_nodeDown_then_jobRestartsFromSnapshot_singleStage` / `_twoStage`: Jet throttles the
  sources so that one runs twice as fast as the other, waits for two snapshots, then kills one
  of its 2 members; the job restarts from the last snapshot on the remaining member, where one
  source processor gets all 3 partitions, their offsets far apart. The local runner's members
  cannot die; instead, with no clock: the sources stop at chosen offsets (processor 0, owning
  partitions 0 and 2, at 40; processor 1, owning partition 1, at 80), the test suspends the job
  there (a terminal snapshot) and resumes it on 1 member (one source processor now owns the 3
  partitions, offsets 40, 80, 40); then one source fails once with `RestartableError` after
  emitting 10 more items of the most-behind partition (output past the last snapshot that the
  restart emits again, which Jet's map sink overwrites), and the job restarts from its last
  snapshot and completes. The result must be Jet's expected map.
- `when_jobRestartedGracefully_then_noOutputDuplicated`: jetspark has no `job.restart()`; its
  counterpart is `suspend()` and `resume()` (a terminal snapshot, then a restore), done once the
  sink holds more than 10 items, with the source held there by a gate.

Skipped, with no counterpart: `when_snapshotStartedBeforeExecution_then_firstSnapshotIsSuccessful`
(Jet delays the operation that starts the execution on a member so that the coordinator starts
a snapshot first; the local runner starts every member's tasklets before its first snapshot).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    BroadcastKey,
    Edge,
    JobConfig,
    ProcessingGuarantee,
    ProcessorContext,
    RestartableError,
    Traverser,
    traverse_iterable,
)
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner

TIMEOUT = 60
NUM_PARTITIONS = 3


class Control:
    """What the test tells the sources and what they tell it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hold_at: dict[int, int] = {}  # partition -> offset it stops at while `released` is unset
        self.released = threading.Event()
        self.held: set[int] = set()  # partitions that reached their hold offset
        self.all_held = threading.Event()
        self.fail_after: int | None = None  # after release: items to emit before one RestartableError
        self.failed = False
        self.restored = False

    def note_held(self, partition: int) -> None:
        with self.lock:
            self.held.add(partition)
            if len(self.held) == len(self.hold_at):
                self.all_held.set()


control = Control()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global control
    control = Control()


class SequencesInPartitionsGeneratorP(AbstractProcessor):
    def __init__(self, num_partitions: int, elements_in_partition: int) -> None:
        self.num_partitions = num_partitions
        self.elements_in_partition = elements_in_partition

    def init_processor(self, context: ProcessorContext) -> None:
        self.assigned = [
            p
            for p in range(self.num_partitions)
            if p % context.total_parallelism == context.global_processor_index
        ]
        assert self.assigned, "no assigned partitions"
        self.offsets = dict.fromkeys(self.assigned, 0)
        self.emitted_since_release = 0
        self.snapshot_traverser: Traverser[tuple[Any, Any]] | None = None

    def _most_behind(self) -> int:
        return min(self.assigned, key=lambda p: (self.offsets[p], p))

    def complete(self) -> bool:
        while True:
            partition = self._most_behind()
            offset = self.offsets[partition]
            if offset >= self.elements_in_partition:
                return True
            if not control.released.is_set() and offset >= control.hold_at.get(partition, offset + 1):
                for p in self.assigned:  # a processor's partitions share a hold offset here
                    if self.offsets[p] >= control.hold_at[p]:
                        control.note_held(p)
                return False
            if (
                control.released.is_set()
                and not control.failed
                and self.emitted_since_release == control.fail_after
            ):
                control.failed = True
                raise RestartableError("mock node down")
            if not self.try_emit((partition, offset)):
                return False
            self.offsets[partition] = offset + 1
            if control.released.is_set():
                self.emitted_since_release += 1

    def save_to_snapshot(self) -> bool:
        if self.snapshot_traverser is None:
            entries = [(BroadcastKey(p), self.offsets[p]) for p in self.assigned]
            self.snapshot_traverser = traverse_iterable(entries)
        if not self.emit_from_traverser_to_snapshot(self.snapshot_traverser):
            return False
        self.snapshot_traverser = None
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        partition = key.key
        if partition in self.offsets:
            self.offsets[partition] = value

    def finish_snapshot_restore(self) -> bool:
        control.restored = True
        return True


def _value(item: tuple[int, int]) -> int:
    return item[1]


def _key(item: tuple[int, int]) -> int:
    return item[0]


def _to_entry(result: P.WindowResult) -> tuple[tuple[int, int], int]:
    return ((result.end, result.key), result.value)


def expected_windows(elements_in_partition: int, frame_size: int) -> dict[tuple[int, int], int]:
    """Jet's expected map: (window end, partition) -> count, for tumbling windows of `frame_size`
    over offsets 0..elements_in_partition-1 (window end is the next multiple above)."""
    expected: dict[tuple[int, int], int] = {}
    for partition in range(NUM_PARTITIONS):
        for offset in range(elements_in_partition):
            end = (offset // frame_size + 1) * frame_size
            expected[(end, partition)] = expected.get((end, partition), 0) + 1
    return expected


def windowing_dag(two_stage: bool, elements_in_partition: int, frame_size: int) -> DAG:
    policy = P.WindowPolicy.tumbling(frame_size)
    dag = DAG()
    generator = dag.new_vertex(
        "generator", lambda: SequencesInPartitionsGeneratorP(NUM_PARTITIONS, elements_in_partition), 1
    )
    ins_wm = dag.new_vertex(
        "insWm", P.insert_watermarks(_value, allowed_lag=0, throttling_frame_size=frame_size), 1
    )
    to_entry = dag.new_vertex("map", P.map(_to_entry))
    sink = dag.new_vertex("writeMap", P.collect())
    if two_stage:
        stage1 = dag.new_vertex("aggregateStage1", P.accumulate_by_frame(_key, _value, policy, P.counting()))
        stage2 = dag.new_vertex("aggregateStage2", P.combine_to_sliding_window(policy, P.counting()))
        dag.edge(Edge.between(ins_wm, stage1).partitioned(_key))
        dag.edge(Edge.between(stage1, stage2).distributed().partitioned(P.frame_entry_key))
        dag.edge(Edge.between(stage2, to_entry))
    else:
        aggregate = dag.new_vertex(
            "aggregate", P.aggregate_to_sliding_window(_key, _value, policy, P.counting())
        )
        dag.edge(Edge.between(ins_wm, aggregate).distributed().partitioned(_key))
        dag.edge(Edge.between(aggregate, to_entry))
    dag.edge(Edge.between(generator, ins_wm))
    dag.edge(Edge.between(to_entry, sink))
    return dag


def exactly_once(interval_millis: int = 3_600_000) -> JobConfig:
    return JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=interval_millis
    )


@pytest.mark.parametrize("two_stage", [False, True], ids=["singleStage", "twoStage"])
def test_JobRestartWithSnapshotTest__when_nodeDown_then_jobRestartsFromSnapshot(two_stage: bool) -> None:
    """Jet's `..._singleStage` and `..._twoStage`."""
    elements_in_partition, frame_size = 250, 3
    control.hold_at = {0: 40, 1: 80, 2: 40}
    control.fail_after = 10
    job = LocalRunner(2, max_restarts=1).submit(
        windowing_dag(two_stage, elements_in_partition, frame_size), exactly_once()
    )
    assert control.all_held.wait(TIMEOUT)
    job.suspend(TIMEOUT)
    job = job.resume(member_count=1)  # one member left: one source processor owns all 3 partitions
    control.released.set()
    job.join(TIMEOUT)
    assert control.failed and control.restored
    assert job.restarts == 1
    result = dict(job.result("writeMap"))
    assert result == expected_windows(elements_in_partition, frame_size)


def test_JobRestartWithSnapshotTest__when_jobRestartedGracefully_then_noOutputDuplicated() -> None:
    elements_in_partition = 100
    control.hold_at = {0: 20, 1: 20, 2: 20}
    dag = DAG()
    generator = dag.new_vertex(
        "generator", lambda: SequencesInPartitionsGeneratorP(NUM_PARTITIONS, elements_in_partition), 1
    )
    dag.edge(Edge.between(generator, dag.new_vertex("sink", P.collect())))
    job = LocalRunner(2).submit(dag, exactly_once())
    assert control.all_held.wait(TIMEOUT)
    assert len(job.result("sink")) > 10  # Jet waits for this before restarting
    job.suspend(TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    job = job.resume()
    control.released.set()
    job.join(TIMEOUT)
    sink = job.result("sink")
    expected = {(p, i) for i in range(elements_in_partition) for p in range(NUM_PARTITIONS)}
    assert set(sink) == expected
    assert len(sink) == len(expected)  # no output duplicated

"""`LocalJob.restart()`, Jet's `Job.restart()`: a new execution on the same members, from a
terminal snapshot with a processing guarantee, from the beginning without one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import examples.streaming_counts as streaming
from jetspark import DAG, Edge, JobCancelledError, JobConfig, ProcessingGuarantee
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

COUNT = 3_000
KEYS = streaming.KEYS
key_of = streaming.key_of
#: `RunningCount` processors initialized so far (the local runner runs them in this process).
STARTED = [0]


class RunningCount(streaming.RunningCount):
    """The example's keyed running count (exact output needs its counts restored, nothing
    replayed twice), counting its processors' starts."""

    def init_processor(self, context: Any) -> None:
        STARTED[0] += 1


def counting_dag(gate: Gate) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=COUNT))
    counts = dag.new_vertex("counts", RunningCount)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, counts).partitioned(key_of).distributed())
    dag.edge(Edge.between(counts, sink).distributed())
    return dag


def expected() -> list[tuple[int, int]]:
    return sorted((k, n) for k in range(KEYS) for n in range(1, len(range(k, COUNT, KEYS)) + 1))


def emitted(job: Any, vertex: str = "source") -> int:
    return int(job.metrics()[vertex]["emitted"])


def test_a_restart_with_a_guarantee_takes_a_terminal_snapshot_and_goes_on_from_it(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    config = JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=3_600_000
    )
    job = LocalRunner(2).submit(counting_dag(gate), config)
    wait_until(lambda: len(job.result("sink")) == COUNT // 2, "the first half counted")
    snapshots = job.snapshot_count
    job.restart()
    assert job.status is JobStatus.RUNNING
    wait_until(lambda: job.snapshot_count > snapshots, "the terminal snapshot")
    gate.open()
    job.join(120)
    assert sorted(job.result("sink")) == expected()  # restored counts: every (key, n) once
    assert job.status.value == "completed"
    assert job.restarts == 0  # asked for, not a failure


def test_a_restart_without_a_guarantee_starts_from_the_beginning_and_drops_the_first_output(
    tmp_path: Path,
) -> None:
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    job = LocalRunner(2).submit(counting_dag(gate), JobConfig())
    wait_until(lambda: len(job.result("sink")) == COUNT // 2, "the first half counted")
    started = STARTED[0]
    job.restart()
    job.restart()  # asked again while under way: the same restart
    wait_until(lambda: STARTED[0] > started, "a new execution")
    assert job.status is JobStatus.RUNNING
    gate.open()
    job.join(120)
    assert sorted(job.result("sink")) == expected()  # the first execution's output is gone
    assert STARTED[0] == started + 2  # one restart: each member's processor once more
    assert job.restarts == 0


def test_only_a_running_job_restarts(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=None)
    job = LocalRunner(1).submit(counting_dag(gate), JobConfig())
    job.join(120)
    with pytest.raises(ValueError, match=r"job '.*' is completed; only a running job restarts"):
        job.restart()


def test_a_cancel_after_a_restart_cancels_the_job(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.AT_LEAST_ONCE)
    job = LocalRunner(2).submit(counting_dag(gate), config)
    wait_until(lambda: emitted(job) == COUNT // 2, "the first half emitted")
    job.restart()
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(120)
    assert job.status is JobStatus.CANCELLED


def test_a_job_without_a_guarantee_suspends_and_resumes_from_the_beginning(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    job = LocalRunner(2).submit(counting_dag(gate), JobConfig())
    wait_until(lambda: len(job.result("sink")) == COUNT // 2, "the first half counted")
    started = STARTED[0]
    job.suspend()
    assert job.status is JobStatus.SUSPENDED
    assert STARTED[0] == started  # nothing runs while suspended
    gate.open()
    job = job.resume(member_count=3)
    job.join(120)
    assert sorted(job.result("sink")) == expected()  # the suspended execution's output is gone
    assert STARTED[0] == started + 3  # the new execution, on three members


def test_a_restart_with_a_checkpoint_store_commits_its_terminal_snapshot_there(tmp_path: Path) -> None:
    from jetspark.checkpoint import CheckpointStore

    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    config = JobConfig(
        name="restarted",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=3_600_000,
        checkpoint_root=str(tmp_path / "ck"),
    )
    job = LocalRunner(2).submit(counting_dag(gate), config)
    wait_until(lambda: len(job.result("sink")) == COUNT // 2, "the first half counted")
    store = CheckpointStore(str(tmp_path / "ck"), "restarted")
    before = store.committed_ids()
    started = STARTED[0]
    job.restart()
    wait_until(lambda: STARTED[0] > started, "the new execution")
    assert len(store.committed_ids()) > len(before)  # the terminal snapshot, in the store
    gate.open()
    job.join(120)
    assert sorted(job.result("sink")) == expected()
    again = LocalRunner(2).submit(counting_dag(gate), config)  # completed: runs nothing
    again.join(120)
    assert again.result("sink") == []

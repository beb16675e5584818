"""Snapshot and restore end to end: a streaming source, a fused step and a two-stage aggregation,
suspended and resumed (also on another member count) or restarted after a failure; the final
counts are exact, with nothing lost and nothing counted twice."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee, RestartableError
from jetspark.runners.local import JobStatus, LocalJob, LocalRunner
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

COUNT = 3000
RATE = 4000  # items per second for the whole source vertex, when no gate holds it


def config(guarantee: ProcessingGuarantee = ProcessingGuarantee.EXACTLY_ONCE) -> JobConfig:
    return JobConfig(processing_guarantee=guarantee, snapshot_interval_millis=15)


def key_of(x: int) -> int:
    return x % 13


def counting_dag(step: Callable[[int], int] = lambda x: x, lp: int = -1, gate: Gate | None = None) -> DAG:
    """generator -> fused(map, filter) -> aggregate_by_key(count) -> sink. With `gate`, the source
    is held at the gate's limit (at full speed up to there); without, it streams at RATE."""
    dag = DAG()
    if gate is None:
        supplier = P.generator_stream(count=COUNT, items_per_second=RATE)
    else:
        supplier = gated_stream(gate, count=COUNT)
    source = dag.new_vertex("source", supplier, lp)
    fused = dag.new_vertex("fused", P.fused(P.Chain().map(step).filter(lambda x: x % 10 != 9)), lp)
    dag.edge(Edge.between(source, fused))
    counts = P.aggregate_by_key(dag, "counts", fused, key_of, P.counting())
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(counts, sink).distributed())
    return dag


EXPECTED = sorted(Counter(key_of(x) for x in range(COUNT) if x % 10 != 9).items())


def emitted(job: LocalJob) -> int:
    return job.metrics().get("source", {}).get("emitted", 0)


def suspend_at_gate(job: LocalJob, gate: Gate, snapshots: int = 0, start: int = 0) -> None:
    """Suspend `job` while its source waits at `gate`: once it emitted every item from `start` (where
    this job object began) to the limit, and `snapshots` snapshots were taken."""
    limit = gate.limit()
    assert limit is not None, "an open gate holds nothing"
    wait_until(lambda: emitted(job) >= limit - start, f"the source to reach {limit}")
    wait_until(lambda: job.snapshot_count >= snapshots, f"{snapshots} snapshots")
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    assert emitted(job) == limit - start, "the source went past its gate"


@pytest.mark.parametrize(("members", "resume_members"), [(1, 1), (3, 3), (1, 3), (3, 1), (2, 3)])
def test_suspend_and_resume_counts_exactly(tmp_path: Path, members: int, resume_members: int) -> None:
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 4)
    job = LocalRunner(members).submit(counting_dag(gate=gate), config())
    suspend_at_gate(job, gate, snapshots=2)  # periodic snapshots before the terminal one
    gate.open()
    job.resume(member_count=resume_members).join(60)
    assert sorted(job.result("sink")) == EXPECTED


def test_several_suspensions_on_changing_member_counts(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 5)
    job = LocalRunner(2).submit(counting_dag(lp=2, gate=gate), config())
    suspend_at_gate(job, gate)
    gate.hold_at(COUNT // 2)
    job.resume(member_count=3)
    suspend_at_gate(job, gate, start=COUNT // 5)  # the counts start over with each execution
    gate.open()
    job.resume(member_count=1).join(60)
    assert sorted(job.result("sink")) == EXPECTED


def test_suspend_and_resume_at_least_once(tmp_path: Path) -> None:
    """A suspension's terminal barrier always aligns, so even at-least-once counts exactly."""
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 3)
    job = LocalRunner(3).submit(counting_dag(gate=gate), config(ProcessingGuarantee.AT_LEAST_ONCE))
    suspend_at_gate(job, gate)
    gate.open()
    job.resume().join(60)
    assert sorted(job.result("sink")) == EXPECTED


def failing_once(state: dict[str, Any], at: int = COUNT // 2) -> Callable[[int], int]:
    """A step that raises RestartableError once, at the first item from `at` on; it records
    `failed` and `snapshot_at_failure` (the id of the job's last snapshot then) in `state`."""
    state["failed"] = False

    def fail_once(x: int) -> int:
        if not state["failed"] and x >= at:
            state["failed"] = True
            last = state["job"].last_snapshot
            state["snapshot_at_failure"] = -1 if last is None else last.snapshot_id
            raise RestartableError(f"injected failure at item {x}")
        return x

    return fail_once


def run_failing_once_after_snapshots(
    job: LocalJob, gate: Gate, state: dict[str, Any], timeout: float = 60
) -> None:
    """With the source held below the failing item, wait for two snapshots, then let it fail."""
    state["job"] = job
    wait_until(
        lambda: job.snapshot_count >= 2 or job.status is not JobStatus.RUNNING, "two snapshots", timeout
    )
    gate.open()
    job.join(timeout)


@pytest.mark.parametrize("members", [1, 3])
def test_restart_from_the_last_snapshot_after_a_failure(tmp_path: Path, members: int) -> None:
    """A step fails once, mid-stream: the job restarts from its last snapshot, counts stay exact."""
    state: dict[str, Any] = {}
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    job = LocalRunner(members).submit(counting_dag(step=failing_once(state), gate=gate), config())
    run_failing_once_after_snapshots(job, gate, state)
    assert state["failed"], "the failure was injected"
    assert state["snapshot_at_failure"] >= 1
    assert sorted(job.result("sink")) == EXPECTED


def test_flat_map_output_held_back_by_a_full_queue_is_not_lost_at_a_snapshot(tmp_path: Path) -> None:
    """Each item expands to more outputs than the outbox takes in one call (1024), into a queue of
    1: every item leaves the flat_map with output pending, at snapshots too. No output may be lost
    or repeated across a suspension. The source is slower than the flat_map, so that the
    suspension's barrier does not queue up behind every item; it waits at a gate half-way, so
    that the suspension comes mid-stream."""
    count, fan = 12, 2000
    gate = Gate(tmp_path / "gate", hold_at=count // 2)
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=count, items_per_second=10))
    expand = dag.new_vertex("expand", P.flat_map(lambda x: [(x, j) for j in range(fan)]))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, expand))
    dag.edge(Edge.between(expand, sink).with_queue_size(1))
    job = LocalRunner(1).submit(dag, config())
    wait_until(lambda: len(job.result("sink")) >= count * fan // 4)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    assert len(job.result("sink")) <= count // 2 * fan, "the source went past its gate"
    gate.open()
    job.resume().join(60)
    result = Counter(job.result("sink"))
    assert len(result) == count * fan
    assert max(result.values()) == 1


def test_suspend_refuses_a_job_that_already_ended() -> None:
    """A finished job cannot be suspended: the error says so at once, not later from resume()."""
    from jetspark import processors as P
    from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee

    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(10)))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, sink))
    job = LocalRunner().run(dag, JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE))
    with pytest.raises(ValueError, match="only a running job can be suspended"):
        job.suspend()
    assert job.status is JobStatus.COMPLETED

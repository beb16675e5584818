"""Snapshot and restore end to end: a streaming source, a fused step and a two-stage aggregation,
suspended and resumed (also on another member count) or restarted after a failure; the final
counts are exact, with nothing lost and nothing counted twice."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee, RestartableError
from jetspark.runners.local import JobStatus, LocalJob, LocalRunner
from tests.waiting import wait_until

COUNT = 3000
RATE = 4000  # items per second for the whole source vertex: the job streams for about 0.75 s


def config(guarantee: ProcessingGuarantee = ProcessingGuarantee.EXACTLY_ONCE) -> JobConfig:
    return JobConfig(processing_guarantee=guarantee, snapshot_interval_millis=15)


def key_of(x: int) -> int:
    return x % 13


def counting_dag(step: Callable[[int], int] = lambda x: x, lp: int = -1) -> DAG:
    """generator -> fused(map, filter) -> aggregate_by_key(count) -> sink."""
    dag = DAG()
    source = dag.new_vertex("source", P.generator_stream(count=COUNT, items_per_second=RATE), lp)
    fused = dag.new_vertex("fused", P.fused(P.Chain().map(step).filter(lambda x: x % 10 != 9)), lp)
    dag.edge(Edge.between(source, fused))
    counts = P.aggregate_by_key(dag, "counts", fused, key_of, P.counting())
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(counts, sink).distributed())
    return dag


EXPECTED = sorted(Counter(key_of(x) for x in range(COUNT) if x % 10 != 9).items())


def emitted(job: LocalJob) -> int:
    return job.metrics().get("source", {}).get("emitted", 0)


def suspend_mid_stream(job: LocalJob, after: int) -> None:
    wait_until(lambda: emitted(job) >= after)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    assert emitted(job) < COUNT, "the source had finished before the suspension"


@pytest.mark.parametrize(("members", "resume_members"), [(1, 1), (3, 3), (1, 3), (3, 1), (2, 3)])
def test_suspend_and_resume_counts_exactly(members: int, resume_members: int) -> None:
    job = LocalRunner(members).submit(counting_dag(), config())
    suspend_mid_stream(job, after=COUNT // 4)
    assert job.snapshot_count >= 2, "periodic snapshots came before the terminal one"
    job.resume(member_count=resume_members).join(60)
    assert sorted(job.result("sink")) == EXPECTED


def test_several_suspensions_on_changing_member_counts() -> None:
    job = LocalRunner(2).submit(counting_dag(lp=2), config())
    for after, members in ((COUNT // 5, 3), (COUNT // 2, 1)):
        suspend_mid_stream(job, after)
        job.resume(member_count=members)
    job.join(60)
    assert sorted(job.result("sink")) == EXPECTED


def test_suspend_and_resume_at_least_once() -> None:
    """A suspension's terminal barrier always aligns, so even at-least-once counts exactly."""
    job = LocalRunner(3).submit(counting_dag(), config(ProcessingGuarantee.AT_LEAST_ONCE))
    suspend_mid_stream(job, after=COUNT // 3)
    job.resume().join(60)
    assert sorted(job.result("sink")) == EXPECTED


def failing_once(state: dict[str, Any]) -> Callable[[int], int]:
    """A step that raises RestartableError once, mid-stream, after `state["job"]` took two snapshots;
    it records `failed` and `snapshot_at_failure` in `state`."""
    state["failed"] = False

    def fail_once(x: int) -> int:
        job = state.get("job")
        if not state["failed"] and x >= COUNT // 2 and job is not None and job.snapshot_count >= 2:
            state["failed"] = True
            state["snapshot_at_failure"] = job.last_snapshot.snapshot_id
            raise RestartableError(f"injected failure at item {x}")
        return x

    return fail_once


@pytest.mark.parametrize("members", [1, 3])
def test_restart_from_the_last_snapshot_after_a_failure(members: int) -> None:
    """A step fails once, mid-stream: the job restarts from its last snapshot, counts stay exact."""
    state: dict[str, Any] = {}
    job = LocalRunner(members).submit(counting_dag(step=failing_once(state)), config())
    state["job"] = job
    job.join(60)
    assert state["failed"], "the failure was injected"
    assert state["snapshot_at_failure"] >= 1
    assert sorted(job.result("sink")) == EXPECTED


def test_flat_map_output_held_back_by_a_full_queue_is_not_lost_at_a_snapshot() -> None:
    """Each item expands to more outputs than the outbox takes in one call (1024), into a queue of
    1: every item leaves the flat_map with output pending, at snapshots too. No output may be lost
    or repeated across a suspension. The source is slower than the flat_map, so that the
    suspension's barrier does not queue up behind every item."""
    count, fan = 12, 2000
    dag = DAG()
    source = dag.new_vertex("source", P.generator_stream(count=count, items_per_second=10))
    expand = dag.new_vertex("expand", P.flat_map(lambda x: [(x, j) for j in range(fan)]))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, expand))
    dag.edge(Edge.between(expand, sink).with_queue_size(1))
    job = LocalRunner(1).submit(dag, config())
    wait_until(lambda: len(job.result("sink")) >= count * fan // 4)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    assert len(job.result("sink")) < count * fan, "the job ended before the suspension"
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

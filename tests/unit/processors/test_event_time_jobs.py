"""Window, session and join state in whole jobs on the local runner: suspended mid-stream and
resumed on another member count, suspended while a window emits at the end, and a window join
across members; each against a plain-Python reference."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.processors import WindowPolicy
from jetspark.runners.local import JobStatus, LocalRunner
from tests.gates import Gate, ask_to_suspend, gated_pass, gated_stream
from tests.unit.processors.windowing import results_counter, session_counts, window_counts
from tests.waiting import wait_until

ts_of = operator.itemgetter(0)
key_of = operator.itemgetter(1)
POLICY = WindowPolicy.sliding(60, 20)
GAP = 7


def event(seq: int) -> tuple[int, str]:
    """Timestamps rise with the sequence, with holes (so sessions end), over five keys."""
    return (seq + 10 * (seq // 50), "abcde"[(seq * 7) % 5])


def windowed_dag(source: Any) -> DAG:
    dag = DAG()
    src = dag.new_vertex("source", source)
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of, throttling_frame_size=POLICY.frame_size))
    dag.edge(Edge.between(src, stamps).isolated())
    windows = P.window_aggregate(dag, "windows", stamps, key_of, ts_of, POLICY, P.counting())
    session = dag.new_vertex("sessions", P.aggregate_to_session_window(key_of, ts_of, GAP, P.counting()))
    dag.edge(Edge.from_(stamps, 1).to(session).partitioned(key_of).distributed())
    for name, vertex in [("window-sink", windows), ("session-sink", session)]:
        sink = dag.new_vertex(name, P.collect())
        dag.edge(Edge.between(vertex, sink).distributed())
    return dag


@pytest.mark.parametrize(("members", "resume_members"), [(1, 3), (3, 1), (2, 3)])
def test_window_and_session_state_survive_suspend_and_resume_on_another_member_count(
    tmp_path: Path, members: int, resume_members: int
) -> None:
    count, held = 1200, 500
    gate = Gate(tmp_path / "gate", hold_at=held)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=20)
    job = LocalRunner(members).submit(windowed_dag(gated_stream(gate, count=count, fn=event)), config)
    wait_until(lambda: job.metrics().get("source", {}).get("emitted", 0) >= held)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    assert job.last_snapshot is not None and job.last_snapshot.data.get("windows")
    gate.open()
    job.resume(member_count=resume_members).join(60)
    events = [event(n) for n in range(count)]
    assert results_counter(job.result("window-sink")) == window_counts(POLICY, events)
    assert results_counter(job.result("session-sink")) == session_counts(events, GAP)
    assert job.metrics()["windows-frames"]["late_items_dropped"] == 0


def test_suspend_while_a_window_emits_at_the_end_repeats_no_result(tmp_path: Path) -> None:
    """Back-pressure from a held step stops stage 2 part-way through its final emission; the
    snapshot taken then must record which keys' results went out (their floors)."""
    keys, held = 400, 50
    gate = Gate(tmp_path / "gate", hold_at=held)
    events = [(t, k) for k in range(keys) for t in (1, 25)]
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(events))
    windows = P.window_aggregate(dag, "windows", source, key_of, ts_of, POLICY, P.counting())
    step = dag.new_vertex("held", gated_pass(gate), 1)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(windows, step))
    dag.edge(Edge.between(step, sink))
    for edge in dag.edges:
        edge.with_queue_size(1)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=200)
    job = LocalRunner(2, batch_size=1).submit(dag, config)
    wait_until(lambda: job.metrics().get("windows", {}).get("emitted", 0) >= held, timeout=120)
    ask_to_suspend(job)
    gate.open()
    wait_until(lambda: job.status is not JobStatus.RUNNING, "the suspension", timeout=120)
    assert job.status is JobStatus.SUSPENDED, job.error
    assert job.metrics()["windows"]["emitted"] < len(window_counts(POLICY, events)), "suspended mid-emission"
    job.resume(member_count=3).join(120)
    assert results_counter(job.result("sink")) == window_counts(POLICY, events)


def test_window_join_across_members() -> None:
    left = [(t, t % 4, f"L{t}") for t in range(0, 200, 3)]
    right = [(t, t % 4, f"R{t}") for t in range(0, 200, 5)]
    policy = WindowPolicy.tumbling(30)
    dag = DAG()
    sources = []
    for name, items in [("left", left), ("right", right)]:
        src = dag.new_vertex(name, P.from_iterable(items), 1)
        stamps = dag.new_vertex(f"{name}-stamps", P.insert_watermarks(ts_of, allowed_lag=0), 1)
        dag.edge(Edge.between(src, stamps).isolated())
        sources.append(stamps)
    join = dag.new_vertex("join", P.window_join(key_of, key_of, ts_of, ts_of, policy))
    dag.edge(Edge.between(sources[0], join).partitioned(key_of).distributed())
    dag.edge(Edge.from_(sources[1]).to(join, 1).partitioned(key_of).distributed())
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(join, sink))
    job = LocalRunner(3).run(dag, JobConfig(), timeout=60)
    expected = sorted(
        (a[2], b[2])
        for a in left
        for b in right
        if a[1] == b[1] and policy.frame_end(a[0]) == policy.frame_end(b[0])
    )
    assert sorted((a[2], b[2]) for a, b in job.result("sink")) == expected
    assert job.metrics()["join"]["late_items_dropped"] == 0

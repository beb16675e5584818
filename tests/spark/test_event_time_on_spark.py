"""Event-time processors on Spark `local[2]`: a batch job with a two-stage sliding window, session
windows and a hash join across shuffles; and a streaming job whose window state (frames, the next
window to emit, the watermark generators' tops) crosses committed epochs."""

from __future__ import annotations

import operator
import random
from pathlib import Path
from typing import Any

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.processors import WindowPolicy
from jetspark.runners.job import JobStatus
from jetspark.runners.spark.runner import SparkRunner
from tests.gates import Gate, gated_stream
from tests.unit.processors.windowing import results_counter, session_counts, window_counts
from tests.waiting import wait_until

ts_of = operator.itemgetter(0)
key_of = operator.itemgetter(1)
POLICY = WindowPolicy.sliding(20, 5)
_RNG = random.Random(5)
EVENTS = sorted((_RNG.randrange(0, 500), _RNG.choice("abcdef")) for _ in range(600))
PAGES = {"a": "home", "b": "about", "c": "cart"}


def test_windows_sessions_and_a_hash_join_in_a_batch_job(spark: Any) -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(EVENTS))
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of, allowed_lag=0))
    dag.edge(Edge.between(source, stamps).isolated())
    windows = P.window_aggregate(dag, "windows", stamps, key_of, ts_of, POLICY, P.counting())
    sessions = dag.new_vertex("sessions", P.aggregate_to_session_window(key_of, ts_of, 30, P.counting()))
    dag.edge(Edge.from_(stamps, 1).to(sessions).partitioned(key_of).distributed())
    pages = dag.new_vertex("pages", P.from_iterable(sorted(PAGES.items())))
    join = dag.new_vertex("join", P.hash_join(key_of, operator.itemgetter(0)))
    dag.edge(Edge.from_(stamps, 2).to(join).distributed())
    dag.edge(Edge.from_(pages).to(join, 1).broadcast().distributed().with_priority(-1))
    for name, vertex in [("window-sink", windows), ("session-sink", sessions), ("join-sink", join)]:
        sink = dag.new_vertex(name, P.collect())
        dag.edge(Edge.between(vertex, sink).distributed())
    job = SparkRunner(spark).run(dag, JobConfig(), timeout=300)
    # Items reach a window stage in another order than the source's (several producers per
    # shuffle), so late items are possible only if a generator's own stream went back in time,
    # which sorted events per processor slice never do.
    assert results_counter(job.result("window-sink")) == window_counts(POLICY, EVENTS)
    assert job.metrics()["windows-frames"]["emitted"] > 0
    assert job.metrics()["windows-frames"]["late_items_dropped"] == 0  # processors' counters reach the driver
    assert results_counter(job.result("session-sink")) == session_counts(EVENTS, 30)
    joined = sorted(job.result("join-sink"))
    assert joined == sorted((e, (e[1], PAGES[e[1]])) for e in EVENTS if e[1] in PAGES)


def event(seq: int) -> tuple[int, str]:
    return (seq, "abc"[seq % 3])


def test_window_state_crosses_committed_epochs(spark: Any, tmp_path: Path) -> None:
    """The source waits half-way at a gate until two epochs committed, so windows are open when
    an epoch's snapshot is taken and restored in the next one."""
    count = 3000
    gate = Gate(tmp_path / "gate", hold_at=1500)
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=count, fn=event))
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of))
    dag.edge(Edge.between(source, stamps).isolated())
    windows = P.window_aggregate(
        dag, "windows", stamps, key_of, ts_of, WindowPolicy.sliding(100, 25), P.counting()
    )
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(windows, sink).distributed())
    config = JobConfig(
        name="windows",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=200,
        checkpoint_root=str(tmp_path / "ck"),
    )
    job = SparkRunner(spark).submit(dag, config)
    wait_until(lambda: job.epochs_committed >= 2 or job.status is not JobStatus.RUNNING, timeout=120)
    gate.open()
    job.join(300)
    assert job.status is JobStatus.COMPLETED
    assert job.epochs_committed >= 2
    events = [event(n) for n in range(count)]
    assert results_counter(job.result("sink")) == window_counts(WindowPolicy.sliding(100, 25), events)
    assert job.metrics()["windows"]["late_items_dropped"] == 0

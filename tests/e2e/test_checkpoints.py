"""Snapshots in a checkpoint directory (`JobConfig.checkpoint_root`) on the local runner: a job
whose driver died resumes when submitted again under its name; damaged files are found and named;
exported snapshots start other jobs; a finished job leaves nothing behind."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import pytest

from jetspark import processors as P
from jetspark.checkpoint import CheckpointStore, CorruptSnapshotError
from jetspark.core import DAG, DagValidationError, Edge, JobCancelledError, JobConfig, ProcessingGuarantee
from jetspark.runners.identity import CompletedBefore
from jetspark.runners.local import JobStatus, LocalRunner
from tests.e2e.test_snapshots import (
    COUNT,
    EXPECTED,
    counting_dag,
    failing_once,
    key_of,
    run_failing_once_after_snapshots,
    suspend_at_gate,
)
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def durable(
    root: str, name: str = "counting", guarantee: ProcessingGuarantee = ProcessingGuarantee.EXACTLY_ONCE
) -> JobConfig:
    return JobConfig(
        name=name, processing_guarantee=guarantee, snapshot_interval_millis=15, checkpoint_root=root
    )


def committed_id(store_dir: Path) -> int:
    """The snapshot LATEST names, read without opening a store (that would tidy up the directory)."""
    try:
        return int(json.loads((store_dir / "LATEST").read_text())["snapshot_id"])
    except (FileNotFoundError, ValueError):
        return -1


def test_a_job_whose_driver_was_killed_resumes_from_its_committed_snapshot(tmp_path: Path) -> None:
    root = str(tmp_path / "checkpoints")
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    script = textwrap.dedent(f"""
        from jetspark.runners.local import LocalRunner
        from tests.e2e.test_checkpoints import durable
        from tests.e2e.test_snapshots import counting_dag
        from tests.gates import Gate
        LocalRunner(2).run(counting_dag(gate=Gate.at({gate.path!r})), durable({root!r}), timeout=120)
    """)
    driver = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    store_dir = Path(root) / "counting"
    try:
        wait_until(lambda: committed_id(store_dir) >= 1 or driver.poll() is not None, timeout=60)
        assert driver.poll() is None, "the driver ended before it was killed"
    finally:
        os.kill(driver.pid, signal.SIGKILL)  # the driver dies at once, held mid-stream at the gate
        driver.wait()
    committed = CheckpointStore(root, "counting").latest_id()
    assert committed is not None and committed >= 1

    steps: list[int] = []

    def step(x: int) -> int:
        steps.append(x)
        return x

    job = LocalRunner(2).submit(counting_dag(step=step), durable(root))
    job.join(60)
    assert sorted(job.result("sink")) == EXPECTED
    assert 0 < len(steps) < COUNT, "the resumed job went on from the snapshot, not from the start"
    assert job.last_snapshot is None or job.last_snapshot.snapshot_id > committed
    assert sorted(p.name for p in store_dir.iterdir()) == ["DRIVER", "JOB"], (
        "a completed job's snapshots are deleted"
    )


@pytest.mark.parametrize("where", ["local", "memory"])
def test_a_suspended_job_resumes_in_another_runner_from_the_store(tmp_path: Path, where: str) -> None:
    root = str(tmp_path) if where == "local" else f"memory://jetspark-{uuid.uuid4().hex[:8]}"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 3)
    job = LocalRunner(3).submit(counting_dag(gate=gate), durable(root))
    suspend_at_gate(job, gate)
    gate.open()
    resumed = LocalRunner(2).submit(counting_dag(gate=gate), durable(root))  # another member count too
    resumed.join(60)
    assert sorted(resumed.result("sink")) == EXPECTED
    assert resumed.job_id == job.job_id, "the job id (and so its transaction ids) carries over"


def test_a_restart_after_a_failure_restores_from_the_store(tmp_path: Path) -> None:
    state: dict[str, Any] = {}
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    job = LocalRunner(2).submit(counting_dag(step=failing_once(state), gate=gate), durable(str(tmp_path)))
    run_failing_once_after_snapshots(job, gate, state)
    assert state["failed"]
    assert sorted(job.result("sink")) == EXPECTED


def damage_latest(root: Path, name: str = "counting") -> Path:
    store = CheckpointStore(str(root), name)
    manifest = store.latest()
    assert manifest is not None
    victim = max((Path(manifest.directory) / f.name for f in manifest.files), key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    return victim


def test_a_damaged_snapshot_stops_an_exactly_once_job_naming_the_file(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 3)
    job = LocalRunner(2).submit(counting_dag(gate=gate), durable(str(tmp_path)))
    suspend_at_gate(job, gate)
    victim = damage_latest(tmp_path)
    with pytest.raises(CorruptSnapshotError) as caught:
        LocalRunner(2).submit(counting_dag(), durable(str(tmp_path)))
    assert caught.value.path == str(victim) and victim.name in str(caught.value)


def test_an_at_least_once_job_falls_back_to_the_previous_snapshot(tmp_path: Path) -> None:
    config = durable(str(tmp_path), guarantee=ProcessingGuarantee.AT_LEAST_ONCE)
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 3)
    job = LocalRunner(2).submit(counting_dag(gate=gate), config)
    suspend_at_gate(job, gate, snapshots=1)  # the terminal snapshot is the second one
    store = CheckpointStore(str(tmp_path), "counting")
    assert len(store.committed_ids()) >= 2
    damage_latest(tmp_path)
    resumed = LocalRunner(2).submit(counting_dag(), config)
    resumed.join(60)
    assert sorted(resumed.result("sink")) == EXPECTED


def test_an_exported_snapshot_starts_a_job_of_another_name(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    job = LocalRunner(2).submit(counting_dag(gate=gate), durable(str(tmp_path)))
    wait_until(lambda: job.snapshot_count >= 1)
    exported = job.export_snapshot("half-way")  # the source waits at the gate: the job still runs
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(30)
    assert job.status is JobStatus.CANCELLED
    assert not (tmp_path / "counting").exists(), "a cancelled job's snapshots are deleted"
    config = durable(str(tmp_path), name="from-export")
    config.initial_snapshot_name = "half-way"
    started = LocalRunner(1).submit(counting_dag(), config)  # a new runner: only the store knows it
    started.join(60)
    assert sorted(started.result("sink")) == EXPECTED
    assert exported.snapshot_id >= 0 and (tmp_path / "exported" / "half-way" / "manifest.json").exists()


def test_a_job_name_that_cannot_name_a_directory_is_refused_at_submit(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot name a checkpoint directory"):
        LocalRunner().submit(counting_dag(), durable(str(tmp_path), name="../escape"))
    assert list(tmp_path.iterdir()) == []


def test_resumed_counts_are_exact_whatever_snapshot_the_driver_died_after(tmp_path: Path) -> None:
    """Suspend at several points; each time submit again in a fresh runner; the sum is exact."""
    root = str(tmp_path)
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 6)
    job = LocalRunner(2).submit(counting_dag(gate=gate), durable(root))
    for stop in range(1, 4):
        suspend_at_gate(job, gate, start=(stop - 1) * COUNT // 6)  # each job object counts from 0
        gate.hold_at((stop + 1) * COUNT // 6 if stop < 3 else COUNT)
        job = LocalRunner(2).submit(counting_dag(gate=gate), durable(root))
    job.join(60)
    assert Counter(dict(job.result("sink"))) == Counter(dict(EXPECTED))


def test_a_resumed_job_keeps_the_files_it_wrote_and_every_line_is_there_once(tmp_path: Path) -> None:
    """The output directory holds the job's own files when it is submitted again: not refused."""
    out = tmp_path / "out"

    def dag() -> Any:
        from jetspark import DAG, Edge
        from jetspark import processors as P

        graph = DAG()
        source = graph.new_vertex("source", gated_stream(gate, count=COUNT))
        sink = graph.new_vertex("sink", P.files(str(out)))
        graph.edge(Edge.between(source, sink))
        return graph

    gate = Gate(tmp_path / "gate", hold_at=COUNT // 3)
    config = durable(str(tmp_path / "checkpoints"), name="writing")
    job = LocalRunner(2).submit(dag(), config)
    suspend_at_gate(job, gate)
    assert any(out.iterdir()), "the first run wrote output"
    gate.open()
    LocalRunner(2).submit(dag(), config).join(60)
    lines = [line for path in out.glob("sink-*") for line in path.read_text().splitlines()]
    assert Counter(lines) == Counter(str(i) for i in range(COUNT))
    again = LocalRunner(2).submit(dag(), config)  # completed: nothing runs again
    assert isinstance(again, CompletedBefore) and again.status is JobStatus.COMPLETED
    assert Counter(line for path in out.glob("sink-*") for line in path.read_text().splitlines()) == Counter(
        str(i) for i in range(COUNT)
    )
    with pytest.raises(DagValidationError, match="already holds"):  # started over: a new job of that name
        LocalRunner(2).submit(dag(), attrs.evolve(config, start_over=True))


def counts_named(name: str, gate: Gate) -> DAG:
    """A gated stream counted per key by an aggregation named `name`."""
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=COUNT))
    counts = P.aggregate_by_key(dag, name, source, key_of, P.counting())
    dag.edge(Edge.between(counts, dag.new_vertex("sink", P.collect())).distributed())
    return dag


def test_a_resubmitted_job_whose_stateful_vertex_was_renamed_warns_that_its_state_is_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A job suspended (or killed) and submitted again with a stateful vertex renamed: the new name
    restores nothing and the old name's state is read by no one. As in Jet's upgrades that is
    allowed, but one warning names the vertices whose state is dropped."""
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 3)
    job = LocalRunner(2).submit(counts_named("counts", gate), durable(str(tmp_path)))
    suspend_at_gate(job, gate)
    gate.open()
    caplog.set_level(logging.WARNING, logger="jetspark.snapshots")
    resumed = LocalRunner(2).submit(counts_named("per-key", gate), durable(str(tmp_path)))
    resumed.join(60)
    dropped = [m for m in caplog.messages if "which this DAG has no more" in m]
    assert len(dropped) == 1, caplog.messages
    assert re.search(r"vertex 'counts(-prepare)?'", dropped[0]) and "'source'" not in dropped[0], dropped[0]
    counted = sum(count for _, count in resumed.result("sink"))
    assert counted == COUNT - COUNT // 3, "the renamed vertex started empty: it counts what followed"

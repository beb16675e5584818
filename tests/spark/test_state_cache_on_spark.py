"""The state cache on Spark (`runners.spark.state_cache`): a member's keyed-count processors stay
in the Python worker between epochs when the committed snapshot is theirs, else restore from the
store; either way the output is exact, and every restore is counted as a hit or a miss."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from examples.streaming_counts import RunningCount, expected_rows, format_row, key_of, streaming_dag
from jetspark import DAG, Edge
from jetspark.checkpoint import CheckpointStore
from jetspark.core import JobConfig, ProcessingGuarantee
from jetspark.processors import WindowPolicy, aggregate_to_sliding_window, counting, transactional_files
from jetspark.processors.transactional import read_lines
from jetspark.runners.job import JobStatus
from jetspark.runners.spark.runner import SparkRunner
from jetspark.runners.spark.state_cache import HITS, MISSES
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

pytestmark = pytest.mark.spark


def two_members(name: str, root: str) -> JobConfig:
    return JobConfig(
        name=name,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=100,
        checkpoint_root=root,
        member_count=2,
    )


def test_kept_or_restored_the_counts_are_exact_and_every_restore_is_a_hit_or_a_miss(
    spark: Any, tmp_path: Path
) -> None:
    out = str(tmp_path / "out")
    gate = Gate(tmp_path / "gate", hold_at=3000)
    config = two_members("kept", str(tmp_path / "ck"))
    job = SparkRunner(spark).submit(streaming_dag(out, 6000, source=gated_stream(gate, count=6000)), config)
    wait_until(lambda: job.epochs_committed >= 6 or job.status is not JobStatus.RUNNING, timeout=180)
    gate.open()
    job.join(180)
    assert job.status is JobStatus.COMPLETED
    assert sorted(read_lines(out)) == expected_rows(6000)
    figures = job.metrics()["counts"]
    restores = figures.get(HITS, 0) + figures.get(MISSES, 0)
    # each committed epoch after the first restored both members' counts (hit or miss)
    assert restores >= 2 * 5, figures
    assert HITS not in job.metrics()["source"] and MISSES not in job.metrics()["files"]


def test_resumed_on_another_member_count_restores_from_the_store(spark: Any, tmp_path: Path) -> None:
    """Suspended on 2 members, resumed on 3: nothing kept at 2 members may serve the 3-member
    layout (another member count is a miss), and the rows stay exact."""
    out, root = str(tmp_path / "out"), tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=3000)
    config = two_members("kept-rescaled", str(root))
    job = SparkRunner(spark).submit(streaming_dag(out, 6000, source=gated_stream(gate, count=6000)), config)
    wait_until(lambda: job.epochs_committed >= 4 or job.status is not JobStatus.RUNNING, timeout=180)
    job.suspend()
    gate.open()
    again = SparkRunner(spark).submit(
        streaming_dag(out, 6000, source=gated_stream(gate, count=6000)), attrs.evolve(config, member_count=3)
    )
    again.join(180)
    assert again.member_count == 3
    assert sorted(read_lines(out)) == expected_rows(6000)
    first = again.metrics()["counts"]
    assert first.get(MISSES, 0) >= 3, (
        f"the first 3-member epoch restored all 3 members from the store: {first}"
    )


class ChangedCount(RunningCount):
    """`RunningCount` that names the keys it changed since its last save (incremental snapshots)."""

    def __init__(self) -> None:
        super().__init__()
        self.changed: set[int] = set()

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not super().try_process_item(ordinal, item):
            return False
        self.changed.add(key_of(item))
        return True

    def changed_snapshot_keys(self) -> set[int]:
        changed, self.changed = self.changed, set()
        return changed


def incremental_dag(out: str, source: Any) -> DAG:
    dag = DAG()
    source_vertex = dag.new_vertex("source", source)
    counts = dag.new_vertex("counts", ChangedCount)
    dag.edge(Edge.between(source_vertex, counts).partitioned(key_of).distributed())
    files = dag.new_vertex("files", transactional_files(out, format_row))
    dag.edge(Edge.between(counts, files).distributed())
    return dag


def test_incremental_snapshots_count_exactly_across_epochs_and_a_rescale(spark: Any, tmp_path: Path) -> None:
    """The counts vertex writes deltas (its processors name what changed); the job is suspended,
    its last snapshot is checked to be a delta, and it resumes on 3 members (full files again)."""
    out, root = str(tmp_path / "out"), tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=3000)
    config = two_members("deltas", str(root))
    job = SparkRunner(spark).submit(incremental_dag(out, gated_stream(gate, count=6000)), config)
    wait_until(lambda: job.epochs_committed >= 4 or job.status is not JobStatus.RUNNING, timeout=180)
    job.suspend()
    manifest = CheckpointStore(str(root), "deltas", tidy=False).latest()
    assert manifest is not None
    counts = [f for f in manifest.files if f.vertex == "counts"]
    assert len(counts) == 2 and all(f.chain for f in counts), "the counts were saved as deltas"
    assert all(not f.chain for f in manifest.files if f.vertex != "counts"), (
        "only processors that name changes"
    )
    gate.open()
    again = SparkRunner(spark).submit(
        incremental_dag(out, gated_stream(gate, count=6000)), attrs.evolve(config, member_count=3)
    )
    again.join(180)
    assert again.status is JobStatus.COMPLETED
    assert sorted(read_lines(out)) == expected_rows(6000)


def window_row(result: Any) -> str:
    return f"{result.start} {result.key} {result.value}"


def window_dag(out: str, source: Any) -> DAG:
    """Items 0.. with event time = item; a count per item % 500 in tumbling windows of 1000 (the
    state: 500 keys of the open window), two window processors per member (so a member's file
    holds two next-window broadcast entries)."""
    dag = DAG()
    source_vertex = dag.new_vertex("source", source)
    windows = dag.new_vertex(
        "windows",
        aggregate_to_sliding_window(five_hundred, identity, WindowPolicy.tumbling(1000), counting()),
        2,
    )
    dag.edge(Edge.between(source_vertex, windows).partitioned(five_hundred).distributed())
    files = dag.new_vertex("files", transactional_files(out, window_row))
    dag.edge(Edge.between(windows, files).distributed())
    return dag


def five_hundred(item: int) -> int:
    return item % 500


def identity(item: int) -> int:
    return item


def windows_chained(root: Path, job_id: str) -> bool:
    """The last committed snapshot's window files are deltas (a full one comes every so often)."""
    manifest = CheckpointStore(str(root), job_id, tidy=False).latest()
    files = [] if manifest is None else [f for f in manifest.files if f.vertex == "windows"]
    return len(files) == 2 and all(f.chain for f in files)


def test_a_built_in_window_writes_deltas_and_resumes_exactly_on_another_member_count(
    spark: Any, tmp_path: Path
) -> None:
    """The window vertex's files become deltas (changed keys, deletions of emitted windows, and
    the next-window broadcast entries of both processors of a member); suspended, resumed on 3
    members, every window's count comes out exactly once."""
    out, root = str(tmp_path / "out"), tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=3000)
    config = two_members("window-deltas", str(root))
    source = gated_stream(gate, count=6000, timestamp_fn=identity)
    job = SparkRunner(spark).submit(window_dag(out, source), config)
    wait_until(
        lambda: windows_chained(root, "window-deltas") or job.status is not JobStatus.RUNNING, timeout=180
    )
    assert job.status is JobStatus.RUNNING, job.error
    job.suspend()
    gate.open()
    again = SparkRunner(spark).submit(
        window_dag(out, gated_stream(gate, count=6000, timestamp_fn=identity)),
        attrs.evolve(config, member_count=3),
    )
    again.join(180)
    assert again.status is JobStatus.COMPLETED
    expected = sorted(
        f"{start} {key} {sum(1 for i in range(start, start + 1000) if i % 500 == key)}"
        for start in range(0, 6000, 1000)
        for key in range(500)
    )
    assert sorted(read_lines(out)) == expected

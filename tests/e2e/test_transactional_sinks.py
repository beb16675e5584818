"""The transactional sinks (`transactional_files`, `postgres`) on the local runner: after a restart
from a snapshot every row is there exactly once, and nothing is left uncommitted."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from examples.streaming_counts import expected_rows, streaming_dag
from jetspark.core import JobConfig, ProcessingGuarantee, RestartableError
from jetspark.processors.transactional import read_lines
from jetspark.runners.local import LocalRunner

COUNT = 6000


def failing_after_snapshots(state: dict[str, Any]) -> Any:
    """A step that raises RestartableError once, at the first item after two snapshots (however
    slow the machine, the stream is still running then: it lasts many snapshot intervals)."""

    def step(x: int) -> int:
        job = state.get("job")
        if not state.get("failed") and job is not None and job.snapshot_count >= 2:
            state["failed"] = True
            raise RestartableError(f"injected at {x}")
        return x

    return step


def run_with_one_failure(out: str, dsn: str | None = None) -> None:
    state: dict[str, Any] = {}
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=20)
    # Slower with PostgreSQL: its round trips wait for the GIL behind the busy cooperative loop, so
    # its snapshots come seldom (about one per 0.4 s here); the stream must outlast two of them.
    rate = 8000 if dsn is None else 2000
    job = LocalRunner(2).submit(streaming_dag(out, COUNT, rate, dsn, failing_after_snapshots(state)), config)
    state["job"] = job
    job.join(120)
    assert state.get("failed"), "the failure was never injected"


def test_transactional_files_hold_every_row_once_after_a_restart(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    run_with_one_failure(out)
    assert sorted(read_lines(out)) == expected_rows(COUNT)
    assert not [n for n in os.listdir(out) if n.startswith(".")], "uncommitted transaction files left"


def test_postgres_holds_every_row_once_after_a_restart(tmp_path: Path, postgres_dsn: str) -> None:
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS counts")
        conn.execute("CREATE TABLE counts (k int, n int)")
    run_with_one_failure(str(tmp_path / "out"), postgres_dsn)
    with psycopg.connect(postgres_dsn) as conn:
        rows = sorted(f"{k},{n}" for k, n in conn.execute("SELECT k, n FROM counts").fetchall())
        left = conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()
    assert rows == expected_rows(COUNT)
    assert left == [], "prepared transactions left behind"


def test_without_a_guarantee_the_files_sink_commits_at_the_end(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    LocalRunner(2).run(streaming_dag(out, 500), JobConfig(), timeout=60)
    assert sorted(read_lines(out)) == expected_rows(500)


@pytest.mark.parametrize("items", [0, 1])
def test_a_transaction_without_items_leaves_no_file(tmp_path: Path, items: int) -> None:
    out = str(tmp_path / "out")
    LocalRunner(1).run(streaming_dag(out, items), JobConfig(), timeout=60)
    assert len(os.listdir(out)) == items

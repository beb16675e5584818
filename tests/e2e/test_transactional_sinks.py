"""The transactional sinks (`transactional_files`, `postgres`) on the local runner: after a restart
from a snapshot every row is there exactly once, and nothing is left uncommitted."""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from examples.streaming_counts import expected_rows, streaming_dag
from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.core import JobConfig, ProcessingGuarantee
from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.errors import RestartableError
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.processors.postgres import _PostgresP
from jetspark.processors.transactional import read_lines
from jetspark.runners.local import LocalRunner
from tests.e2e.test_snapshots import failing_once, run_failing_once_after_snapshots
from tests.gates import Gate, gated_stream

COUNT = 6000


def run_with_one_failure(gate_path: Path, out: str, dsn: str | None = None) -> None:
    """The source waits half-way at a gate until two snapshots were taken; the first item past the
    gate raises RestartableError, once, and the job restarts from the last snapshot."""
    state: dict[str, Any] = {}
    gate = Gate(gate_path, hold_at=COUNT // 2)
    # A rate, so that the sinks get the rows in small batches: a burst of thousands of rows takes
    # PostgreSQL's round trips many seconds on a loaded machine.
    rate = 8000 if dsn is None else 2000
    step = failing_once(state, at=COUNT // 2)
    source = gated_stream(gate, count=COUNT, items_per_second=rate, fn=step)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=20)
    job = LocalRunner(2).submit(streaming_dag(out, COUNT, dsn=dsn, source=source), config)
    run_failing_once_after_snapshots(job, gate, state, timeout=120)
    assert state.get("failed"), "the failure was never injected"
    assert state["snapshot_at_failure"] >= 1


def test_transactional_files_hold_every_row_once_after_a_restart(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    run_with_one_failure(tmp_path / "gate", out)
    assert sorted(read_lines(out)) == expected_rows(COUNT)
    assert not [n for n in os.listdir(out) if n.startswith(".")], "uncommitted transaction files left"


def test_postgres_holds_every_row_once_after_a_restart(tmp_path: Path, postgres_dsn: str) -> None:
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS counts")
        conn.execute("CREATE TABLE counts (k int, n int)")
    run_with_one_failure(tmp_path / "gate", str(tmp_path / "out"), postgres_dsn)
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


class _SinkReachedComplete(_PostgresP):
    """The PostgreSQL sink, telling the test when its `complete()` has returned once."""

    def __init__(self, reached: threading.Event, *args: Any) -> None:
        super().__init__(*args)
        self.reached = reached

    def complete(self) -> bool:
        done = super().complete()
        self.reached.set()
        return done


class _FailsOnceAfter(AbstractProcessor):
    """A source that emits nothing: in the first run it waits until the sink's `complete()` ran,
    then raises RestartableError; after the restart it completes."""

    def __init__(self, reached: threading.Event, state: dict[str, bool]) -> None:
        super().__init__()
        self.reached = reached
        self.state = state

    def is_cooperative(self) -> bool:
        return False

    def complete(self) -> bool:
        if not self.state.get("failed"):
            assert self.reached.wait(60), "the sink's complete() never ran"
            self.state["failed"] = True
            raise RestartableError("injected after the sink's complete()")
        return True


def test_a_sink_that_completed_commits_nothing_a_restart_replays(tmp_path: Path, postgres_dsn: str) -> None:
    """A transactional sink's `complete()` must not commit under a processing guarantee: no
    snapshot covers that commit, so a restart from the last snapshot (here: none yet, the other
    source blocks every snapshot) replays the same items, and PostgreSQL got them twice."""
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS numbers")
        conn.execute("CREATE TABLE numbers (n int)")
    reached = threading.Event()
    state: dict[str, bool] = {}
    insert = "INSERT INTO numbers (n) VALUES (%s)"
    dag = DAG()
    numbers = dag.new_vertex("numbers", P.from_iterable(range(200)), 1)
    sink = ProcessorSupplier.of(
        functools.partial(_SinkReachedComplete, reached, postgres_dsn, insert, _one_column, 1000)
    )
    db = dag.new_vertex("db", sink, 1)
    dag.edge(Edge.between(numbers, db))
    dag.new_vertex("fails", ProcessorSupplier.of(functools.partial(_FailsOnceAfter, reached, state)), 1)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=50)
    LocalRunner(1).run(dag, config, timeout=120)
    assert state.get("failed"), "the failure was never injected"
    with psycopg.connect(postgres_dsn) as conn:
        rows = sorted(n for (n,) in conn.execute("SELECT n FROM numbers").fetchall())
        left = conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()
    assert rows == list(range(200))
    assert left == [], "prepared transactions left behind"


def _one_column(n: int) -> tuple[int]:
    return (n,)


def test_a_batch_job_does_not_wait_for_the_snapshot_interval_to_commit(tmp_path: Path) -> None:
    """The sinks' last transaction is committed by a snapshot asked for when they complete, not
    by the next one the interval brings (ten minutes here: the run's timeout is one)."""
    out = str(tmp_path / "out")
    config = JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=600_000
    )
    job = LocalRunner(2).run(streaming_dag(out, 500), config, timeout=60)
    assert sorted(read_lines(out)) == expected_rows(500)
    assert job.snapshot_count >= 1

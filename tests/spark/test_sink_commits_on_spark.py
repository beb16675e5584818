"""On Spark in epochs the driver commits the sinks' transactions of snapshot `e` right after it
moves LATEST (`runners.sink_commits`), so their rows are visible before epoch `e + 1`'s stage of
the sink runs; the restore there finds them committed. If the driver cannot commit, the restore
commits them, as before. The sink's restore in the first epoch that has one is held (a hold
file), so the test looks at the table and the files at that very point."""

from __future__ import annotations

import functools
import os
import socket
import time
from pathlib import Path
from typing import Any

from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.core.inbox import Inbox
from jetspark.processors.postgres import _PostgresP
from jetspark.processors.transactional import read_lines, transactional_files
from jetspark.runners.job import JobStatus
from jetspark.runners.spark.runner import SparkRunner
from tests.spark.dags import Numbers
from tests.waiting import wait_until

COUNT = 200
INSERT = "INSERT INTO seen (tag, n) VALUES (%s, %s)"


class HeldRestore(_PostgresP):
    """The PostgreSQL sink, whose restore waits while `<holds>/restore` exists, after writing
    `<holds>/restore.reached`: the sink's stage of the epoch after a commit, held before its
    restore commits anything."""

    def __init__(self, holds: str, dsn: str) -> None:
        super().__init__(dsn, INSERT, tuple, 100_000)
        self.holds = holds

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        hold = os.path.join(self.holds, "restore")
        if os.path.exists(hold):
            Path(self.holds, "restore.reached").touch()
            while os.path.exists(hold):
                time.sleep(0.01)
        super().restore_from_snapshot(inbox)


class DriverCannotReach(HeldRestore):
    """As seen from the driver, the database is down (a port nobody listens on)."""

    def open_on_coordinator(self, job_id: str, vertex: str) -> bool:
        import psycopg

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self._control = psycopg.connect(f"host=127.0.0.1 port={port} connect_timeout=2")
        return True


def rows(dsn: str) -> list[tuple[str, int]]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return sorted(conn.execute("SELECT tag, n FROM seen").fetchall())


def prepared(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return [row[0] for row in conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()]


def run_held(spark: Any, tmp_path: Path, dsn: str, sink: type[HeldRestore]) -> tuple[Any, dict[str, Any]]:
    """Run source -> (db, files) until the db sink's first restore is held; return the job and
    what the table and the files hold then; release it and wait for the job to complete."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS seen")
        conn.execute("CREATE TABLE seen (tag text, n int)")
    holds, out = tmp_path / "holds", tmp_path / "out"
    holds.mkdir()
    (holds / "restore").touch()
    dag = DAG()
    source = dag.new_vertex("source", functools.partial(Numbers, COUNT))
    db = dag.new_vertex("db", functools.partial(sink, str(holds), dsn))
    files = dag.new_vertex("files", transactional_files(str(out), lambda item: f"{item[0]},{item[1]}"))
    dag.edge(Edge.from_(source, 0).to(db).distributed())
    dag.edge(Edge.from_(source, 1).to(files).distributed())
    config = JobConfig(
        name="driver-commits",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=200,
        checkpoint_root=str(tmp_path / "ck"),
        member_count=2,
    )
    job = SparkRunner(spark, restart_backoff=0.05).submit(dag, config)
    try:
        wait_until(
            lambda: (holds / "restore.reached").exists() or job.status is not JobStatus.RUNNING,
            "the db sink's restore in the epoch after the first commit",
            timeout=240,
        )
        assert job.status is JobStatus.RUNNING, job.status
        assert job.epochs_committed >= 1
        seen = {
            "rows": rows(dsn),
            "prepared": prepared(dsn),
            "lines": sorted(read_lines(str(out))) if out.exists() else [],
            "temp": sorted(n for n in os.listdir(out) if n.startswith(".")) if out.exists() else [],
        }
    finally:
        (holds / "restore").unlink()
    job.join(240)
    assert job.status is JobStatus.COMPLETED
    expected = sorted(("n", n) for n in range(COUNT))
    assert rows(dsn) == expected, "every row once in the table"
    assert sorted(read_lines(str(out))) == sorted(f"n,{n}" for n in range(COUNT)), "every line once"
    assert prepared(dsn) == [], "no prepared transaction is left"
    return job, seen


def test_the_rows_of_a_committed_epoch_are_visible_before_the_next_epochs_sink_stage_restores(
    spark: Any, tmp_path: Path, postgres_dsn: str
) -> None:
    job, seen = run_held(spark, tmp_path, postgres_dsn, HeldRestore)
    assert seen["rows"], "the first committed epoch wrote rows (the source emits all at once)"
    assert seen["prepared"] == [], "the driver committed every transaction of the snapshot"
    assert seen["lines"] == sorted(f"{tag},{n}" for tag, n in seen["rows"]), (
        "the files sink's transactions of the same snapshot are committed too"
    )
    assert seen["temp"] == []
    metrics = job.job_metrics()
    assert metrics["driver_sink_commits"]["db"] >= 1 and metrics["driver_sink_commits"]["files"] >= 1
    assert metrics["driver_sink_commit_failures"] == {}


def test_when_the_driver_cannot_commit_the_next_epochs_restore_commits_as_before(
    spark: Any, tmp_path: Path, postgres_dsn: str
) -> None:
    job, seen = run_held(spark, tmp_path, postgres_dsn, DriverCannotReach)
    assert seen["lines"], "the first committed epoch wrote rows (the source emits all at once)"
    assert seen["rows"] == [] and seen["prepared"], "the db's transactions wait for the restore"
    assert seen["temp"] == [], "the files sink, which the driver reaches, was committed"
    metrics = job.job_metrics()
    assert metrics["driver_sink_commit_failures"]["db"] >= 1
    assert "db" not in metrics["driver_sink_commits"] and metrics["driver_sink_commits"]["files"] >= 1


def test_a_cancelled_job_leaves_nothing_prepared_and_each_committed_row_once(
    spark: Any, tmp_path: Path, postgres_dsn: str
) -> None:
    """cancel() runs the commit-only pass, waits for the cancelled epoch's tasks to end, then the
    driver commits the last snapshot's transactions once more and rolls back the rest
    (`SinkCommits.discard_pending`): the job's directory goes, and with it every way a later run
    could settle what the sinks hold."""
    import psycopg

    from examples.streaming_counts import streaming_dag
    from jetspark.checkpoint import CheckpointStore
    from tests.gates import Gate, gated_stream

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS counts")
        conn.execute("CREATE TABLE counts (k int, n int)")
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=3000)
    config = JobConfig(
        name="cancelled",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=300,
        checkpoint_root=str(root),
        member_count=2,
    )
    dag = streaming_dag(
        str(out), None, dsn=postgres_dsn, source=gated_stream(gate, count=6000, items_per_second=4000)
    )
    job = SparkRunner(spark).submit(dag, config)
    store = CheckpointStore(str(root), "cancelled", tidy=False)
    wait_until(lambda: (store.latest_id() or -1) >= 1 or job.status is not JobStatus.RUNNING, timeout=180)
    assert job.status is JobStatus.RUNNING, job.error
    job.cancel(timeout=120)
    assert job.status is JobStatus.CANCELLED
    with psycopg.connect(postgres_dsn) as conn:
        table = [f"{k},{n}" for k, n in conn.execute("SELECT k, n FROM counts").fetchall()]
        left = conn.execute(
            "SELECT gid FROM pg_prepared_xacts WHERE gid LIKE %s", (f"{job.job_id}-%",)
        ).fetchall()
    files = read_lines(str(out))
    assert left == [], "prepared transactions of the cancelled job were left"
    assert not [name for name in os.listdir(out) if name.endswith(".tmp")], "uncommitted files were left"
    assert len(set(files)) == len(files) and len(set(table)) == len(table), "a row was committed twice"
    assert sorted(files) == sorted(table), "the two sinks committed different epochs"
    assert not (root / "cancelled").exists()
    gate.open()


def test_a_table_that_does_not_exist_fails_a_job_in_epochs_at_once(
    spark: Any, tmp_path: Path, postgres_dsn: str
) -> None:
    """A statement the server refuses is refused again by every rerun of the epoch: the sink's
    `PermanentError` fails the job at once (it aborted 6 epochs over 42 s before, with back-offs)."""
    import pytest

    from jetspark import JobFailedError
    from jetspark import processors as P

    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable([(1, 2), (3, 4)]))
    sink = dag.new_vertex(
        "db", P.postgres(postgres_dsn, "INSERT INTO no_such_table_s15 (k, v) VALUES (%s, %s)")
    )
    dag.edge(Edge.between(source, sink))
    config = JobConfig(
        name="missing-table",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=200,
        checkpoint_root=str(tmp_path / "ck"),
    )
    job = SparkRunner(spark, max_restarts=5).submit(dag, config)
    with pytest.raises(JobFailedError, match=r"PostgreSQL refused writing: UndefinedTable"):
        job.join(120)
    assert job.status is JobStatus.FAILED
    assert job.epochs_aborted <= 1 and job.restarts == 0, (job.epochs_aborted, job.restarts)

"""PostgreSQL -> jetspark on Spark -> PostgreSQL, exactly once: `postgres_cdc` in epochs, a change
stream written while an epoch fails and the job restarts from its last committed snapshot; and
`postgres_table` read in key ranges by the tasks of a batch job."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from jetspark.core import JobConfig, ProcessingGuarantee
from jetspark.processors.pgoutput import Change
from jetspark.processors.postgres_cdc import drop_slot
from jetspark.runners.job import JobStatus
from jetspark.runners.spark.runner import SparkRunner
from tests.e2e.cdc_jobs import Writer, cdc_dag, prepare_tables, sink_count, sink_rows
from tests.waiting import wait_until

pytestmark = pytest.mark.spark


def failing_at_row(row_id: int, marker: Path) -> Any:
    """A step that raises once, at the insert of `row_id`, in whichever Python worker meets it."""

    def step(change: Change) -> Change:
        if (
            change.op == "insert"
            and change.after
            and change.after["id"] == row_id
            and not os.path.exists(marker)
        ):
            marker.touch()
            raise RuntimeError(f"injected at row {row_id}")
        return change

    return step


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_changes_reach_postgres_exactly_once_across_a_failed_epoch(
    spark: Any, tmp_path: Path, postgres_dsn: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    source, sink, slot, publication = f"src_{tag}", f"sink_{tag}", f"slot_{tag}", f"pub_{tag}"
    prepare_tables(postgres_dsn, source, sink, slot, publication)
    writer = Writer(postgres_dsn, source)
    writer.start()
    marker = tmp_path / "failed"
    config = JobConfig(
        name="cdc",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=300,
        checkpoint_root=str(tmp_path / "ck"),
    )
    dag = cdc_dag(postgres_dsn, slot, publication, sink, failing_at_row(150, marker))
    job = SparkRunner(spark, restart_backoff=0.05).submit(dag, config)

    def wait_for_steps(steps: int) -> None:
        wait_until(
            lambda: (
                sink_count(postgres_dsn, sink) >= writer.changes_for(steps)
                or job.status is not JobStatus.RUNNING
            ),
            f"the first {steps} steps in the sink",
            timeout=180,
        )
        assert job.status is JobStatus.RUNNING, job.error

    try:
        writer.allow(100)
        wait_for_steps(100)
        assert not marker.exists()
        writer.allow(300)  # past the failing row, while the job runs
        wait_for_steps(300)
        job.suspend()
    finally:
        if job.status is JobStatus.RUNNING:
            job.cancel()
        writer.stop()
        drop_slot(postgres_dsn, slot)
    assert marker.exists() and job.epochs_aborted >= 1, "the failure was never injected"
    rows = sink_rows(postgres_dsn, sink)
    assert len({(lsn, seq) for lsn, seq, *_ in rows}) == len(rows), "a change was written twice"
    assert [tuple(row[2:]) for row in sorted(rows)] == writer.changes


def test_a_table_is_read_in_key_ranges_by_every_task(spark: Any, postgres_dsn: str) -> None:
    import psycopg

    from jetspark import DAG, Edge
    from jetspark import processors as P

    table = f"tab_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, v text)")
        conn.execute(f"INSERT INTO {table} SELECT i, 'v' || i FROM generate_series(1, 5000) i")
    try:
        dag = DAG()
        rows = dag.new_vertex("rows", P.postgres_table(postgres_dsn, table, "id", splits=4, fetch_size=700))
        ids = dag.new_vertex("ids", P.map(lambda row: row["id"]))
        dag.edge(Edge.between(rows, ids))
        dag.edge(Edge.between(ids, dag.new_vertex("sink", P.collect())))
        job = SparkRunner(spark).run(dag, JobConfig(member_count=2))
        assert sorted(job.result("sink")) == list(range(1, 5001))
        assert job.metrics()["rows"]["emitted"] == 5000
    finally:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(f"DROP TABLE {table}")

"""`postgres_table` against the real PostgreSQL server of the test session, on the local runner:
every row once, split by key ranges across processors; boundaries at quantiles or given;
columns and conditions; a job suspended mid-read resumes on another member count exactly."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.core import JobConfig, ProcessingGuarantee
from jetspark.core.context import MetaSupplierContext
from jetspark.processors.postgres_table import postgres_table
from jetspark.runners.local import JobStatus, LocalRunner
from tests.gates import Gate, ask_to_suspend, gated_pass
from tests.waiting import wait_until

ROWS = 3000


@pytest.fixture
def table(postgres_dsn: str) -> Iterator[str]:
    import psycopg

    name = f"tab_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, name text, score numeric)")
        conn.execute(
            f"INSERT INTO {name} SELECT i, 'n' || lpad(i::text, 5, '0'), i / 2.0 FROM generate_series(1, {ROWS}) i"
        )
    yield name
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE {name}")


def reading_dag(source: Any, gate: Gate | None = None) -> DAG:
    dag = DAG()
    rows = dag.new_vertex("rows", source)
    sink = dag.new_vertex("sink", P.collect())
    if gate is None:
        dag.edge(Edge.between(rows, sink))
    else:
        held = dag.new_vertex("held", gated_pass(gate), local_parallelism=1)
        dag.edge(Edge.between(rows, held).distributed())
        dag.edge(Edge.between(held, sink))
    return dag


def boundaries(supplier: Any, total: int) -> tuple[Any, ...]:
    context = MetaSupplierContext(
        job_id="j",
        execution_id="e",
        job_config=JobConfig(),
        vertex_name="rows",
        local_parallelism=1,
        member_count=total,
        partition_count=271,
        partition_assignment={},
        logger=logging.getLogger("test"),
    )
    supplier.init(context)
    return tuple(supplier.boundaries)


def test_every_row_once_read_in_key_ranges_by_every_processor(postgres_dsn: str, table: str) -> None:
    job = LocalRunner(3).run(
        reading_dag(postgres_table(postgres_dsn, table, "id", fetch_size=100)), JobConfig()
    )
    rows = job.result("sink")
    assert sorted(row["id"] for row in rows) == list(range(1, ROWS + 1))
    assert rows[0].keys() == {"id", "name", "score"}, "the key's alias is not left in the rows"
    assert {type(row["score"]).__name__ for row in rows} == {"Decimal"}


def test_an_integer_key_is_cut_evenly_and_any_other_at_quantiles(postgres_dsn: str, table: str) -> None:
    assert boundaries(postgres_table(postgres_dsn, table, "id"), 4) == (751, 1501, 2251)
    assert boundaries(postgres_table(postgres_dsn, table, "id", splits=1), 4) == ()
    assert boundaries(postgres_table(postgres_dsn, table, "name", splits=3), 1) == ("n01000", "n02000")
    assert boundaries(postgres_table(postgres_dsn, table, "id", where="id <= 100", splits=2), 1) == (51,)


def test_given_boundaries_columns_and_a_condition(postgres_dsn: str, table: str) -> None:
    source = postgres_table(
        postgres_dsn, table, "name", splits=["n00100", "n02000"], columns=["id"], where="id % 7 = 0"
    )
    job = LocalRunner(2).run(reading_dag(source), JobConfig())
    assert sorted(row["id"] for row in job.result("sink")) == list(range(7, ROWS + 1, 7))
    assert {tuple(row) for row in job.result("sink")} == {("id",)}


def test_an_empty_table_is_one_empty_split(postgres_dsn: str, table: str) -> None:
    job = LocalRunner(2).run(
        reading_dag(postgres_table(postgres_dsn, table, "id", where="false")), JobConfig()
    )
    assert job.result("sink") == []


def test_a_job_suspended_mid_read_resumes_on_another_member_count_exactly(
    tmp_path: Path, postgres_dsn: str, table: str
) -> None:
    """The rows wait at a gate, so back-pressure holds the source mid-table when the job is asked
    to suspend; its terminal snapshot holds each split's last key."""
    gate = Gate(tmp_path / "gate", hold_at=200)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=10_000)
    source = postgres_table(postgres_dsn, table, "id", splits=5, fetch_size=50)
    job = LocalRunner(2).submit(reading_dag(source, gate), config)
    wait_until(lambda: job.metrics()["held"]["emitted"] >= 200, "200 rows past the gate")
    ask_to_suspend(job)
    gate.open()
    wait_until(lambda: job.status is not JobStatus.RUNNING, "the suspension", timeout=60)
    assert job.status is JobStatus.SUSPENDED, job.error
    before = len(job.result("sink"))
    assert before < ROWS, "the source read the whole table before the snapshot: the test proves nothing"
    job.resume(member_count=3).join(60)
    assert sorted(row["id"] for row in job.result("sink")) == list(range(1, ROWS + 1))


def connections(dsn: str, application: str) -> int:
    """How many sessions of `application` the server has open now."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (application,)
        )
        found = row.fetchone()
    return 0 if found is None else int(found[0])


@pytest.mark.parametrize("resumed_members", [1, 2], ids=["same-count", "more-members"])
def test_a_split_finished_before_the_suspension_is_not_read_again(
    tmp_path: Path, postgres_dsn: str, table: str, resumed_members: int
) -> None:
    """Three splits on one member's three processors: split 0 (ids 1..10) fits one page, so its
    processor reads it, ends and closes its connection (which the test waits for), while the gate
    holds the other two mid-split. The terminal snapshot then holds two splits for the three
    processors that start with a split of their own, on the same count or more: the one that
    receives no entry must resume nothing rather than start its own split afresh."""
    application = f"jetspark_{uuid.uuid4().hex[:8]}"
    dsn = f"{postgres_dsn} application_name={application}"
    gate = Gate(tmp_path / "gate", hold_at=100)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=60_000)
    dag = DAG()
    rows = dag.new_vertex("rows", postgres_table(dsn, table, "id", splits=[11, 1501], fetch_size=50), 3)
    held = dag.new_vertex("held", gated_pass(gate), local_parallelism=1)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(rows, held).with_queue_size(100))
    dag.edge(Edge.between(held, sink))
    job = LocalRunner(1).submit(dag, config)
    wait_until(lambda: job.metrics()["held"]["emitted"] >= 100, "100 rows past the gate")
    wait_until(lambda: connections(postgres_dsn, application) == 2, "split 0's processor to end")
    ask_to_suspend(job)
    gate.open()
    wait_until(lambda: job.status is not JobStatus.RUNNING, "the suspension", timeout=60)
    assert job.status is JobStatus.SUSPENDED, job.error
    assert len(job.result("sink")) < ROWS, "the source read the whole table before the snapshot"
    job.resume(member_count=resumed_members).join(60)
    assert sorted(row["id"] for row in job.result("sink")) == list(range(1, ROWS + 1))

"""The PostgreSQL sink's two statements against a real server (tests/postgres_server.py): an
INSERT per row, or a COPY per batch of rows, both inside the transactions the snapshots prepare."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import psycopg.sql
import pytest

from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark import processors as P
from jetspark.processors.postgres import _PostgresP
from jetspark.testing import run_dag


def fresh_table(dsn: str) -> str:
    table = f"rows_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (k int, word text)")
    return table


def rows_of(dsn: str, table: str) -> list[tuple[int, str]]:
    with psycopg.connect(dsn) as conn:
        return sorted(conn.execute(f"SELECT k, word FROM {table}").fetchall())


@pytest.mark.parametrize("call", ["pending", "rollback", "commit", "prepare", "write"])
def test_every_server_call_on_a_lost_connection_asks_for_a_restart(postgres_dsn: str, call: str) -> None:
    """A connection the server ended (a failover, `pg_terminate_backend`) fails whichever call
    finds it gone with a `RestartableError`, so that the job restarts from its snapshot instead of
    failing: a restore's lookups and rollbacks too, not only the writes."""
    from jetspark.core.errors import RestartableError

    table = fresh_table(postgres_dsn)
    sink = _PostgresP(postgres_dsn, f"INSERT INTO {table} (k, word) VALUES (%s, %s)", tuple, 1000)
    sink._conn = psycopg.connect(postgres_dsn, autocommit=True)
    sink._control = psycopg.connect(postgres_dsn, autocommit=True)
    gid = f"lost-{uuid.uuid4().hex[:6]}-0"
    if call in ("prepare", "commit"):
        sink.write(gid, [(1, "a")])
    if call == "commit":
        sink.prepare(gid)
    try:
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            for conn in (sink._conn, sink._control):
                admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        calls = {
            "pending": lambda: sink.pending("lost"),
            "rollback": lambda: sink.rollback(gid),
            "commit": lambda: sink.commit(gid),
            "prepare": lambda: sink.prepare(gid),
            "write": lambda: sink.write(gid, [(2, "b")]),
        }
        with pytest.raises(RestartableError, match="PostgreSQL connection lost while"):
            calls[call]()
    finally:
        sink._in_transaction = False
        sink.close()
    if call == "commit":  # the prepared transaction outlives its connection
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            admin.execute(psycopg.sql.SQL("ROLLBACK PREPARED {}").format(psycopg.sql.Literal(gid)))


@pytest.mark.parametrize(
    "statement", ["INSERT INTO {t} (k, word) VALUES (%s, %s)", "COPY {t} (k, word) FROM STDIN"]
)
def test_every_item_becomes_one_committed_row_with_either_statement(
    postgres_dsn: str, statement: str
) -> None:
    table = fresh_table(postgres_dsn)
    items = [(i, f"w'{i}\t\\") for i in range(2500)]  # quotes, tabs, backslashes: COPY escapes them
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items), local_parallelism=2)
    sink = dag.new_vertex(
        "db",
        P.postgres(postgres_dsn, statement.format(t=table), max_transaction_items=700),
        local_parallelism=2,
    )
    dag.edge(Edge.between(source, sink))
    run_dag(
        dag, JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=50)
    )
    assert rows_of(postgres_dsn, table) == items
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pg_prepared_xacts").fetchone() == (0,)


def test_copied_rows_of_a_prepared_transaction_rolled_back_never_show(postgres_dsn: str) -> None:
    """A COPY goes into the open transaction like an INSERT: prepared, then rolled back (its
    snapshot never committed), none of its rows are visible."""
    table = fresh_table(postgres_dsn)
    sink = _PostgresP(postgres_dsn, f"COPY {table} (k, word) FROM STDIN", tuple, 1000)
    sink._conn = psycopg.connect(postgres_dsn, autocommit=True)
    sink._control = psycopg.connect(postgres_dsn, autocommit=True)
    try:
        gid = f"copy-test-{uuid.uuid4().hex[:6]}-0"
        sink.write(gid, [(1, "a"), (2, "b")])
        sink.prepare(gid)
        assert rows_of(postgres_dsn, table) == []
        assert sink.pending(gid.rsplit("-", 1)[0]) == [gid]
        sink.rollback(gid)
        assert rows_of(postgres_dsn, table) == [] and sink.pending(gid.rsplit("-", 1)[0]) == []
    finally:
        sink.close()


@pytest.mark.parametrize("statement", ["COPY t (k) FROM '/tmp/rows.csv'", "COPY t TO STDOUT"])
def test_a_copy_that_does_not_read_from_stdin_fails_when_the_dag_is_built(statement: str) -> None:
    with pytest.raises(ValueError, match=r"postgres sink: a COPY statement must read its rows FROM STDIN"):
        P.postgres("dbname=x", statement)


def test_a_database_that_does_not_exist_fails_the_job_at_once(postgres_dsn: str) -> None:
    """A refused login or a wrong database is not tried again (a server not reached is)."""
    from jetspark import JobFailedError
    from jetspark.runners.local import LocalRunner

    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable([(1, "a")]))
    sink = dag.new_vertex("db", P.postgres(f"{postgres_dsn} dbname=nowhere_{uuid.uuid4().hex[:6]}", "INSERT"))
    dag.edge(Edge.between(source, sink))
    job = LocalRunner(1).submit(dag, JobConfig())
    with pytest.raises(JobFailedError, match=r"vertex 'db'.*does not exist"):
        job.join(60)
    assert job.restarts == 0


@pytest.mark.parametrize(
    ("insert", "refusal"),
    [
        ("INSERT INTO no_such_table_s15 (k, v) VALUES (%s, %s)", "UndefinedTable"),
        ("COPY no_such_table_s15 (k, v) FROM STDIN", "UndefinedTable"),
        ("INSERT INTO {table} (k, v) VALUES (%s, %s)", "InvalidTextRepresentation"),  # 'x' into an int
    ],
)
def test_a_statement_the_server_refuses_fails_the_job_at_once(
    postgres_dsn: str, insert: str, refusal: str
) -> None:
    """A missing table or a value the column cannot take is refused again on every run: the sink
    raises `PermanentError`, which fails the job at once (on Spark too, without epochs rerun)."""
    from jetspark import JobFailedError, PermanentError
    from jetspark.runners.local import LocalRunner

    table = f"refusal_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as db:
        db.execute(f"CREATE TABLE {table} (k int, v int)")
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable([(1, "x")]))
    sink = dag.new_vertex("db", P.postgres(postgres_dsn, insert.format(table=table)))
    dag.edge(Edge.between(source, sink))
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=50)
    job = LocalRunner(1, max_restarts=3).submit(dag, config)
    with pytest.raises(
        JobFailedError, match=rf"vertex 'db'.*PostgreSQL refused writing: {refusal}"
    ) as failed:
        job.join(60)
    assert isinstance(failed.value.__cause__, PermanentError)
    assert job.restarts == 0


def test_a_connection_lost_mid_stream_restarts_from_the_snapshot_and_every_row_lands_once(
    postgres_dsn: str, tmp_path: Path
) -> None:
    """The sink's server connection is killed between two writes: the next write finds it gone,
    the job restarts from its last snapshot (a `RestartableError`), reconnects, and the table
    holds every row once."""
    from jetspark.runners.local import LocalRunner
    from tests.gates import Gate, gated_stream
    from tests.waiting import wait_until

    table = fresh_table(postgres_dsn)
    count = 2_000
    gate = Gate(tmp_path / "gate", hold_at=count // 2)
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=count, fn=lambda n: (n, f"w{n}")))
    sink = dag.new_vertex("db", P.postgres(postgres_dsn, f"INSERT INTO {table} (k, word) VALUES (%s, %s)"))
    dag.edge(Edge.between(source, sink))
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=20)
    job = LocalRunner(2).submit(dag, config)
    wait_until(lambda: job.metrics()["db"]["received"] == count // 2, "the first half written")
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ).fetchone()
    assert killed is not None and killed[0] >= 2  # each sink processor's two connections
    gate.open()
    job.join(120)
    assert job.restarts >= 1
    assert rows_of(postgres_dsn, table) == [(n, f"w{n}") for n in range(count)]
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pg_prepared_xacts").fetchone() == (0,)

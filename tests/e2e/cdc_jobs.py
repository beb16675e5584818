"""PostgreSQL change data capture jobs and a gated writer, shared by the CDC tests (local runner,
a driver in a subprocess, Spark) and the CDC benchmark.

The writer changes table `src (id int primary key, v int)` (REPLICA IDENTITY FULL, so deletes and
updates carry the old row) in numbered steps, one transaction per step: step `i` inserts row `i`;
when `i % 3 == 2` it also sets row `i - 1` to `-i`; when `i % 5 == 4` it deletes row `i - 3`. It
writes only the steps below the limit the test set (`allow`), so a test decides how far the
stream has gone at each of its moves, and it records every change it made: the ground truth.
"""

from __future__ import annotations

import threading
from typing import Any

from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.processors.pgoutput import TYPED, Change
from jetspark.processors.postgres_cdc import create_slot, postgres_cdc

SINK_INSERT = "INSERT INTO {sink} (lsn, seq, op, id, v) VALUES (%s, %s, %s, %s, %s)"


def prepare_tables(dsn: str, source: str, sink: str, slot: str, publication: str) -> None:
    """Fresh source and sink tables, and the slot and publication on the source (created before
    any write, so that the slot sees every change)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {source}, {sink}")
        conn.execute(f"CREATE TABLE {source} (id int PRIMARY KEY, v int)")
        conn.execute(f"ALTER TABLE {source} REPLICA IDENTITY FULL")
        conn.execute(f"CREATE TABLE {sink} (lsn bigint, seq int, op text, id int, v int)")
        conn.execute(f"DROP PUBLICATION IF EXISTS {publication}")
    create_slot(dsn, slot, publication, [source])


def change_row(change: Change) -> tuple[Any, ...]:
    """A sink row: where the change is in the WAL, and what it did."""
    values = change.after if change.after is not None else change.before
    assert values is not None
    return (change.lsn, change.seq, change.op, values["id"], values["v"])


def cdc_dag(dsn: str, slot: str, publication: str, sink: str, step: Any = None) -> DAG:
    """postgres_cdc -> [map(step)] -> the exactly-once `postgres` sink, distributed by row id."""
    dag = DAG()
    source = dag.new_vertex("changes", postgres_cdc(dsn, slot, publication, types=TYPED, poll_millis=10))
    rows = dag.new_vertex("rows", P.map(change_row if step is None else _Stepped(step)))
    out = dag.new_vertex("sink", P.postgres(dsn, SINK_INSERT.format(sink=sink)))
    dag.edge(Edge.between(source, rows).partitioned(_row_id).distributed())
    dag.edge(Edge.between(rows, out))
    return dag


def _row_id(change: Change) -> Any:
    values = change.after if change.after is not None else change.before
    return None if values is None else values["id"]


class _Stepped:
    """`change_row` after `step(change)` (a fault-injection hook)."""

    def __init__(self, step: Any) -> None:
        self.step = step

    def __call__(self, change: Change) -> tuple[Any, ...]:
        return change_row(self.step(change))


def sink_rows(dsn: str, sink: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return [tuple(row) for row in conn.execute(f"SELECT lsn, seq, op, id, v FROM {sink}").fetchall()]


def sink_count(dsn: str, sink: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(f"SELECT count(*) FROM {sink}").fetchone()
        return int(row[0]) if row else 0


class Writer(threading.Thread):
    """Writes the steps below its limit (see the module docstring); `changes` is the ground truth,
    `(op, id, v)` per change in commit order."""

    def __init__(self, dsn: str, table: str) -> None:
        super().__init__(name="cdc writer", daemon=True)
        self.dsn = dsn
        self.table = table
        self.changes: list[tuple[str, int, int]] = []
        self.written = 0
        self.error: BaseException | None = None
        self._limit = 0
        self._stopping = False
        self._cond = threading.Condition()
        self._values: dict[int, int] = {}

    def allow(self, limit: int) -> None:
        """Let the writer write the steps below `limit`."""
        with self._cond:
            self._limit = limit
            self._cond.notify_all()

    def wait_written(self, steps: int, timeout: float = 120) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self.written >= steps or self.error is not None, timeout):
                raise AssertionError(f"the writer did not write {steps} steps in {timeout} s")
        if self.error is not None:
            raise AssertionError(f"the writer failed: {self.error}") from self.error

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self.join(30)

    def changes_for(self, steps: int) -> int:
        """How many changes the first `steps` steps make."""
        return sum(1 + (i % 3 == 2) + (i % 5 == 4 and i >= 3) for i in range(steps))

    def run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                while True:
                    with self._cond:
                        self._cond.wait_for(lambda: self._stopping or self.written < self._limit)
                        if self._stopping:
                            return
                    self._step(conn, self.written)
                    with self._cond:
                        self.written += 1
                        self._cond.notify_all()
        except BaseException as error:  # reported to the waiting test
            with self._cond:
                self.error = error
                self._cond.notify_all()

    def _step(self, conn: Any, i: int) -> None:
        table, made = self.table, []
        with conn.transaction():
            conn.execute(f"INSERT INTO {table} (id, v) VALUES (%s, %s)", (i, i))
            made.append(("insert", i, i))
            if i % 3 == 2:
                conn.execute(f"UPDATE {table} SET v = %s WHERE id = %s", (-i, i - 1))
                made.append(("update", i - 1, -i))
            if i % 5 == 4 and i >= 3:
                conn.execute(f"DELETE FROM {table} WHERE id = %s", (i - 3,))
                made.append(("delete", i - 3, None))
        for op, row_id, value in made:  # committed: now it is the truth
            if op == "delete":
                value = self._values.pop(row_id)
            else:
                self._values[row_id] = value
            assert value is not None
            self.changes.append((op, row_id, value))

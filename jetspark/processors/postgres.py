"""An exactly-once PostgreSQL sink: two-phase commit with `PREPARE TRANSACTION` / `COMMIT PREPARED`.

Each processor holds one connection. Its items are inserted in the open transaction; at a snapshot
the transaction is prepared under its deterministic id (`transactional.TransactionalSinkP`), and
committed with `COMMIT PREPARED` once the snapshot is committed. A restarted processor lists
`pg_prepared_xacts` for its prefix and commits or rolls back what it finds. The server needs
`max_prepared_transactions` > 0 (at least the sink's parallelism). psycopg is imported when a
processor starts, so only jobs that use this sink need it.

The statement is an INSERT run once per item (psycopg's `executemany`, pipelined), or a
`COPY ... FROM STDIN` that streams a whole batch of rows in one command: about 12 us against 1 us
per row of client CPU on this project's benchmark machine (`benchmarks/latency_bench.py --sink copy`),
so COPY is the one for high rates; an INSERT can do what COPY cannot (`ON CONFLICT`, expressions).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from jetspark.core.context import ProcessorContext
from jetspark.core.errors import PermanentError, RestartableError
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.processors.transactional import DEFAULT_MAX_TRANSACTION_ITEMS, TransactionalSinkP

#: Seconds the driver waits for its connection (`open_on_coordinator`), and for each statement on
#: it: an unreachable or stalled server must not hold up the epochs long (the restore commits).
_CONNECT_TIMEOUT = 5
_STATEMENT_TIMEOUT = "10s"
#: A processor's connects: attempts before it gives up, and the first wait between two (doubling).
CONNECT_ATTEMPTS = 6
FIRST_CONNECT_WAIT = 0.1

_log = logging.getLogger(__name__)


def _connect(dsn: str, vertex: str) -> Any:
    """A connection, tried again while the server cannot be reached (a restart, a failover), as
    Jet's JDBC sink reconnects: `CONNECT_ATTEMPTS` times, then a `RestartableError` (the job
    restarts from its last snapshot, up to its runner's `max_restarts`)."""
    import psycopg

    wait = FIRST_CONNECT_WAIT
    for attempt in range(1, CONNECT_ATTEMPTS + 1):
        try:
            return psycopg.connect(dsn, autocommit=True, connect_timeout=_CONNECT_TIMEOUT)
        except psycopg.OperationalError as error:
            if not _may_pass(error):  # a wrong password or database: trying again changes nothing
                raise
            if attempt == CONNECT_ATTEMPTS:
                raise RestartableError(
                    f"vertex {vertex!r}: cannot connect to PostgreSQL after {attempt} attempts: {error}"
                ) from error
            _log.warning(
                "vertex %r: connecting to PostgreSQL failed (%s); trying again in %.1f s", vertex, error, wait
            )
            time.sleep(wait)
            wait *= 2
    raise AssertionError("unreachable")


def _may_pass(error: Any) -> bool:
    """A connect failure that may pass: the server not reached (refused, timed out, reset), or
    starting, shutting down or full; not a refused login or a database or role that does not
    exist. libpq's connect errors carry no SQLSTATE, so the server's FATAL text decides those."""
    state = getattr(error, "sqlstate", None)
    if state is not None and (state.startswith("28") or state == "3D000"):
        return False
    text = str(error)
    return not any(sign in text for sign in _PERMANENT_CONNECT_ERRORS)


#: What a server's refusal says when trying again cannot help (libpq's messages).
_PERMANENT_CONNECT_ERRORS = (
    "does not exist",
    "authentication failed",
    "no pg_hba.conf entry",
    "password",
    "invalid connection option",
    "invalid dsn",
)


@contextmanager
def _connection_loss_restarts(vertex: str, doing: str) -> Iterator[None]:
    """A connection lost mid-statement (psycopg's `OperationalError`) takes the open transaction
    with it: the job restarts from its last snapshot, whose restore commits or rolls back what
    was prepared, and the items after it are written again. A statement the server refuses
    (`ProgrammingError`: a table or column that does not exist, a syntax error, no privilege) or
    a value it cannot store (`DataError`) would be refused again: the job fails at once
    (`PermanentError`), also on Spark, which would otherwise run the epoch again."""
    import psycopg

    try:
        yield
    except psycopg.OperationalError as error:
        raise RestartableError(
            f"vertex {vertex!r}: PostgreSQL connection lost while {doing}: {error}"
        ) from error
    except (psycopg.ProgrammingError, psycopg.DataError) as error:
        raise PermanentError(
            f"vertex {vertex!r}: PostgreSQL refused {doing}: {type(error).__name__}: {error}"
        ) from error


class _PostgresP(TransactionalSinkP):
    def __init__(
        self, dsn: str, insert: str, to_row: Callable[[Any], Any], max_transaction_items: int
    ) -> None:
        super().__init__(max_transaction_items)
        self.dsn = dsn
        self.insert = insert
        self._copy = is_copy(insert)
        self.to_row = to_row
        self._conn: Any = None
        #: Commits, rollbacks and lookups of prepared transactions: they cannot run inside the open
        #: transaction that `_conn` may hold meanwhile.
        self._control: Any = None
        self._in_transaction = False
        #: The vertex, for errors (set where the processor starts, or on the driver's commit).
        self._vertex = "postgres"

    def is_cooperative(self) -> bool:
        return False  # database round trips block

    def init_processor(self, context: ProcessorContext) -> None:
        super().init_processor(context)
        self._vertex = context.vertex_name
        self._conn = _connect(self.dsn, context.vertex_name)
        self._control = _connect(self.dsn, context.vertex_name)

    def open_on_coordinator(self, job_id: str, vertex: str) -> bool:
        """`COMMIT PREPARED` works from any connection: the driver opens the control connection
        (False without psycopg; a failed connect raises, and the driver tries again later)."""
        try:
            import psycopg
        except ImportError:
            return False
        self._vertex = vertex
        self._control = psycopg.connect(self.dsn, autocommit=True, connect_timeout=_CONNECT_TIMEOUT)
        self._control.execute(f"SET statement_timeout = '{_STATEMENT_TIMEOUT}'")
        return True

    def write(self, txn: str, items: list[Any]) -> None:
        with _connection_loss_restarts(self._vertex, "writing"):
            self._write(items)

    def _write(self, items: list[Any]) -> None:
        conn = self._conn
        if not self._in_transaction:
            conn.execute("BEGIN")
            self._in_transaction = True
        to_row = self.to_row
        with conn.cursor() as cursor:
            if self._copy:
                with cursor.copy(self.insert) as copy:
                    for item in items:
                        copy.write_row(to_row(item))
            else:
                cursor.executemany(self.insert, [to_row(item) for item in items])

    def prepare(self, txn: str) -> None:
        from psycopg import sql

        with _connection_loss_restarts(self._vertex, "preparing a transaction"):
            self._conn.execute(sql.SQL("PREPARE TRANSACTION {}").format(sql.Literal(txn)))
        self._in_transaction = False

    def commit(self, txn: str) -> None:
        from psycopg import sql

        # a restart's restore commits it then (the seed: commit, or restart and commit there)
        with _connection_loss_restarts(self._vertex, "committing a transaction"):
            if self._is_prepared(txn):  # not committed yet (a restore may find it committed)
                self._control.execute(sql.SQL("COMMIT PREPARED {}").format(sql.Literal(txn)))

    def _is_prepared(self, txn: str) -> bool:
        return (
            self._control.execute(
                "SELECT 1 FROM pg_prepared_xacts WHERE database = current_database() AND gid = %s", (txn,)
            ).fetchone()
            is not None
        )

    def rollback(self, txn: str) -> None:
        from psycopg import sql

        with _connection_loss_restarts(self._vertex, "rolling back a transaction"):
            self._control.execute(sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(txn)))

    def pending(self, prefix: str) -> list[str]:
        # `<prefix>-%`: processor 1's prefix must not match processor 10's transactions
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "-%"
        with _connection_loss_restarts(self._vertex, "looking up prepared transactions"):
            rows = self._control.execute(
                "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND gid LIKE %s",
                (pattern,),
            ).fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._conn is not None:
            try:
                if self._in_transaction:
                    self._conn.execute("ROLLBACK")  # an open transaction was never prepared: drop it
            finally:
                self._conn.close()
                self._conn = None


def _same(item: Any) -> Any:
    return item


def is_copy(statement: str) -> bool:
    """Whether the sink's statement is a COPY (else an INSERT run per item); a COPY that does not
    read `FROM STDIN` is an error, since the rows come from the sink."""
    words = statement.split()
    if not words or words[0].upper() != "COPY":
        return False
    if "FROM STDIN" not in " ".join(words).upper():
        raise ValueError(
            f"postgres sink: a COPY statement must read its rows FROM STDIN (the sink sends them), "
            f"not {statement!r}; for example 'COPY events (seq, created) FROM STDIN'"
        )
    return True


def postgres(
    dsn: str,
    insert: str,
    to_row: Callable[[Any], Any] = _same,
    max_transaction_items: int = DEFAULT_MAX_TRANSACTION_ITEMS,
) -> ProcessorSupplier:
    """An exactly-once sink into PostgreSQL (in a job with a processing guarantee): `insert` (an
    INSERT with `%s` placeholders) runs for `to_row(item)` of every item, inside transactions
    prepared at each snapshot and committed when the snapshot is committed. Example:
    `postgres(dsn, "INSERT INTO counts (k, n) VALUES (%s, %s)")` for items `(k, n)`. Without a
    guarantee it commits every `max_transaction_items` items: at-least-once under failures (a
    run again from the beginning writes again what the failed run committed).

    Needs `psycopg` (`pip install 'psycopg[binary]'`) and a server with `max_prepared_transactions`
    above 0. With `dsn` naming your server ([the tutorial](../../tutorial.md) builds a windowed job
    into PostgreSQL step by step):

    ```pycon
    >>> import psycopg
    >>> from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee, processors as P
    >>> from jetspark.testing import run_dag
    >>> with psycopg.connect(dsn, autocommit=True) as db:
    ...     _ = db.execute("CREATE TABLE word_counts (word text PRIMARY KEY, n int)")
    >>> dag = DAG()
    >>> words = dag.new_vertex("words", P.from_iterable("to be or not to be".split()))
    >>> counts = P.aggregate_by_key(dag, "counts", words, P.whole_item, P.counting())
    >>> insert = "INSERT INTO word_counts (word, n) VALUES (%s, %s)"
    >>> _ = dag.edge(Edge.between(counts, dag.new_vertex("db", P.postgres(dsn, insert))))
    >>> job = run_dag(dag, JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE))
    >>> with psycopg.connect(dsn) as db:
    ...     db.execute("SELECT word, n FROM word_counts ORDER BY word").fetchall()
    [('be', 2), ('not', 1), ('or', 1), ('to', 2)]
    ```

    :param dsn: how to connect (a libpq connection string or URL), from where the processor runs.
    :param insert: the statement run per item, with `%s` placeholders for the row's values; or
        `COPY table (columns) FROM STDIN`, which sends each batch of rows in one command (an order
        of magnitude less CPU per row; see the module docstring).
    :param to_row: makes an item's row, a tuple of the placeholders' values (the item itself by
        default).
    :param max_transaction_items: a transaction holding this many items is closed and a new one
        begun (committed only with the next snapshot).
    """
    is_copy(insert)  # a COPY that cannot work fails here, when the DAG is built
    return ProcessorSupplier.of(functools.partial(_PostgresP, dsn, insert, to_row, max_transaction_items))

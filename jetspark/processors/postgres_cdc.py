"""`postgres_cdc`: a replayable stream of a PostgreSQL database's committed row changes.

Logical decoding through SQL, with nothing to install on the server: a logical replication slot of
the built-in `pgoutput` plugin, and a publication naming the tables. The source never consumes the
slot itself: when it starts (after a restore, and in every epoch on Spark) it makes a temporary copy
of it (`pg_copy_logical_replication_slot(slot, reader, true)`, at the slot's confirmed position; it
goes away with the session) and reads the copy with `pg_logical_slot_get_binary_changes`, which
consumes what it returns, so no change is decoded twice while the processor lives. The messages are
decoded by `pgoutput.Decoder`, which hands out a transaction's changes only once its Commit was read.

Offsets. The source's position is the end LSN of the last transaction it emitted whole, plus how
many changes of the next one it emitted (a transaction larger than the outbox's room may straddle a
snapshot). The position is saved in every snapshot, and a restored source skips what is at or
below it. The slot's confirmed position moves (`pg_replication_slot_advance`) only to the LSN of a
snapshot that was committed: in `snapshot_commit_finish(True)`, and on restore, since a restored
snapshot is committed (in epochs on Spark phase 2 never reaches the processor: the restore in the
next epoch advances instead). So a change is never lost (the slot keeps everything after the last
committed snapshot), and with a transactional sink never duplicated in the committed output.
Without a processing guarantee the slot moves as soon as a batch went out. Startpoints
(`jetspark.checkpoint.startpoints`; the split is the slot's name, the offset an LSN) override the
restored position once, at start: `Oldest` the slot's confirmed position, `Upcoming` the server's
current WAL position, `Specific(lsn)` that LSN, `Timestamp(ms)` after the last transaction the
slot holds that committed before the time.

A slot has one reader: the vertex runs one processor, on member 0 (distribute its changes with a
partitioned edge downstream, by table or key). The shape is the one a Kafka source would take: a
topic partition is a split with an offset, saved in the snapshot and committed to the broker only
when the snapshot is (docs/cdc.md).

psycopg is imported when a processor starts, so only jobs that use this source need it.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.context import STARTPOINTS_ATTRIBUTE, ProcessorContext
from jetspark.core.errors import JobFailedError
from jetspark.core.inbox import Inbox
from jetspark.core.suppliers import FirstMemberOnly, ProcessorMetaSupplier, ProcessorSupplier
from jetspark.core.watermark import BroadcastKey, Watermark
from jetspark.processors.pgoutput import Decoder, format_lsn, parse_lsn

if TYPE_CHECKING:  # fsspec is needed only by jobs that keep snapshots
    from jetspark.checkpoint.startpoint_source import SourceStartpoints
    from jetspark.checkpoint.startpoints import Startpoint

_GET = (
    "SELECT data FROM pg_logical_slot_get_binary_changes(%s, NULL, %s, "
    "'proto_version', '1', 'publication_names', %s)"
)
_PEEK = (
    "SELECT data FROM pg_logical_slot_peek_binary_changes(%s, NULL, %s, "
    "'proto_version', '1', 'publication_names', %s)"
)
#: Moves the slot forward only: advancing to a position behind its confirmed one is an error.
_ADVANCE = (
    "SELECT pg_replication_slot_advance(slot_name, %s::pg_lsn) FROM pg_replication_slots "
    "WHERE slot_name = %s AND confirmed_flush_lsn < %s::pg_lsn"
)
_CONFIRMED = "SELECT confirmed_flush_lsn::text, plugin FROM pg_replication_slots WHERE slot_name = %s"


def create_slot(dsn: str, slot: str, publication: str, tables: Sequence[str] | None = None) -> int:
    """Create the publication (`FOR TABLE tables`, or `FOR ALL TABLES` when None) and the logical
    replication slot (plugin `pgoutput`) unless they exist; return the slot's confirmed LSN.

    Changes are captured from the slot's creation on: create it before the writes you want to
    see (the source creates what is missing when it first starts). Creating a slot waits for the
    transactions running at that moment to end, prepared ones included."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,)).fetchone() is None:
            target = (
                sql.SQL("ALL TABLES")
                if tables is None
                else sql.SQL("TABLE {}").format(sql.SQL(", ").join(_table_name(t) for t in tables))
            )
            conn.execute(sql.SQL("CREATE PUBLICATION {} FOR {}").format(sql.Identifier(publication), target))
        row = conn.execute(_CONFIRMED, (slot,)).fetchone()
        if row is None:
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
            row = conn.execute(_CONFIRMED, (slot,)).fetchone()
        assert row is not None
        if row[1] != "pgoutput":
            raise ValueError(
                f"replication slot {slot!r} uses plugin {row[1]!r}; postgres_cdc reads pgoutput slots"
            )
        return parse_lsn(row[0])


def drop_slot(dsn: str, slot: str, timeout: float = 30) -> None:
    """Drop the replication slot if it exists (a slot keeps WAL on the server until dropped),
    waiting up to `timeout` seconds for a reader that is closing (a job just cancelled) to let go."""
    import psycopg

    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            try:
                conn.execute(
                    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                    (slot,),
                )
                return
            except psycopg.errors.ObjectInUse:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def _table_name(table: str) -> Any:
    from psycopg import sql

    return sql.Identifier(*table.split(".", 1))


class _PostgresCdcP(AbstractProcessor):
    def __init__(
        self,
        dsn: str,
        slot: str,
        publication: str,
        tables: Sequence[str] | None,
        types: Mapping[int, Callable[[str], Any]] | None,
        max_changes: int,
        poll_millis: int,
    ) -> None:
        super().__init__()
        self.dsn = dsn
        self.slot = slot
        self.publication = publication
        self.tables = tables
        self.types = types
        self.max_changes = max_changes
        self.poll = poll_millis / 1000
        self._conn: Any = None
        #: Kept across reads: pgoutput sends a Relation message before a relation's first change
        #: of a read (PostgreSQL 15 does so on every read; a server that did not would still work).
        self._decoder = Decoder(types)
        #: The position: every transaction ending at or below `done` was emitted whole, and the
        #: first `partial_count` changes of the one ending at `partial_lsn`.
        self.done: int | None = None
        self.partial_lsn = 0
        self.partial_count = 0
        #: Transactions read and not emitted whole yet: [end lsn, changes, how many went out].
        self._pending: list[list[Any]] = []
        #: The temporary copy of the slot that this processor reads (module docstring).
        self._reader: str | None = None
        self._next_poll = 0.0
        self._saved: int | None = None
        self._prepared: int | None = None
        self._advanced = 0
        self._restored: tuple[int, int, int] | None = None
        self.emitted = 0
        self._started = False
        self._startpoints: SourceStartpoints | None = None

    def is_cooperative(self) -> bool:
        return False  # database round trips block

    def init_processor(self, context: ProcessorContext) -> None:
        import psycopg

        if context.local_parallelism != 1:
            raise JobFailedError(
                f"vertex {context.vertex_name!r}: postgres_cdc runs one processor (a slot has one "
                f"reader), got local parallelism {context.local_parallelism}; leave it unset"
            )
        create_slot(self.dsn, self.slot, self.publication, self.tables)
        self._conn = psycopg.connect(self.dsn, autocommit=True)

    # ---- position, snapshots ----------------------------------------------------------------

    def _confirmed(self) -> int:
        row = self._conn.execute(_CONFIRMED, (self.slot,)).fetchone()
        if row is None:
            raise JobFailedError(
                f"vertex {self.context.vertex_name!r}: replication slot {self.slot!r} is gone"
            )
        return parse_lsn(row[0])

    def _start(self) -> None:
        """Once, after the restore and before the first read or save: start at the restored
        position, else at the slot's confirmed one; a startpoint overrides either."""
        self._started = True
        if self.done is None:
            self.done = self._advanced = self._confirmed()
        if STARTPOINTS_ATTRIBUTE not in self.context.attributes:
            return
        from jetspark.checkpoint.startpoint_source import SourceStartpoints

        self._startpoints = SourceStartpoints(
            self.context.attributes, self.context.vertex_name, self.context.global_processor_index
        )
        overrides = self._startpoints.start({self.slot: self.done}, self._resolve)
        if self.slot in overrides:
            self.done = overrides[self.slot]
            self.partial_lsn = self.partial_count = 0

    def _resolve(self, split: str, startpoint: Startpoint) -> int:
        """The position a startpoint starts the slot at (docs/cdc.md, "Startpoints")."""
        from jetspark.checkpoint.startpoints import Oldest, Specific, Timestamp

        confirmed = self._confirmed()
        if isinstance(startpoint, Oldest):
            return confirmed
        if isinstance(startpoint, Specific):
            if startpoint.offset < confirmed:
                raise JobFailedError(
                    f"vertex {self.context.vertex_name!r}: Specific startpoint {format_lsn(startpoint.offset)} "
                    f"is before replication slot {self.slot!r}'s confirmed {format_lsn(confirmed)}: "
                    "the changes there are gone from the slot"
                )
            return startpoint.offset
        if isinstance(startpoint, Timestamp):
            return self._before_time(startpoint.timestamp, confirmed)
        row = self._conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()  # Upcoming
        return parse_lsn(row[0])

    def _before_time(self, timestamp_millis: int, confirmed: int) -> int:
        """The end of the last transaction the slot holds that committed before the time (the
        slot's confirmed position if none did): a scan of everything the slot holds."""
        position = confirmed
        decoder = Decoder()
        # a server-side cursor (it needs a transaction): the rows stream, however many there are
        with self._conn.transaction(), self._conn.cursor(name="jetspark_cdc_scan") as cursor:
            cursor.execute(_PEEK, (self.slot, None, self.publication))
            for (data,) in cursor:
                committed = decoder.feed(data)
                if committed is None:
                    continue
                if committed.commit_time.timestamp() * 1000 >= timestamp_millis:
                    break
                position = committed.end_lsn
        return position

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        for _key, value in inbox:
            self._restored = tuple(value)
        inbox.drain(lambda _entry: None)

    def finish_snapshot_restore(self) -> bool:
        if self._restored is None:
            return True
        done, self.partial_lsn, self.partial_count = self._restored
        confirmed = self._confirmed()
        if confirmed > done:
            raise JobFailedError(
                f"vertex {self.context.vertex_name!r}: replication slot {self.slot!r} confirmed "
                f"{format_lsn(confirmed)}, past the restored snapshot's {format_lsn(done)}: the changes "
                "in between are gone from the slot (was the job restored from an older snapshot?)"
            )
        self.done = done
        self._advanced = confirmed
        self._advance(done)  # the restored snapshot is committed
        return True

    def save_to_snapshot(self) -> bool:
        if not self._started:
            self._start()
        assert self.done is not None
        if not self.try_emit_to_snapshot(
            BroadcastKey(("postgres_cdc", self.slot)), (self.done, self.partial_lsn, self.partial_count)
        ):
            return False
        self._saved = self.done
        if self._startpoints is not None:
            self._startpoints.saved({self.slot: self.done})
        return True

    def snapshot_commit_prepare(self) -> bool:
        self._prepared = self._saved  # export-only snapshots skip this: they move no slot
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success and self._prepared is not None:
            self._advance(self._prepared)
            self._prepared = None
            if self._startpoints is not None:
                self._startpoints.committed()
        return True

    def _advance(self, lsn: int) -> None:
        if lsn > self._advanced:
            text = format_lsn(lsn)
            self._conn.execute(_ADVANCE, (text, self.slot, text))
            self._advanced = lsn

    # ---- reading ----------------------------------------------------------------------------

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete(self) -> bool:
        if not self._started:
            self._start()
        if self._pending and not self._flush():
            return False
        if not self.context.snapshotting_enabled and self.done is not None:
            self._advance(self.done)  # no snapshots: what went out is confirmed at once
        now = time.monotonic()
        if now < self._next_poll:
            return False
        if not self._read():
            self._next_poll = now + self.poll  # nothing new: wait before asking again
        return False  # a stream: it never completes

    def _read(self) -> bool:
        """Take the next transactions from the reader slot; queue those past the position. True
        if any was new (or there may be more)."""
        assert self.done is not None
        if self._reader is None:
            self._reader = self._copy_reader()
        rows = self._conn.execute(_GET, (self._reader, self.max_changes, self.publication)).fetchall()
        decoder = self._decoder
        for (data,) in rows:
            committed = decoder.feed(data)
            if committed is None:
                continue
            end, changes, _ = committed
            if end <= self.done:
                continue  # emitted before the restore (the reader starts at the slot's position)
            first = self.partial_count if end == self.partial_lsn else 0
            self._pending.append([end, changes, first])
        return bool(self._pending) or len(rows) >= self.max_changes

    def _copy_reader(self) -> str:
        """A temporary copy of the slot, at its confirmed position, that this connection reads
        and consumes (it goes with the session): the slot itself moves only at commits."""
        reader = f"jetspark_reader_{uuid.uuid4().hex[:16]}"
        self._conn.execute("SELECT pg_copy_logical_replication_slot(%s, %s, true)", (self.slot, reader))
        return reader

    def _flush(self) -> bool:
        """Emit the queued transactions in order, a room-full at a time; the position follows
        each batch, so a snapshot between two calls covers exactly what went out."""
        outbox = self.outbox
        while self._pending:
            head = self._pending[0]
            end, changes, first = head
            if first < len(changes):
                room = outbox.room()
                if room <= 0:
                    return False
                batch = changes[first : first + room]
                if not outbox.offer_batch(batch):
                    return False
                self.emitted += len(batch)
                head[2] = first = first + len(batch)
                self.partial_lsn, self.partial_count = end, first
            if first >= len(changes):
                self.done = end
                self.partial_lsn = self.partial_count = 0
                self._pending.pop(0)
        return True

    def custom_metrics(self) -> Mapping[str, int]:
        return {"cdcChanges": self.emitted, "cdcPositionLsn": self.done or 0}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class _CdcSupplier(ProcessorSupplier):
    """Makes the one processor; tells the startpoint fan-out that it reads the slot (the split)."""

    def __init__(self, factory: Callable[[], _PostgresCdcP]) -> None:
        self.factory = factory

    def get(self, count: int) -> list[_PostgresCdcP]:
        return [self.factory() for _ in range(count)]

    def split_partition(self, split: str, partition_count: int) -> int:
        return 0  # owned by member 0's first processor, the one that runs


def postgres_cdc(
    dsn: str,
    slot: str,
    publication: str,
    tables: Sequence[str] | None = None,
    types: Mapping[int, Callable[[str], Any]] | None = None,
    max_changes: int = 4096,
    poll_millis: int = 50,
) -> ProcessorMetaSupplier:
    """A stream of `Change` items (`jetspark.processors.pgoutput.Change`: op, schema, table,
    before, after, lsn, seq, commit_time, xid) for every row change committed in the tables of
    `publication`, read from the logical replication slot `slot` (created, with the publication
    on `tables` or on all tables, if missing). Needs `wal_level=logical` on the server.

    Values are text unless `types` maps the column's type OID to a converter (`pgoutput.TYPED`:
    integers, floats, numeric, booleans). Each read asks for about `max_changes` messages; an idle
    slot is asked again every `poll_millis`. The position is saved in snapshots and the slot is
    advanced only when a snapshot is committed (module docstring): with a transactional sink
    (`postgres`, `transactional_files`) under EXACTLY_ONCE each change is in the output once.
    One processor reads the slot. Never completes.

    Changes are captured from the slot's creation on: `create_slot` makes the publication and the
    slot before the writes you want to see (the source creates what is missing when it starts),
    and `drop_slot` drops a slot no job reads any more (a slot keeps WAL on the server). With
    `dsn` naming your server:

    ```pycon
    >>> import time, psycopg
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.processors.pgoutput import TYPED
    >>> from jetspark.processors.postgres_cdc import create_slot, drop_slot
    >>> from jetspark.runners.local import LocalRunner
    >>> with psycopg.connect(dsn, autocommit=True) as db:
    ...     _ = db.execute("CREATE TABLE accounts (id int PRIMARY KEY, balance int)")
    >>> _ = create_slot(dsn, "accounts_slot", "accounts_pub", ["accounts"])
    >>> with psycopg.connect(dsn) as db:  # one transaction
    ...     _ = db.execute("INSERT INTO accounts VALUES (1, 100), (2, 50)")
    ...     _ = db.execute("UPDATE accounts SET balance = 70 WHERE id = 2")
    >>> with psycopg.connect(dsn, autocommit=True) as db:
    ...     _ = db.execute("DELETE FROM accounts WHERE id = 1")
    >>> dag = DAG()
    >>> cdc = P.postgres_cdc(dsn, "accounts_slot", "accounts_pub", types=TYPED, poll_millis=10)
    >>> changes = dag.new_vertex("changes", cdc)
    >>> _ = dag.edge(Edge.between(changes, dag.new_vertex("sink", P.collect())))
    >>> job = LocalRunner().submit(dag)  # never completes: wait for the changes, then cancel
    >>> deadline = time.monotonic() + 60
    >>> while len(job.result("sink")) < 4 and time.monotonic() < deadline:
    ...     time.sleep(0.01)
    >>> job.cancel()
    >>> for change in job.result("sink"):
    ...     print(change.op, change.table, change.seq, change.before, change.after)
    insert accounts 0 None {'id': 1, 'balance': 100}
    insert accounts 1 None {'id': 2, 'balance': 50}
    update accounts 2 None {'id': 2, 'balance': 70}
    delete accounts 0 {'id': 1} None
    >>> drop_slot(dsn, "accounts_slot")
    >>> with psycopg.connect(dsn, autocommit=True) as db:
    ...     _ = db.execute("DROP PUBLICATION accounts_pub")
    ...     _ = db.execute("DROP TABLE accounts")
    ```

    :param dsn: how to connect (a libpq connection string or URL), from where the processor runs.
    :param slot: the logical replication slot (plugin `pgoutput`) to read, created if missing.
    :param publication: the publication naming the tables, created if missing.
    :param tables: the tables of a publication created here (all tables by default).
    :param types: converters of values by column type OID (`pgoutput.TYPED` for the common
        built-in types); other values stay text.
    :param max_changes: about how many messages each read of the slot asks for.
    :param poll_millis: how often an idle slot is asked again.
    """
    if max_changes < 1:
        raise ValueError(f"postgres_cdc: max_changes must be >= 1, got {max_changes}")
    if poll_millis < 0:
        raise ValueError(f"postgres_cdc: poll_millis must be >= 0, got {poll_millis}")
    if not slot or not publication:
        raise ValueError("postgres_cdc: slot and publication must be non-empty names")
    factory = functools.partial(
        _PostgresCdcP,
        dsn,
        slot,
        publication,
        tuple(tables) if tables else None,
        types,
        max_changes,
        poll_millis,
    )
    return FirstMemberOnly(_CdcSupplier(factory))  # a replication slot has one reader

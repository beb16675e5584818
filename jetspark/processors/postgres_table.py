"""`postgres_table`: a bounded source of a PostgreSQL table's rows, read in key ranges by every
processor of the vertex.

On the coordinator (`ProcessorMetaSupplier.init`) the key column's range is cut into splits:
evenly between its minimum and maximum for an integer key, at quantiles (`percentile_disc`) for
any other ordered type, or at the boundaries the caller gives. Split `i` goes to the processor
with global index `i % total parallelism`. A processor reads a split in pages ordered by the key
(`WHERE key > <last key read> ... ORDER BY key LIMIT n`, keyset pagination, so a page costs an
index range scan, not an offset), and emits each row as a dict of column name to value (psycopg's
Python types).

Snapshots: each split is saved as key `("pg_split", i)` with its range and the last key emitted,
finished splits included; a restored processor resumes the splits it is given (routed by key
partition, so any new parallelism works) and only those, as `from_iterable`'s slices do: one given
none resumes nothing, never the splits `init_processor` computed for it. A split absent from the
snapshot was finished (its processor ended, and an ended processor saves nothing), so the splits of
a restored job are exactly those of the snapshot, whatever the member counts before and after. The key
must be unique (a primary key) for the pages to be exact. Each page is its own statement: a
table that changes while it is read is read as the pages find it, not as one snapshot.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.context import MetaSupplierContext, ProcessorContext
from jetspark.core.suppliers import MemberSuppliers, ProcessorMetaSupplier, ProcessorSupplier
from jetspark.core.watermark import Watermark

_SPLIT = "pg_split"
#: A split as saved: [index, low (inclusive, None: unbounded), high (exclusive, None: unbounded),
#: last key emitted (None: none yet), finished].
Split = list[Any]


class _PostgresTableP(AbstractProcessor):
    def __init__(self, dsn: str, spec: _Spec, boundaries: tuple[Any, ...], fetch_size: int) -> None:
        super().__init__()
        self.dsn = dsn
        self.spec = spec
        self.boundaries = boundaries
        self._queries: dict[tuple[bool, bool, bool], Any] = {}
        self.fetch_size = fetch_size
        self.splits: list[Split] = []
        self._restored = False
        self._saving: list[Split] | None = None
        self._conn: Any = None

    def is_cooperative(self) -> bool:
        return False  # database round trips block

    def init_processor(self, context: ProcessorContext) -> None:
        import psycopg
        from psycopg.rows import dict_row

        edges = (None, *self.boundaries, None)
        total = context.running_processor_count
        self.splits = [
            [i, edges[i], edges[i + 1], None, False]
            for i in range(len(edges) - 1)
            if i % total == context.running_processor_index
        ]
        self._conn = psycopg.connect(self.dsn, autocommit=True, row_factory=dict_row)

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete(self) -> bool:
        for split in self.splits:
            if split[4]:
                continue
            room = self.outbox.room()
            if room <= 0:
                return False
            _, low, high, last, _ = split
            limit = min(room, self.fetch_size)
            bounds = [value for value in (low, high, last) if value is not None]
            query = self._query(low is not None, high is not None, last is not None)
            rows = self._conn.execute(query, (*bounds, limit)).fetchall()
            if rows:
                key = rows[-1][_KEY]
                for row in rows:
                    del row[_KEY]
                if not self.outbox.offer_batch(rows):  # cannot be refused: it fits the room
                    raise AssertionError("the outbox refused a batch that fits its room")
                split[3] = key
            if len(rows) < limit:
                split[4] = True
            return False  # one page per call: snapshots and cancellation are not held up
        return True

    def _query(self, low: bool, high: bool, last: bool) -> Any:
        """The page query for a split with these bounds (a missing bound is left out)."""
        shape = (low, high, last)
        query = self._queries.get(shape)
        if query is None:
            query = self._queries[shape] = self.spec.page_query(*shape)
        return query

    def save_to_snapshot(self) -> bool:
        if self._saving is None:
            self._saving = list(self.splits)
        while self._saving:
            split = self._saving[-1]
            if not self.try_emit_to_snapshot((_SPLIT, split[0]), tuple(split)):
                return False
            self._saving.pop()
        self._saving = None
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if not (isinstance(key, tuple) and len(key) == 2 and key[0] == _SPLIT):
            raise ValueError(
                f"vertex {self.context.vertex_name!r} processor #{self.context.global_processor_index}: "
                f"unexpected snapshot entry {key!r} for a postgres_table() source"
            )
        self._forget_own_splits()
        self.splits.append(list(value))

    def finish_snapshot_restore(self) -> bool:
        # Called on every processor of a restored job, also one that received no entry: it then
        # resumes nothing (its own splits were finished or went to another processor).
        self._forget_own_splits()
        self.splits.sort(key=lambda split: split[0])
        return True

    def _forget_own_splits(self) -> None:
        """A restored processor resumes only the splits it is given, never those of `init_processor`."""
        if not self._restored:
            self._restored = True
            self.splits = []

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


#: The key column's alias in the page query: the row's key whatever the selected columns are.
_KEY = "__jetspark_key"


class _Spec:
    """What to read: the table, its key, the columns and the condition (names, not SQL)."""

    def __init__(self, table: str, key_column: str, columns: Sequence[str] | None, where: str | None) -> None:
        self.table = table
        self.key_column = key_column
        self.columns = None if columns is None else tuple(columns)
        #: `%` doubled: every query runs with parameters, so psycopg reads `%` as a placeholder.
        self.where = None if where is None else where.replace("%", "%%")

    def source(self) -> Any:
        """`table [WHERE (where)]`, for the boundary queries."""
        from psycopg import sql

        target = sql.Identifier(*self.table.split(".", 1))
        if self.where:
            return sql.SQL("{} WHERE ({})").format(target, sql.SQL(self.where))
        return target

    def key(self) -> Any:
        from psycopg import sql

        return sql.Identifier(self.key_column)

    def page_query(self, low: bool, high: bool, last: bool) -> Any:
        """A page of a split: parameters are the bounds present (low, high, last key), then the limit."""
        from psycopg import sql

        key = self.key()
        selected = (
            sql.SQL("*")
            if self.columns is None
            else sql.SQL(", ").join(sql.Identifier(column) for column in self.columns)
        )
        conditions = [sql.SQL("({})").format(sql.SQL(self.where))] if self.where else []
        for present, operator in ((low, ">="), (high, "<"), (last, ">")):
            if present:
                conditions.append(sql.SQL("{} {} %s").format(key, sql.SQL(operator)))
        where = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("")
        return sql.SQL(
            "SELECT {selected}, {key} AS {alias} FROM {target}{where} ORDER BY {key} LIMIT %s"
        ).format(
            selected=selected,
            key=key,
            alias=sql.Identifier(_KEY),
            target=sql.Identifier(*self.table.split(".", 1)),
            where=where,
        )


class _TableMetaSupplier(ProcessorMetaSupplier):
    """Cuts the key range into splits on the coordinator, once per job (see the module docstring)."""

    def __init__(self, dsn: str, spec: _Spec, splits: int | Sequence[Any] | None, fetch_size: int) -> None:
        self.dsn = dsn
        self.spec = spec
        self.count = splits if isinstance(splits, int) or splits is None else None
        self.boundaries: tuple[Any, ...] | None = (
            None if isinstance(splits, int) or splits is None else tuple(splits)
        )
        self.fetch_size = fetch_size

    def init(self, context: MetaSupplierContext) -> None:
        if self.boundaries is None:
            count = context.total_parallelism if self.count is None else self.count
            self.boundaries = _cut(self.dsn, self.spec, count)

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        assert self.boundaries is not None, "init() runs before get()"
        supplier = ProcessorSupplier.of(
            functools.partial(_PostgresTableP, self.dsn, self.spec, self.boundaries, self.fetch_size)
        )
        return {index: supplier for index in member_indexes}


def _cut(dsn: str, spec: _Spec, count: int) -> tuple[Any, ...]:
    """`count - 1` boundaries cutting the key's values into `count` ranges."""
    import psycopg
    from psycopg import sql

    if count <= 1:
        return ()
    source, key = spec.source(), spec.key()
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            sql.SQL("SELECT min({k}), max({k}) FROM {s}").format(k=key, s=source), ()
        ).fetchone()
        low, high = (None, None) if row is None else row
        if low is None:
            return ()  # an empty table: one split
        if isinstance(low, int) and isinstance(high, int):
            step = (high - low + 1) / count
            cuts = sorted({low + round(step * i) for i in range(1, count)})
            return tuple(cut for cut in cuts if low < cut <= high)
        fractions = [i / count for i in range(1, count)]
        query = sql.SQL("SELECT percentile_disc(%s::float8[]) WITHIN GROUP (ORDER BY {k}) FROM {s}").format(
            k=key, s=source
        )
        found = conn.execute(query, (fractions,)).fetchone()
        values = [] if found is None or found[0] is None else found[0]
        return tuple(sorted({value for value in values if value != low}))


def postgres_table(
    dsn: str,
    table: str,
    key_column: str,
    splits: int | Sequence[Any] | None = None,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    fetch_size: int = 1000,
) -> ProcessorMetaSupplier:
    """A bounded source of the rows of `table` (`name` or `schema.name`), as dicts of column to
    value, read in ranges of the unique `key_column` by all processors of the vertex (module
    docstring). `splits`: how many ranges (default: the vertex's total parallelism), or the
    boundary values themselves (`[100, 200]` makes `< 100`, `100..199`, `>= 200`). `columns`
    selects columns (default all); `where` is an SQL condition (trusted text, not a parameter)
    that rows must meet. Snapshot-able:
    a restored job resumes each range after the last key it emitted.

    With `dsn` naming your server:

    ```pycon
    >>> import psycopg
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> with psycopg.connect(dsn, autocommit=True) as db:
    ...     _ = db.execute("CREATE TABLE stock (id int PRIMARY KEY, item text, qty int)")
    ...     _ = db.execute("INSERT INTO stock SELECT i, 'item ' || i, i % 3 FROM generate_series(1, 6) i")
    >>> dag = DAG()
    >>> stock = P.postgres_table(dsn, "stock", "id", splits=[3], columns=["id", "qty"], where="qty > 0")
    >>> _ = dag.edge(Edge.between(dag.new_vertex("stock", stock), dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"), key=lambda row: row["id"])
    [{'id': 1, 'qty': 1}, {'id': 2, 'qty': 2}, {'id': 4, 'qty': 1}, {'id': 5, 'qty': 2}]
    >>> with psycopg.connect(dsn, autocommit=True) as db:
    ...     _ = db.execute("DROP TABLE stock")
    ```

    :param dsn: how to connect (a libpq connection string or URL), from where the processors run.
    :param table: the table to read, `name` or `schema.name`.
    :param key_column: a unique column (a primary key) whose ranges the processors read.
    :param splits: how many ranges (the vertex's total parallelism by default), or their boundary
        values.
    :param columns: the columns of the rows (all by default).
    :param where: an SQL condition the rows must meet (trusted text, not a parameter).
    :param fetch_size: how many rows a page (one query) reads.
    """
    if not table or not key_column:
        raise ValueError("postgres_table: table and key_column must be non-empty")
    if isinstance(splits, int) and splits < 1:
        raise ValueError(f"postgres_table: splits must be >= 1, got {splits}")
    if fetch_size < 1:
        raise ValueError(f"postgres_table: fetch_size must be >= 1, got {fetch_size}")
    return _TableMetaSupplier(dsn, _Spec(table, key_column, columns, where), splits, fetch_size)

"""Bounded file sources: `read_text`, `read_jsonl`, `read_csv`, `read_parquet`.

Each reads a file, a glob or a directory (`file_splits.list_files`), listed once where the job is
built. The files are cut into splits (byte ranges of line-based files, row groups of Parquet
files) and the splits are dealt to every processor of the vertex, heaviest first. A processor
reads its splits one after the other, emitting at most `room()` records at a time.

Snapshots: a processor saves, per split it has not finished, key `("split", path, start)` and
value `(end, position)`. A restored processor reads only the splits it was given, from their
positions; a split absent from the snapshot was finished (as `from_iterable`'s slices: a processor
that finished all its splits has ended and owns none). So a restore into any parallelism neither
loses nor repeats a record, and these sources may run under a processing guarantee.

Bad records follow the `errors=` policy (`processors.bad_records`). Files under `col=value`
directories of the directory read (a partitioned output) get `col` added to their dict records,
typed as Spark types partition values (`file_splits.partition_values`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.context import ProcessorContext
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.core.watermark import Watermark
from jetspark.processors._snapshots import EntryWriter
from jetspark.processors.bad_records import BAD_RECORDS_METRIC, BadRecords, ErrorPolicy, check_policy
from jetspark.processors.file_formats import CsvFormat, JsonlFormat, LineFormat, TextFormat
from jetspark.processors.file_splits import (
    DEFAULT_SPLIT_BYTES,
    Split,
    byte_splits,
    deal,
    list_files,
    partition_values,
)
from jetspark.processors.split_readers import LineSplitReader, ParquetSplitReader, SplitReader


class _FileSourceP(AbstractProcessor):
    """Reads its share of the splits; see the module docstring."""

    def __init__(
        self,
        root: str,
        make_reader: Callable[[], SplitReader],
        splits: tuple[Split, ...],
        weights: tuple[int, ...],
        errors: ErrorPolicy,
    ) -> None:
        super().__init__()
        self._root = root
        #: The `col=value` directories of the split being read (added to dict records).
        self._partition: dict[str, Any] = {}
        self._make_reader = make_reader
        self._all_splits = splits
        self._weights = weights
        self._bad = BadRecords(errors)
        #: Splits not finished yet, in reading order, with their positions.
        self._todo: dict[tuple[str, str, int], tuple[Split, int]] = {}
        self._restored = False
        self._batches: Any = None
        self._units: list[Any] = []
        self._units_at = 0
        self._saving = EntryWriter()

    def init_processor(self, context: ProcessorContext) -> None:
        self._bad.init(context.vertex_name, self.outbox)
        self._reader = self._make_reader()
        mine = deal(
            list(self._all_splits),
            list(self._weights),
            context.running_processor_index,
            context.running_processor_count,
        )
        self._todo = {split.key: (split, self._reader.first_position(split)) for split in mine}

    # ---- snapshots ---------------------------------------------------------------------------

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self._forget_own_splits()
        end, position = value
        self._todo[key] = (Split(key[1], key[2], end), position)

    def finish_snapshot_restore(self) -> bool:
        self._forget_own_splits()
        self._todo = dict(sorted(self._todo.items()))
        return True

    def _forget_own_splits(self) -> None:
        if not self._restored:
            self._restored = True
            self._todo = {}

    def save_to_snapshot(self) -> bool:
        return self._saving.save(self.outbox, self._entries)

    def _entries(self) -> list[tuple[Any, Any]]:
        return [(key, (split.end, position)) for key, (split, position) in self._todo.items()]

    # ---- reading -----------------------------------------------------------------------------

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete(self) -> bool:
        while True:
            if self._units and not self._emit_units():
                return False
            if not self._todo:
                self._reader.close()
                return True
            key, (split, position) = next(iter(self._todo.items()))
            if self._batches is None:
                self._batches = self._reader.batches(split, position)
                self._partition = partition_values(self._root, split.path)
            batch = next(self._batches, None)
            if batch is None:
                self._batches = None
                self._reader.close()
                del self._todo[key]
                continue
            self._units_at, self._units = batch

    def _emit_units(self) -> bool:
        """Emit pending units a `room()`-sized piece at a time, moving the split's position past
        each piece as it goes out, so a snapshot between two calls covers exactly what went out."""
        outbox = self.outbox
        policy = self._bad
        key, (split, _) = next(iter(self._todo.items()))
        while self._units:
            room = policy.room(outbox)
            if room <= 0:
                return False
            piece = self._units[:room]
            records, bad = self._reader.parse(piece)
            if bad:
                policy.handle(outbox, split.path, self._units_at, piece, bad)
            if records:
                if self._partition:
                    extra = self._partition  # dict records only: lines and JSON arrays stay as they are
                    records = [{**record, **extra} if type(record) is dict else record for record in records]
                outbox.offer_batch(records, policy.ordinal)
            del self._units[:room]
            self._units_at += self._reader.advance(piece)
            self._todo[key] = (split, self._units_at)
        return True

    def custom_metrics(self) -> dict[str, int]:
        return {BAD_RECORDS_METRIC: self._bad.count}

    def close(self) -> None:
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.close()


def _line_source(
    factory: str, path: str, line_format: LineFormat, errors: ErrorPolicy, split_bytes: int
) -> ProcessorSupplier:
    check_policy(factory, errors)
    if split_bytes < 1:
        raise ValueError(f"{factory}: split_bytes must be >= 1, got {split_bytes}")
    splits = byte_splits(list_files(factory, path), split_bytes)
    weights = tuple(split.end - split.start for split in splits)
    reader = functools.partial(LineSplitReader, line_format)
    return ProcessorSupplier.of(
        functools.partial(_FileSourceP, os.fspath(path), reader, tuple(splits), weights, errors)
    )


def read_text(
    path: str, errors: ErrorPolicy = "fail", split_bytes: int = DEFAULT_SPLIT_BYTES
) -> ProcessorSupplier:
    """A bounded source of the lines (`str`, UTF-8, without their newline) of a file, of the files
    a glob matches, or of the files in a directory and its subdirectories (such as `col=value`
    partitions; names starting with `.` or `_` are left out).

    Files are cut into byte ranges of at most `split_bytes`, dealt to all processors of the
    vertex; each line is read once, by the range it starts in. A line that is not UTF-8 is a bad
    record (`errors`: "fail", "skip" or "dead_letter", see `processors.bad_records`). Offsets are
    saved in snapshots. The files are listed when this is called; they must not change while the
    job runs, and every Spark executor must see them (a shared file system).

    ```pycon
    >>> import os, tempfile
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "poem.txt"), "w") as file:
    ...     _ = file.write("to be\\nor not\\nto be\\n")
    >>> dag = DAG()
    >>> lines = dag.new_vertex("lines", P.read_text(folder))
    >>> _ = dag.edge(Edge.between(lines, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"))
    ['or not', 'to be', 'to be']
    ```

    :param path: a file, a glob or a directory (read with its subdirectories).
    :param errors: what a line that is not UTF-8 does: "fail" (the default), "skip" or
        "dead_letter" (a `BadRecord` on outbound ordinal 1).
    :param split_bytes: the largest byte range one processor reads as a unit.
    """
    return _line_source("read_text", path, TextFormat(), errors, split_bytes)


def read_jsonl(
    path: str, errors: ErrorPolicy = "fail", split_bytes: int = DEFAULT_SPLIT_BYTES
) -> ProcessorSupplier:
    """A bounded source of the JSON values of JSON Lines files (one value per line; blank lines
    are skipped); `path`, splits and snapshots as `read_text`. A line that is not UTF-8 or not
    JSON is a bad record, handled by `errors`: here "skip" drops it and counts it in the vertex's
    `bad_records` metric.

    ```pycon
    >>> import os, tempfile
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "events.jsonl"), "w") as file:
    ...     _ = file.write('{"id": 1, "tag": "a"}\\nnot json\\n\\n{"id": 2, "tag": "b"}\\n')
    >>> dag = DAG()
    >>> events = dag.new_vertex("events", P.read_jsonl(folder, errors="skip"))
    >>> _ = dag.edge(Edge.between(events, dag.new_vertex("sink", P.collect())))
    >>> job = run_dag(dag)
    >>> sorted(job.result("sink"), key=lambda event: event["id"])
    [{'id': 1, 'tag': 'a'}, {'id': 2, 'tag': 'b'}]
    >>> job.metrics()["events"][P.BAD_RECORDS_METRIC]
    1
    ```

    :param path: a file, a glob or a directory (read with its subdirectories).
    :param errors: what a bad line does: "fail" (the default), "skip" or "dead_letter" (a
        `BadRecord` on outbound ordinal 1).
    :param split_bytes: the largest byte range one processor reads as a unit.
    """
    return _line_source("read_jsonl", path, JsonlFormat(), errors, split_bytes)


def read_csv(
    path: str,
    header: bool = True,
    columns: Sequence[str] | None = None,
    types: Mapping[Any, Callable[[str], Any]] | None = None,
    delimiter: str = ",",
    errors: ErrorPolicy = "fail",
    split_bytes: int = DEFAULT_SPLIT_BYTES,
) -> ProcessorSupplier:
    """A bounded source of the rows of CSV files; `path`, splits and snapshots as `read_text`.

    With `header` (the default) the first line of each file names the columns and each row is a
    dict; `columns` names them instead (then a header line is still skipped when `header`).
    Without either, each row is a tuple of strings. `types` maps column names (or indexes) to a
    conversion such as `int` or `float`; an empty field becomes None. A row with another number
    of fields than the header, a value a conversion refuses, or a line that is not UTF-8 is a bad
    record, handled by `errors`. Blank lines are skipped. A quoted field must not hold a newline.

    ```pycon
    >>> import os, tempfile
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "scores.csv"), "w") as file:
    ...     _ = file.write("name,score\\nada,3\\nbob,\\n")
    >>> dag = DAG()
    >>> rows = dag.new_vertex("rows", P.read_csv(folder, types={"score": int}))
    >>> _ = dag.edge(Edge.between(rows, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"), key=lambda row: row["name"])
    [{'name': 'ada', 'score': 3}, {'name': 'bob', 'score': None}]
    ```

    :param path: a file, a glob or a directory (read with its subdirectories).
    :param header: whether the first line of each file is a header (the column names).
    :param columns: the column names, instead of the header's.
    :param types: conversions by column name or index (`int`, `float`, any `str -> value`).
    :param delimiter: the field separator.
    :param errors: what a bad row does: "fail" (the default), "skip" or "dead_letter" (a
        `BadRecord` on outbound ordinal 1).
    :param split_bytes: the largest byte range one processor reads as a unit.
    """
    line_format = CsvFormat(header, columns, types, delimiter)
    return _line_source("read_csv", path, line_format, errors, split_bytes)


def read_parquet(path: str, columns: Sequence[str] | None = None) -> ProcessorSupplier:
    """A bounded source of the rows of Parquet files, as dicts of the `columns` asked for (all by
    default), read with pyarrow one row group at a time.

    Each row group is a split, dealt to the processors of the vertex; the rows read of a row group
    are saved in snapshots. `path` as `read_text`. An unknown column is refused here, naming it
    and the file.

    ```pycon
    >>> import os, tempfile
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> folder = tempfile.mkdtemp()
    >>> table = pa.table({"city": ["Oslo", "Rome"], "temp": [4.5, 17.0], "rain": [True, False]})
    >>> pq.write_table(table, os.path.join(folder, "weather.parquet"))
    >>> dag = DAG()
    >>> rows = dag.new_vertex("rows", P.read_parquet(folder, columns=["city", "temp"]))
    >>> _ = dag.edge(Edge.between(rows, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"), key=lambda row: row["city"])
    [{'city': 'Oslo', 'temp': 4.5}, {'city': 'Rome', 'temp': 17.0}]
    ```

    :param path: a file, a glob or a directory (read with its subdirectories).
    :param columns: the columns to read (all by default).
    """
    return parquet_source("read_parquet", path, functools.partial(ParquetSplitReader, columns), columns)


def parquet_source(
    factory: str,
    path: str,
    make_reader: Callable[[], SplitReader],
    columns: Sequence[str] | None = None,
) -> ProcessorSupplier:
    """`read_parquet`'s source with a reader of one's own (the Spark runner's reads `Row`s)."""
    import pyarrow.parquet as pq

    paths = list_files(factory, path)
    splits: list[Split] = []
    weights: list[int] = []
    for file_path in paths:
        try:
            metadata = pq.read_metadata(file_path)
        except Exception as error:  # pyarrow's message names no file
            raise ValueError(f"{factory}: {file_path} cannot be read as Parquet: {error}") from error
        if columns is not None:
            missing = sorted(set(columns) - set(metadata.schema.names))
            if missing:
                raise ValueError(
                    f"{factory}: {file_path} has no column(s) {missing}; it has {metadata.schema.names}"
                )
        for group in range(metadata.num_row_groups):
            splits.append(Split(file_path, group, group + 1))
            weights.append(metadata.row_group(group).total_byte_size)
    return ProcessorSupplier.of(
        functools.partial(_FileSourceP, os.fspath(path), make_reader, tuple(splits), tuple(weights), "fail")
    )

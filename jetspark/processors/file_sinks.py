"""Exactly-once file sinks in formats: `write_jsonl`, `write_csv`, `write_parquet`.

Built on `transactional.TransactionalSinkP` (the two-phase commit `transactional_files` uses):
each processor writes each transaction to files of its own, hidden until the snapshot that covers
the transaction is committed, then renamed into place. A transaction's files are written as
`<directory>/.<txn>@<partition dir>.tmp` (the partition dir is empty without `partition_by`) and
committed as `<directory>/<partition dir>/part-<job id>-<processor:05d>-<seq:010d>.<extension>`
(the durable job id: a run started over writes beside an earlier run's files, never over them). A
restarted processor finds its uncommitted files by its prefix and commits or rolls them back
(see `transactional`). With `partition_by="col"` each record goes to the directory `col=<value>`
(Hive's layout, as Spark's `partitionBy`) and is left out of the rows in the files, as Spark
does; the file sources, Spark and pyarrow read it back from the directory names. Each processor
counts the bytes of the files it wrote (`custom_metrics`: `bytes_written`, the web UI's per-epoch
sink bytes on Spark).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote, unquote

from jetspark.core.config import ProcessingGuarantee
from jetspark.core.context import ProcessorContext
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.processors.file_splits import NULL_PARTITION
from jetspark.processors.record_writers import (
    OutputFormat,
    RecordWriter,
    csv_output,
    jsonl_output,
    parquet_output,
)
from jetspark.processors.transactional import (
    DEFAULT_MAX_TRANSACTION_ITEMS,
    TransactionalSinkP,
    committed_stem,
)

_log = logging.getLogger("jetspark.sinks")


class _FormatSinkP(TransactionalSinkP):
    """One file per transaction and partition directory; see the module docstring."""

    def __init__(
        self, directory: str, output: OutputFormat, partition_by: str | None, max_transaction_items: int
    ) -> None:
        super().__init__(max_transaction_items)
        self.directory = directory
        self.output = output
        self.partition_by = partition_by
        #: The open writers of the open transaction, by partition directory.
        self._writers: dict[str, RecordWriter] = {}
        self._writers_txn = ""
        #: Bytes of the files this processor finished writing (`custom_metrics`: `bytes_written`).
        self._bytes_written = 0

    def is_cooperative(self) -> bool:
        return False  # file system calls may block

    def init_processor(self, context: ProcessorContext) -> None:
        super().init_processor(context)
        os.makedirs(self.directory, exist_ok=True)
        if context.global_processor_index == 0 and context.processing_guarantee is ProcessingGuarantee.NONE:
            _warn_of_other_runs(self.directory, context.job_id, context.vertex_name)

    def open_on_coordinator(self, job_id: str, vertex: str) -> bool:
        """The driver renames the files when it sees the directory (a shared file system)."""
        return os.path.isdir(self.directory)

    def _temp(self, txn: str, partition: str) -> str:
        return os.path.join(self.directory, f".{txn}@{quote(partition, safe='=')}.tmp")

    def _partition_dir(self, record: Any) -> str:
        column = self.partition_by
        assert column is not None
        try:
            value = record[column]
        except (KeyError, TypeError, IndexError):
            raise KeyError(
                f"vertex {self.context.vertex_name!r}: partition_by={column!r}, but a record has no such "
                f"field: {record!r:.200}"
            ) from None
        return f"{column}={NULL_PARTITION if value is None else quote(str(value), safe='')}"

    def write(self, txn: str, items: list[Any]) -> None:
        if self._writers_txn != txn:
            self._close_writers()
            self._writers_txn = txn
        if self.partition_by is None:
            self._writer(txn, "").write(items)
            return
        column = self.partition_by
        groups: dict[str, list[Any]] = {}
        for item in items:  # the column goes into the directory's name only, as Spark does
            groups.setdefault(self._partition_dir(item), []).append(
                {name: value for name, value in item.items() if name != column}
            )
        for partition, records in groups.items():
            self._writer(txn, partition).write(records)

    def _writer(self, txn: str, partition: str) -> RecordWriter:
        writer = self._writers.get(partition)
        if writer is None:
            writer = self._writers[partition] = self.output.open(self._temp(txn, partition))
        return writer

    def prepare(self, txn: str) -> None:
        self._close_writers()

    def commit(self, txn: str) -> None:
        if self._writers_txn == txn:
            self._close_writers()
        name = f"{committed_stem(txn)}.{self.output.extension}"
        for temp, partition in self._temps(txn):
            target = os.path.join(self.directory, partition)
            os.makedirs(target, exist_ok=True)
            # a missing file was committed before (a restore commits what phase 2 may have committed)
            with contextlib.suppress(FileNotFoundError):
                os.replace(temp, os.path.join(target, name))

    def rollback(self, txn: str) -> None:
        for temp, _ in self._temps(txn):
            with contextlib.suppress(FileNotFoundError):
                os.remove(temp)

    def _temps(self, txn: str) -> list[tuple[str, str]]:
        """(path, partition directory) of the transaction's uncommitted files."""
        head = f".{txn}@"
        return [
            (os.path.join(self.directory, name), unquote(name[len(head) : -4]))
            for name in sorted(os.listdir(self.directory))
            if name.startswith(head) and name.endswith(".tmp")
        ]

    def pending(self, prefix: str) -> list[str]:
        head = f".{prefix}-"
        return sorted(
            {
                name[1:].split("@", 1)[0]
                for name in os.listdir(self.directory)
                if name.startswith(head) and name.endswith(".tmp")
            }
        )

    def _close_writers(self) -> None:
        writers, txn = self._writers, self._writers_txn
        self._writers, self._writers_txn = {}, ""
        for partition, writer in writers.items():
            writer.close()
            with contextlib.suppress(OSError):
                self._bytes_written += os.path.getsize(self._temp(txn, partition))

    def custom_metrics(self) -> dict[str, int]:
        """`bytes_written`: the size of the files written so far (counted as each is closed)."""
        return {"bytes_written": self._bytes_written}

    def close(self) -> None:
        self._close_writers()


def _warn_of_other_runs(directory: str, job_id: str, vertex: str) -> None:
    """A batch job run again into the directory of an earlier run writes its files beside that
    run's (under its own job id), so every row is there twice: say so once per run, naming the
    directory (Spark's writer refuses by default; files() refuses too)."""
    own = f"part-{job_id}-"
    others = sum(
        1
        for _, _, names in os.walk(directory)
        for name in names
        if name.startswith("part-") and not name.startswith(own)
    )
    if others:
        _log.warning(
            "vertex %r: directory %s already holds %d part file(s) of another run; this run writes its "
            "files beside them, so the directory will hold both runs' rows (write each run to a directory "
            "of its own, or delete the old files first)",
            vertex,
            directory,
            others,
        )


def _sink(
    directory: str, output: OutputFormat, partition_by: str | None, max_transaction_items: int
) -> ProcessorSupplier:
    if max_transaction_items < 1:
        raise ValueError(f"max_transaction_items must be >= 1, got {max_transaction_items}")
    return ProcessorSupplier.of(
        functools.partial(_FormatSinkP, os.fspath(directory), output, partition_by, max_transaction_items),
        does_work_without_input=False,
    )


def write_jsonl(
    directory: str,
    partition_by: str | None = None,
    default: Callable[[Any], Any] | None = None,
    max_transaction_items: int = DEFAULT_MAX_TRANSACTION_ITEMS,
) -> ProcessorSupplier:
    """Write each item as a JSON line (`default` converts what `json` cannot) to
    `<directory>/[<partition_by>=<value>/]part-<job id>-<processor>-<seq>.jsonl`.

    Exactly-once under EXACTLY_ONCE: a transaction's files appear, by rename, only when the
    snapshot that covers them is committed (see the module docstring and `transactional_files`);
    readers should skip names starting with a dot. Without a processing guarantee, files are
    committed every `max_transaction_items` items and at the end. The directory must be reachable
    from every Spark executor and written by one job only.

    ```pycon
    >>> import datetime, os, tempfile
    >>> from pathlib import Path
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> folder = tempfile.mkdtemp()
    >>> sales = [
    ...     {"day": "mon", "n": 1, "at": datetime.date(2024, 5, 6)},
    ...     {"day": "tue", "n": 2, "at": datetime.date(2024, 5, 7)},
    ...     {"day": "mon", "n": 3, "at": datetime.date(2024, 5, 6)},
    ... ]
    >>> dag = DAG()
    >>> source = dag.new_vertex("sales", P.from_iterable(sales))
    >>> sink = P.write_jsonl(folder, partition_by="day", default=str)  # str: the dates
    >>> _ = dag.edge(Edge.between(source, dag.new_vertex("files", sink)))
    >>> _ = run_dag(dag)
    >>> sorted(os.listdir(folder))
    ['day=mon', 'day=tue']
    >>> parts = Path(folder, "day=mon").glob("*.jsonl")
    >>> sorted(line for part in parts for line in part.read_text().splitlines())
    ['{"n": 1, "at": "2024-05-06"}', '{"n": 3, "at": "2024-05-06"}']
    ```

    :param directory: where the files go (created if missing).
    :param partition_by: a key of the items (dicts) whose value names each item's directory,
        `<partition_by>=<value>`; the key is left out of the written record.
    :param default: converts a value `json` cannot write (such as `str` for dates).
    :param max_transaction_items: without a processing guarantee, files are committed every this
        many items.
    """
    return _sink(directory, jsonl_output(default), partition_by, max_transaction_items)


def write_csv(
    directory: str,
    columns: Sequence[str] | None = None,
    header: bool = True,
    delimiter: str = ",",
    partition_by: str | None = None,
    max_transaction_items: int = DEFAULT_MAX_TRANSACTION_ITEMS,
) -> ProcessorSupplier:
    """Write each item as a CSV row to `...part-<job id>-<processor>-<seq>.csv` (layout, commit and
    guarantees as `write_jsonl`). Items are dicts, written in the order of `columns` (by default
    the first item's keys; a missing key is an empty field), or sequences; each file starts with
    a header line when `header` and the columns are known.

    ```pycon
    >>> import tempfile
    >>> from pathlib import Path
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> folder = tempfile.mkdtemp()
    >>> dag = DAG()
    >>> scores = dag.new_vertex("scores", P.from_iterable([{"name": "ada", "score": 3, "team": "x"}]))
    >>> sink = P.write_csv(folder, columns=["score", "name"], delimiter=";")
    >>> _ = dag.edge(Edge.between(scores, dag.new_vertex("files", sink)))
    >>> _ = run_dag(dag)
    >>> [part.read_text() for part in Path(folder).glob("*.csv")]
    ['score;name\\n3;ada\\n']
    ```

    :param directory: where the files go (created if missing).
    :param columns: the columns written, in this order (by default the first item's keys).
    :param header: whether each file starts with a line of the column names.
    :param delimiter: the field separator.
    :param partition_by: a key of the items whose value names each item's directory,
        `<partition_by>=<value>`; the column is left out of the rows.
    :param max_transaction_items: without a processing guarantee, files are committed every this
        many items.
    """
    if columns is not None and partition_by is not None:
        columns = [name for name in columns if name != partition_by]  # it is in the directory's name
    return _sink(directory, csv_output(columns, header, delimiter), partition_by, max_transaction_items)


def write_parquet(
    directory: str,
    partition_by: str | None = None,
    schema: Any = None,
    compression: str = "snappy",
    max_transaction_items: int = DEFAULT_MAX_TRANSACTION_ITEMS,
) -> ProcessorSupplier:
    """Write items (dicts) as rows of Parquet files `...part-<job id>-<processor>-<seq>.parquet`, with
    pyarrow (layout, commit and guarantees as `write_jsonl`). Each transaction is one file per
    partition directory, its schema the `pyarrow.Schema` given or inferred from its first batch;
    each batch the sink receives becomes one or more row groups.

    ```pycon
    >>> import tempfile
    >>> import pyarrow.parquet as pq
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> folder = tempfile.mkdtemp()
    >>> readings = [{"city": "Oslo", "temp": 4.5}, {"city": "Rome", "temp": 17.0}]
    >>> readings.append({"city": "Oslo", "temp": 6.0})
    >>> dag = DAG()
    >>> source = dag.new_vertex("readings", P.from_iterable(readings))
    >>> sink = P.write_parquet(folder, partition_by="city", compression="zstd")
    >>> _ = dag.edge(Edge.between(source, dag.new_vertex("files", sink)))
    >>> _ = run_dag(dag)
    >>> rows = pq.read_table(folder).to_pylist()  # pyarrow reads the city from the directories
    >>> sorted((row["city"], row["temp"]) for row in rows)
    [('Oslo', 4.5), ('Oslo', 6.0), ('Rome', 17.0)]
    ```

    :param directory: where the files go (created if missing).
    :param partition_by: a key of the items whose value names each item's directory,
        `<partition_by>=<value>`; the column is left out of the rows.
    :param schema: the `pyarrow.Schema` of the rows (by default inferred from each file's first
        batch).
    :param compression: the Parquet codec ("snappy", "zstd", "gzip", "none", ...).
    :param max_transaction_items: without a processing guarantee, files are committed every this
        many items.
    """
    return _sink(directory, parquet_output(schema, compression), partition_by, max_transaction_items)

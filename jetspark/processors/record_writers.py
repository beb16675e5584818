"""Writers of one output file in a format: JSON Lines, CSV or Parquet.

A `RecordWriter` is opened on a path, takes batches of records (`write`) and is closed once; the
file is complete only after `close`. The sinks in `file_sinks` open one per transaction (and per
partition directory), so a file never needs appending to after it was closed: that is what lets
Parquet, which cannot be appended to, be written in transactions.
"""

from __future__ import annotations

import csv
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any


class RecordWriter:
    def write(self, records: list[Any]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _JsonlWriter(RecordWriter):
    def __init__(self, path: str, default: Callable[[Any], Any] | None) -> None:
        self._file: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed by close())
        self._dumps = json.JSONEncoder(ensure_ascii=False, default=default).encode

    def write(self, records: list[Any]) -> None:
        dumps = self._dumps
        self._file.write("".join(dumps(record) + "\n" for record in records))

    def close(self) -> None:
        self._file.close()


class _CsvWriter(RecordWriter):
    """Dict rows by `columns` (else the first row's keys), or sequences; a header line first."""

    def __init__(self, path: str, columns: Sequence[str] | None, header: bool, delimiter: str) -> None:
        self._file: IO[str] = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115 (closed by close())
        self._writer = csv.writer(self._file, delimiter=delimiter, lineterminator="\n")
        self._columns = list(columns) if columns is not None else None
        self._header = header
        self._started = False

    def write(self, records: list[Any]) -> None:
        if not self._started:
            self._started = True
            first = records[0]
            if self._columns is None and isinstance(first, Mapping):
                self._columns = list(first)
            if self._header and self._columns is not None:
                self._writer.writerow(self._columns)
        columns = self._columns
        try:
            self._writer.writerows(
                [[record.get(name) for name in columns] for record in records]
                if columns is not None and isinstance(records[0], Mapping)
                else records
            )
        except (csv.Error, AttributeError, TypeError) as error:
            raise TypeError(
                f"write_csv takes dicts or sequences (a row's fields): {_first_wrong(records)}"
            ) from error

    def close(self) -> None:
        self._file.close()


class _ParquetWriter(RecordWriter):
    """Rows (dicts) into a Parquet file, a row group per `ROW_GROUP_ROWS` rows (or fewer at the
    end); the first row group fixes the schema (unless `schema` is given)."""

    ROW_GROUP_ROWS = 65_536

    def __init__(self, path: str, schema: Any, compression: str) -> None:
        self._path = path
        self._schema = schema
        self._compression = compression
        self._writer: Any = None
        self._rows: list[Any] = []

    def write(self, records: list[Any]) -> None:
        for record in records:
            if not isinstance(record, Mapping):
                raise TypeError(f"write_parquet takes dicts (column -> value), got {_describe(record)}")
        self._rows.extend(records)
        if len(self._rows) >= self.ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows, self._rows = self._rows, []
        table = pa.Table.from_pylist(rows, schema=self._schema)
        if self._writer is None:
            self._schema = table.schema
            self._writer = pq.ParquetWriter(self._path, table.schema, compression=self._compression)
        self._writer.write_table(table, row_group_size=self.ROW_GROUP_ROWS)

    def close(self) -> None:
        if self._rows:
            self._flush()
        if self._writer is not None:
            self._writer.close()


def _describe(item: Any) -> str:
    text = repr(item)
    return f"{type(item).__name__} {text if len(text) <= 80 else text[:77] + '...'}"


def _first_wrong(records: list[Any]) -> str:
    """The first record that is neither a mapping nor a sequence of fields."""
    for record in records:
        if not isinstance(record, (Mapping, Sequence)) or isinstance(record, (str, bytes)):
            return f"got {_describe(record)}"
    return f"got rows such as {_describe(records[0])}"


class OutputFormat:
    """What `file_sinks` needs of a format: its file extension and a writer for a path."""

    def __init__(self, extension: str, open_writer: Callable[[str], RecordWriter]) -> None:
        self.extension = extension
        self.open = open_writer


def jsonl_output(default: Callable[[Any], Any] | None = None) -> OutputFormat:
    return OutputFormat("jsonl", functools.partial(_JsonlWriter, default=default))


def csv_output(columns: Sequence[str] | None, header: bool, delimiter: str) -> OutputFormat:
    return OutputFormat(
        "csv", functools.partial(_CsvWriter, columns=columns, header=header, delimiter=delimiter)
    )


def parquet_output(schema: Any, compression: str) -> OutputFormat:
    return OutputFormat("parquet", functools.partial(_ParquetWriter, schema=schema, compression=compression))

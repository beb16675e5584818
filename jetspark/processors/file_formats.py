"""How the line-based file formats turn a line's bytes into a record, and say when they cannot.

A `LineFormat` parses a batch of raw lines (bytes, without their newline) into records, and
raises `RecordError` naming what is wrong with one line. Batches are parsed in one comprehension
(the fast path); only a batch that fails is parsed again line by line to find the bad lines.
`parse_batch` returns the records and the bad lines with their positions, and skips lines that
hold no record (blank lines in JSON Lines and CSV, as Spark does).

- `TextFormat`: the line as `str` (UTF-8; a trailing `\\r` is dropped), blank lines included.
- `JsonlFormat`: `json.loads` of each non-blank line.
- `CsvFormat`: each line split by `csv`; with a header, a dict per row keyed by the header's
  names, else a tuple; `types` convert columns (`int`, `float`, any `str -> value` function; an
  empty field becomes None). A row with the wrong number of fields, or a value its type refuses,
  is a bad record. Fields must not hold newlines (a quoted newline would split the row).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jetspark.processors.bad_records import RecordError

#: (index in the batch, reason) of each bad line of a batch.
BadLines = list[tuple[int, str]]
_SKIP = object()


class LineFormat:
    """Base of the line-based formats; `parse` one line, `parse_batch` many."""

    #: Name for messages and `repr`.
    name = "lines"
    #: Whether the first line of each file is a header (read, not emitted).
    has_header = False

    def with_header(self, header: bytes) -> LineFormat:
        """This format for a file whose first line is `header` (formats with a header only)."""
        return self

    def parse(self, line: bytes) -> Any:
        """The record of `line`, `_SKIP` for a line with no record; `RecordError` if it is bad."""
        raise NotImplementedError

    def parse_fast(self, lines: list[bytes]) -> list[Any]:
        """All lines at once; raises anything on a bad line (then `parse_batch` goes line by line)."""
        parse = self.parse
        return [record for record in map(parse, lines) if record is not _SKIP]

    def parse_batch(self, lines: list[bytes]) -> tuple[list[Any], BadLines]:
        try:
            return self.parse_fast(lines), []
        except Exception:  # any failure: find the culprits one by one
            pass
        records: list[Any] = []
        bad: BadLines = []
        parse = self.parse
        for index, line in enumerate(lines):
            try:
                record = parse(line)
            except RecordError as error:
                bad.append((index, str(error)))
                continue
            if record is not _SKIP:
                records.append(record)
        return records, bad


def _decode(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RecordError(f"not UTF-8 ({error.reason} at byte {error.start} of the line)") from None


class TextFormat(LineFormat):
    name = "text"

    def parse(self, line: bytes) -> Any:
        return _decode(line[:-1] if line.endswith(b"\r") else line)

    def parse_fast(self, lines: list[bytes]) -> list[Any]:
        return [(line[:-1] if line.endswith(b"\r") else line).decode("utf-8") for line in lines]


class JsonlFormat(LineFormat):
    name = "jsonl"

    def parse(self, line: bytes) -> Any:
        if not line.strip():
            return _SKIP
        text = _decode(line)
        try:
            return json.loads(text)
        except ValueError as error:
            raise RecordError(f"not valid JSON: {error}") from None

    def parse_fast(self, lines: list[bytes]) -> list[Any]:
        loads = json.loads
        return [loads(line) for line in lines if line and not line.isspace()]


#: The byte order mark some tools (Excel) write at the start of a UTF-8 file.
UTF8_BOM = b"\xef\xbb\xbf"


class CsvFormat(LineFormat):
    name = "csv"

    def __init__(
        self,
        header: bool = True,
        columns: Sequence[str] | None = None,
        types: Mapping[Any, Callable[[str], Any]] | None = None,
        delimiter: str = ",",
    ) -> None:
        self.has_header = header
        self.columns = tuple(columns) if columns is not None else None
        self.types = dict(types or {})
        self.delimiter = delimiter
        self._converters: list[Callable[[str], Any] | None] = []
        if self.columns is not None:
            self._set_columns(self.columns)

    def _set_columns(self, columns: tuple[str, ...]) -> None:
        self.columns = columns
        unknown = [key for key in self.types if key not in columns and not isinstance(key, int)]
        if unknown:
            raise ValueError(f"csv: types name columns {unknown} that are not among {list(columns)}")
        self._converters = [self.types.get(name, self.types.get(index)) for index, name in enumerate(columns)]

    def with_header(self, header: bytes) -> CsvFormat:
        if header.startswith(UTF8_BOM):  # Excel's "CSV UTF-8": not part of the first column's name
            header = header[len(UTF8_BOM) :]
        names = next(csv.reader([_decode(header).rstrip("\r")], delimiter=self.delimiter), [])
        own = CsvFormat(False, None, self.types, self.delimiter)
        own.has_header = True
        own._set_columns(tuple(self.columns or names))
        return own

    def parse(self, line: bytes) -> Any:
        text = _decode(line).rstrip("\r")
        if not text:
            return _SKIP
        try:
            fields = next(csv.reader([text], delimiter=self.delimiter))
        except csv.Error as error:
            raise RecordError(f"not valid CSV: {error}") from None
        columns = self.columns
        if columns is not None and len(fields) != len(columns):
            raise RecordError(f"{len(fields)} fields, the header has {len(columns)}")
        converters = (
            self._converters if columns is not None else [self.types.get(i) for i in range(len(fields))]
        )
        values: list[Any] = []
        for index, (field, convert) in enumerate(zip(fields, converters)):
            if convert is None:
                values.append(field)
            elif field == "":
                values.append(None)
            else:
                try:
                    values.append(convert(field))
                except (TypeError, ValueError) as error:
                    name = columns[index] if columns is not None else index
                    raise RecordError(f"column {name!r}: {error}") from None
        return dict(zip(columns, values)) if columns is not None else tuple(values)

    def parse_fast(self, lines: list[bytes]) -> list[Any]:
        return LineFormat.parse_fast(self, lines)

    def __repr__(self) -> str:
        return f"CsvFormat(header={self.has_header}, columns={self.columns}, delimiter={self.delimiter!r})"


class ParquetFormat:
    """Whole Parquet files, as dicts of `columns` (all by default); not line-based."""

    name = "parquet"
    has_header = False

    def __init__(self, columns: Sequence[str] | None = None) -> None:
        self.columns = list(columns) if columns is not None else None


#: A format a file source or `directory_stream` reads.
FileFormat = LineFormat | ParquetFormat


def text_format() -> TextFormat:
    """Lines as `str` (UTF-8, without their newline; a trailing carriage return is dropped), for
    `directory_stream(format=...)` (its default, also named "text").

    ```pycon
    >>> import os, tempfile, time
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.runners.local import LocalRunner
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "app.log"), "wb") as log:
    ...     _ = log.write(b"started\\r\\nready\\n")
    >>> dag = DAG()
    >>> format = P.text_format()
    >>> records = dag.new_vertex("lines", P.directory_stream(folder, poll_millis=10, format=format))
    >>> _ = dag.edge(Edge.between(records, dag.new_vertex("sink", P.collect())))
    >>> job = LocalRunner().submit(dag)  # never completes: wait for the records, then cancel
    >>> deadline = time.monotonic() + 60
    >>> while len(job.result("sink")) < 2 and time.monotonic() < deadline:
    ...     time.sleep(0.01)
    >>> job.cancel()
    >>> job.result("sink")
    ['started', 'ready']
    ```
    """
    return TextFormat()


def jsonl_format() -> JsonlFormat:
    """JSON Lines: the JSON value of each non-blank line, for `directory_stream(format=...)` (also
    named "jsonl"). A line that is not JSON is a bad record, handled by the source's `errors`.

    ```pycon
    >>> import os, tempfile, time
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.runners.local import LocalRunner
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "events.jsonl"), "w") as file:
    ...     _ = file.write('{"id": 1}\\n\\n[2, 3]\\n')
    >>> dag = DAG()
    >>> format = P.jsonl_format()
    >>> records = dag.new_vertex("events", P.directory_stream(folder, poll_millis=10, format=format))
    >>> _ = dag.edge(Edge.between(records, dag.new_vertex("sink", P.collect())))
    >>> job = LocalRunner().submit(dag)  # never completes: wait for the records, then cancel
    >>> deadline = time.monotonic() + 60
    >>> while len(job.result("sink")) < 2 and time.monotonic() < deadline:
    ...     time.sleep(0.01)
    >>> job.cancel()
    >>> job.result("sink")
    [{'id': 1}, [2, 3]]
    ```
    """
    return JsonlFormat()


def csv_format(
    header: bool = True,
    columns: Sequence[str] | None = None,
    types: Mapping[Any, Callable[[str], Any]] | None = None,
    delimiter: str = ",",
) -> CsvFormat:
    """CSV rows: dicts keyed by the header's names (or `columns`), tuples without either; `types`
    convert columns by name or index (an empty field becomes None), for
    `directory_stream(format=...)`. See `read_csv`.

    ```pycon
    >>> import os, tempfile, time
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.runners.local import LocalRunner
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "points.csv"), "w") as file:
    ...     _ = file.write("1|2.5\\n3|\\n")
    >>> dag = DAG()
    >>> format = P.csv_format(header=False, types={0: int, 1: float}, delimiter="|")
    >>> records = dag.new_vertex("points", P.directory_stream(folder, poll_millis=10, format=format))
    >>> _ = dag.edge(Edge.between(records, dag.new_vertex("sink", P.collect())))
    >>> job = LocalRunner().submit(dag)  # never completes: wait for the records, then cancel
    >>> deadline = time.monotonic() + 60
    >>> while len(job.result("sink")) < 2 and time.monotonic() < deadline:
    ...     time.sleep(0.01)
    >>> job.cancel()
    >>> job.result("sink")
    [(1, 2.5), (3, None)]
    ```

    :param header: whether the first line of each file is a header (the column names).
    :param columns: the column names (rows become dicts), instead of the header's.
    :param types: conversions by column name or index (`int`, `float`, any `str -> value`).
    :param delimiter: the field separator.
    """
    return CsvFormat(header, columns, types, delimiter)


def parquet_format(columns: Sequence[str] | None = None) -> ParquetFormat:
    """Parquet rows as dicts of `columns` (all by default), for `directory_stream(format=...)`
    (also named "parquet"), which reads each new file whole: write a file under a name starting
    with a dot and rename it, so that it is not read half written.

    ```pycon
    >>> import os, tempfile, time
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.runners.local import LocalRunner
    >>> folder = tempfile.mkdtemp()
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> table = pa.table({"city": ["Oslo", "Rome"], "temp": [4.5, 17.0]})
    >>> pq.write_table(table, os.path.join(folder, ".weather.parquet"))
    >>> os.rename(os.path.join(folder, ".weather.parquet"), os.path.join(folder, "weather.parquet"))
    >>> dag = DAG()
    >>> format = P.parquet_format(columns=["city"])
    >>> records = dag.new_vertex("rows", P.directory_stream(folder, poll_millis=10, format=format))
    >>> _ = dag.edge(Edge.between(records, dag.new_vertex("sink", P.collect())))
    >>> job = LocalRunner().submit(dag)  # never completes: wait for the records, then cancel
    >>> deadline = time.monotonic() + 60
    >>> while len(job.result("sink")) < 2 and time.monotonic() < deadline:
    ...     time.sleep(0.01)
    >>> job.cancel()
    >>> job.result("sink")
    [{'city': 'Oslo'}, {'city': 'Rome'}]
    ```

    :param columns: the columns to read (all by default).
    """
    return ParquetFormat(columns)


_BY_NAME: dict[str, Callable[[], FileFormat]] = {
    "text": TextFormat,
    "jsonl": JsonlFormat,
    "csv": CsvFormat,
    "parquet": ParquetFormat,
}


def resolve_format(factory: str, file_format: str | FileFormat) -> FileFormat:
    """A format given by name ("text", "jsonl", "csv", "parquet") or as a format object."""
    if isinstance(file_format, (LineFormat, ParquetFormat)):
        return file_format
    make = _BY_NAME.get(file_format)
    if make is None:
        raise ValueError(
            f"{factory}: format must be one of {', '.join(map(repr, _BY_NAME))} or a format object "
            f"(csv_format(...), parquet_format(...)), got {file_format!r}"
        )
    return make()

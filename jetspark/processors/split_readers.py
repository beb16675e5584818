"""Readers of one split of a file: the raw units of a split (lines, or Parquet rows), how far each
moves the split's position, and how units become records.

A split's *position* is what a snapshot saves: for a line-based file the byte offset of the next
line to read (always a line start), for a Parquet row group the number of rows already read. A
reader starts a split at a saved position, so a restored source reads on where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

from jetspark.processors.bad_records import RecordError
from jetspark.processors.file_formats import BadLines, LineFormat
from jetspark.processors.file_splits import CHUNK_BYTES, Split, first_line_start, read_lines


class SplitReader:
    """Reads splits of one format; `batches` yields `(position, units)` from a position on."""

    def first_position(self, split: Split) -> int:
        """The position of a split not read yet."""
        return split.start

    def batches(self, split: Split, position: int) -> Iterator[tuple[int, list[Any]]]:
        raise NotImplementedError

    def parse(self, units: list[Any]) -> tuple[list[Any], BadLines]:
        """Records of `units`, and the bad ones as (index in `units`, reason)."""
        raise NotImplementedError

    def advance(self, units: Sequence[Any]) -> int:
        """How far `units` move the position."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the open file, if any."""


class LineSplitReader(SplitReader):
    """Lines of a byte range, parsed by a `LineFormat` (with the file's header, if it has one)."""

    def __init__(self, line_format: LineFormat, chunk: int = CHUNK_BYTES) -> None:
        self.format = line_format
        self.chunk = chunk
        self._file: BinaryIO | None = None
        self._own_format = line_format

    def batches(self, split: Split, position: int) -> Iterator[tuple[int, list[Any]]]:
        self.close()
        self._file = file = open(split.path, "rb")  # noqa: SIM115 (closed by close())
        self._own_format = self.format
        if self.format.has_header:
            header = file.readline().rstrip(b"\n")
            try:
                self._own_format = self.format.with_header(header)
            except RecordError as error:  # no header, no columns: the whole file is unreadable
                raise RecordError(
                    f"file {split.path}: its header line (byte 0) cannot be read: {error} (a compressed "
                    "file? CSV is read as uncompressed UTF-8 text)"
                ) from error
            position = max(position, file.tell())
        position = first_line_start(file, position)
        yield from read_lines(file, position, split.end, self.chunk)

    def parse(self, units: list[Any]) -> tuple[list[Any], BadLines]:
        return self._own_format.parse_batch(units)

    def advance(self, units: Sequence[Any]) -> int:
        return sum(map(len, units)) + len(units)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class ParquetSplitReader(SplitReader):
    """Rows of one row group as dicts (only `columns`, when given), read with pyarrow."""

    def __init__(self, columns: Sequence[str] | None, batch_rows: int = 8192) -> None:
        self.columns = list(columns) if columns is not None else None
        self.batch_rows = batch_rows

    def first_position(self, split: Split) -> int:
        return 0  # rows read of row group `split.start`

    def batches(self, split: Split, position: int) -> Iterator[tuple[int, list[Any]]]:
        import pyarrow.parquet as pq

        try:
            with pq.ParquetFile(split.path) as file:
                table = file.read_row_group(split.start, columns=self.columns)
        except Exception as error:  # pyarrow's message names neither file nor row group
            raise OSError(f"file {split.path}: row group {split.start} cannot be read: {error}") from error
        for first in range(position, table.num_rows, self.batch_rows):
            yield first, table.slice(first, self.batch_rows).to_pylist()

    def parse(self, units: list[Any]) -> tuple[list[Any], BadLines]:
        return units, []

    def advance(self, units: Sequence[Any]) -> int:
        return len(units)

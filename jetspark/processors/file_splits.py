"""Which files a file source reads, and how they are cut into splits that processors share.

A source names a file, a glob or a directory; `list_files` turns that into a sorted list of files
(in a directory: its files and those of its subdirectories, such as the `col=value` directories
of a partitioned output, leaving out names that start with `.` or `_`, as Spark skips `_SUCCESS`,
`_temporary` and hidden files). The list is made once, where the job is built, so every member
reads the same one.

Line-based formats (text, JSON Lines, CSV) are cut into byte ranges `[start, end)` of at most
`split_bytes`. As Hadoop's line reader does, a line belongs to the range in which it *starts*: a
range that does not start at 0 skips the partial line it begins in, and the last line a range
reads may run past its end. So every line is read by exactly one range, whatever the split size
(`tests/property/test_file_splits_props.py`). Parquet files are cut at their row groups.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from typing import Any, BinaryIO, NamedTuple
from urllib.parse import unquote

#: Default most bytes of one split of a line-based file (Spark's `maxPartitionBytes` is 128 MB).
DEFAULT_SPLIT_BYTES = 64 << 20
#: Bytes read at a time from a line-based file.
CHUNK_BYTES = 1 << 20


class Split(NamedTuple):
    """A piece of one file: bytes `[start, end)` of a line-based file, or row group `start` of a
    Parquet file (`end = start + 1`). `key` names it in snapshots."""

    path: str
    start: int
    end: int

    @property
    def key(self) -> tuple[str, str, int]:
        return ("split", self.path, self.start)


def list_files(factory: str, path: str) -> list[str]:
    """The files `path` names (a file, a glob or a directory), sorted; an error naming `path` when
    it names none."""
    path = os.fspath(path)
    if glob.has_magic(path):
        found = [p for p in glob.glob(path) if os.path.isfile(p)]
    elif os.path.isdir(path):
        found = []
        for root, directories, names in os.walk(path):
            directories[:] = [name for name in directories if not name.startswith((".", "_"))]
            found += [os.path.join(root, name) for name in names if not name.startswith((".", "_"))]
    elif os.path.isfile(path):
        found = [path]
    else:
        raise FileNotFoundError(f"{factory}: no such file or directory: {path!r}")
    if not found:
        raise FileNotFoundError(f"{factory}: {path!r} matches no files")
    return sorted(found)


def byte_splits(paths: list[str], split_bytes: int) -> list[Split]:
    """Every file cut into ranges of at most `split_bytes` (an empty file: no split)."""
    splits: list[Split] = []
    for path in paths:
        size = os.path.getsize(path)
        splits.extend(
            Split(path, start, min(start + split_bytes, size)) for start in range(0, size, split_bytes)
        )
    return splits


def deal(splits: list[Split], weights: list[int], processor: int, processors: int) -> list[Split]:
    """Processor `processor`'s share of `splits`: the heaviest first, dealt round-robin, so that
    shares are even in count and close in size; each split goes to exactly one processor."""
    order = sorted(range(len(splits)), key=lambda i: (-weights[i], i))
    return [splits[i] for position, i in enumerate(order) if position % processors == processor]


def first_line_start(file: BinaryIO, start: int) -> int:
    """Where the first line that starts at or after byte `start` begins (`start` itself when it
    is 0 or follows a newline)."""
    if start == 0:
        return 0
    file.seek(start - 1)
    return start - 1 + len(file.readline())


def read_lines(
    file: BinaryIO, position: int, end: int, chunk: int = CHUNK_BYTES
) -> Iterator[tuple[int, list[bytes]]]:
    """Batches `(offset of the first line, lines)` of the lines that start in `[position, end)`,
    `position` being a line start; the lines come without their newline. A last line without a
    newline counts as a line."""
    file.seek(position)
    carry = b""
    while position < end:
        data = file.read(chunk)
        if not data:
            if carry:
                yield position, [carry]
            return
        data = carry + data if carry else data
        lines = data.split(b"\n")
        carry = lines.pop()  # the part after the last newline: incomplete, or b"" at a line end
        offset = position
        whole = len(data) - len(carry)  # bytes of the complete lines
        if position + whole <= end:  # all of them start in the range
            position += whole
            if lines:
                yield offset, lines
            continue
        batch: list[bytes] = []
        for line in lines:
            if position >= end:
                break
            batch.append(line)
            position += len(line) + 1
        if batch:
            yield offset, batch
        if position >= end:
            return


#: The directory name of a partition whose value is None (Spark's and Hive's name for it).
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def partition_values(root: str, path: str) -> dict[str, Any]:
    """The `col=value` directories between `root` and the file `path` (Hive's layout, written by
    `partition_by` and by Spark's `partitionBy`), as Spark reads them: a value that is an int or a
    float becomes one, `__HIVE_DEFAULT_PARTITION__` becomes None, anything else stays a string."""
    if not os.path.isdir(root):
        return {}
    values: dict[str, Any] = {}
    for part in os.path.relpath(os.path.dirname(path), root).split(os.sep):
        name, equals, raw = part.partition("=")
        if equals and name:
            values[unquote(name)] = _typed(unquote(raw))
    return values


def _typed(raw: str) -> Any:
    if raw == NULL_PARTITION:
        return None
    for convert in (int, float):
        try:
            return convert(raw)
        except ValueError:
            pass
    return raw

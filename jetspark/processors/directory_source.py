"""`directory_stream`: a replayable source that tails the append-only files of a directory.

Each file belongs to the processor that owns the partition of its name (the same partitioning
that routes snapshot entries, so a restore hands a file's offset to its owner, also on another
parallelism). A processor polls its files every `poll_millis`, reads what was appended since its
offset and emits every complete line (a line without its newline yet waits for it). Its snapshot
state is, per file, the byte offset after the last line it emitted: a restored job reads on from
there, so with EXACTLY_ONCE each line is emitted once into the committed output. Files must only
grow; a file that shrinks is an error naming it; a file deleted is forgotten at the next poll; a
name that comes to name another file (another inode, or other first bytes) is read from its start. The interface (poll, emit, save `offset` per
`split`) is the one a Kafka source fits too: a split is a topic partition, the offset its position.

Startpoints (`jetspark.checkpoint.startpoints`): a split is a file name. At start, after its
snapshot was restored, a processor resolves the startpoints fanned out to it and starts each file
there instead: `Specific(offset)` at that byte, `Oldest` at 0, `Upcoming` after the last complete
line, `Timestamp(ts)` at the first line whose `timestamp_fn(line)` is >= ts (else the end).

Formats (`file_formats`): lines as text (the default), JSON Lines or CSV, read as they are
appended (a CSV file's header is its first line, read again after a restore); or whole Parquet
files, whose offset is the number of rows emitted (a Parquet file must appear whole: write it
under a name starting with a dot and rename it). A line the format cannot read is handled by the
`errors=` policy (`bad_records`): the default fails the job naming the file and the line's byte
offset; "skip" and "dead_letter" move the offset past it, so a restart does not meet it again.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.context import STARTPOINTS_ATTRIBUTE, ProcessorContext
from jetspark.core.errors import JobFailedError, PermanentError
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.core.watermark import Watermark
from jetspark.engine.snapshot import entry_partition
from jetspark.processors.bad_records import BAD_RECORDS_METRIC, BadRecords, ErrorPolicy, check_policy
from jetspark.processors.file_formats import FileFormat, LineFormat, ParquetFormat, TextFormat, resolve_format

if TYPE_CHECKING:  # fsspec is needed only by jobs that keep snapshots
    from jetspark.checkpoint.startpoint_source import SourceStartpoints
    from jetspark.checkpoint.startpoints import Startpoint

_FILE = "file"


#: Bytes at the start of a file that tell it from another file made under its name.
HEAD_BYTES = 64


class _DirectoryStreamP(AbstractProcessor):
    waits_for_data = True

    def __init__(
        self,
        directory: str,
        pattern: str,
        poll_millis: int,
        max_line_bytes: int,
        timestamp_fn: Callable[[str], int] | None = None,
        file_format: FileFormat | None = None,
        errors: ErrorPolicy = "fail",
    ) -> None:
        super().__init__()
        self.directory = directory
        self.format: FileFormat = file_format if file_format is not None else TextFormat()
        self._bad = BadRecords(errors)
        #: Per file, the format that knows its header (CSV), made when the file is first read.
        self._file_formats: dict[str, LineFormat] = {}
        self.timestamp_fn = timestamp_fn
        self.pattern = pattern
        self.poll = poll_millis / 1000
        self.max_line_bytes = max_line_bytes
        self.offsets: dict[str, int] = {}
        #: Per file, the inode its offset was read from and its first bytes (up to `HEAD_BYTES`): a
        #: name that now names another file (a log renamed away and made again, a file deleted
        #: and written anew, perhaps on the same inode) is read from its start.
        self._inodes: dict[str, int] = {}
        self._heads: dict[str, bytes] = {}
        self._next_poll = 0.0
        #: Units read but not emitted yet (raw lines without their newline, or Parquet rows), and their file.
        self._pending: list[Any] = []
        self._pending_file = ""
        self._saving: list[tuple[Any, Any]] | None = None
        self._startpoints: SourceStartpoints | None = None
        self._started = False

    def init_processor(self, context: ProcessorContext) -> None:
        self._bad.init(context.vertex_name, self.outbox)
        self._mine = frozenset(context.processor_partitions)
        self._adopts = context.running_members is not None
        self._partition_count = context.partition_count
        if STARTPOINTS_ATTRIBUTE in context.attributes:
            from jetspark.checkpoint.startpoint_source import SourceStartpoints

            self._startpoints = SourceStartpoints(
                context.attributes, context.vertex_name, context.global_processor_index
            )

    def _start(self) -> None:
        """Once, after the restore and before the first read or save: apply the startpoints."""
        self._started = True
        if self._startpoints is not None:
            self.offsets.update(self._startpoints.start(dict(self.offsets), self._resolve))

    def _resolve(self, name: str, startpoint: Startpoint) -> int:
        """The byte offset where `startpoint` starts file `name` (see the module docstring)."""
        from jetspark.checkpoint.startpoints import Oldest, Specific, Timestamp

        path = os.path.join(self.directory, name)
        if isinstance(startpoint, Oldest):
            return 0
        if isinstance(self.format, ParquetFormat):
            return self._resolve_rows(name, path, startpoint)
        if isinstance(startpoint, Specific):
            size = os.path.getsize(path) if os.path.exists(path) else 0
            if startpoint.offset > size:
                raise PermanentError(
                    f"vertex {self.context.vertex_name!r}: Specific startpoint offset {startpoint.offset} "
                    f"is beyond the end of {path} ({size} bytes)"
                )
            return startpoint.offset
        if not isinstance(startpoint, Timestamp):  # Upcoming
            return _end_of_last_line(path)
        timestamp_fn = self.timestamp_fn
        if timestamp_fn is None:
            raise PermanentError(
                f"vertex {self.context.vertex_name!r}: a Timestamp startpoint for file {name!r} needs "
                "directory_stream(timestamp_fn=...) to read the lines' timestamps"
            )
        position = 0
        try:
            with open(path, "rb") as file:
                for line in file:  # a line at a time: the file may be large
                    if not line.endswith(b"\n"):
                        break  # incomplete: not there yet
                    # a line that is not UTF-8 is for the errors= policy to judge when it is read
                    if timestamp_fn(line[:-1].decode("utf-8", errors="replace")) >= startpoint.timestamp:
                        return position
                    position += len(line)
        except FileNotFoundError:
            return 0
        return position  # no line at or after the timestamp: after the last complete line

    def _resolve_rows(self, name: str, path: str, startpoint: Startpoint) -> int:
        """A Parquet file's start: `Specific(row)`, or `Upcoming` after its last row."""
        from jetspark.checkpoint.startpoints import Specific, Timestamp

        if isinstance(startpoint, Timestamp):
            raise PermanentError(
                f"vertex {self.context.vertex_name!r}: a Timestamp startpoint for Parquet file {name!r} is "
                "not supported; use Specific(row), Oldest or Upcoming"
            )
        if isinstance(startpoint, Specific):
            return startpoint.offset
        import pyarrow.parquet as pq

        return int(pq.read_metadata(path).num_rows) if os.path.exists(path) else 0

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success and self._startpoints is not None:
            self._startpoints.committed()
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def _owns(self, name: str) -> bool:
        """The file is this processor's when a restore hands it the file's offset (behind
        `FirstMemberOnly` that includes the partitions of members that run no processor)."""
        partition = entry_partition((_FILE, name), self._partition_count)
        return partition in self._mine or (self._adopts and self.context.restores_partition(partition))

    def complete(self) -> bool:
        if not self._started:
            self._start()
        if self._pending and not self._flush_pending():
            return False
        now = time.monotonic()
        if now < self._next_poll:
            return False
        self._next_poll = now + self.poll
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return False
        self._forget_deleted(names)
        for name in names:
            if fnmatch.fnmatch(name, self.pattern) and not name.startswith(".") and self._owns(name):
                self._read(name)
                if self._pending and not self._flush_pending():
                    return False
        return False  # a stream: it never completes

    def _forget_deleted(self, names: list[str]) -> None:
        """Drop what is kept of files no longer in the directory (as Jet's file watcher does on a
        delete): rotated logs would otherwise grow the state and every snapshot for ever, and a
        file made again under the name is read from its start."""
        for gone in self.offsets.keys() - set(names):
            self._forget(gone)

    def _forget(self, name: str) -> None:
        self.offsets.pop(name, None)
        self._inodes.pop(name, None)
        self._heads.pop(name, None)
        self._file_formats.pop(name, None)

    def _same_head(self, name: str, path: str) -> bool:
        """Whether the file still starts with the bytes it started with when first read (read
        only when it has changed size); remembers them on the first read."""
        head = self._heads.get(name)
        with open(path, "rb") as file:
            now = file.read(HEAD_BYTES if head is None else len(head))
        if head is None:
            self._heads[name] = now
            return True
        return now == head

    def _same_file(self, name: str, path: str) -> bool:
        """Whether `name` still names the file its offset was read from (by inode; a file not
        seen yet is taken as it is). False when it is gone; a replaced file is forgotten, so
        it is read from its start."""
        try:
            inode = os.stat(path).st_ino
        except FileNotFoundError:
            return False
        if self._inodes.get(name, inode) != inode:
            self._forget(name)
        self._inodes[name] = inode
        return True

    def _read(self, name: str) -> None:
        path = os.path.join(self.directory, name)
        if not self._same_file(name, path):
            return
        if isinstance(self.format, ParquetFormat):
            self._read_parquet(name, path, self.format)
            return
        offset = self.offsets.get(name, 0)
        try:
            size = os.path.getsize(path)
            if size != offset and not self._same_head(name, path):
                self._forget(name)  # another file under the name (its inode reused): from its start
                offset = 0
        except FileNotFoundError:
            return
        if size < offset:
            raise PermanentError(
                f"vertex {self.context.vertex_name!r}: file {path} shrank from {offset} to {size} bytes; "
                "directory_stream reads append-only files"
            )
        if size == offset or not self._header_read(name, path):
            return
        offset = self.offsets.get(name, 0)
        with open(path, "rb") as file:
            file.seek(offset)
            data = file.read(min(size - offset, 1 << 20))
        end = data.rfind(b"\n")
        if end < 0:
            if len(data) > self.max_line_bytes:
                raise PermanentError(
                    f"file {path}: a line at byte {offset} is longer than {self.max_line_bytes} bytes"
                )
            return
        self._pending = data[:end].split(b"\n")
        self._pending_file = name

    def _header_read(self, name: str, path: str) -> bool:
        """Make the file's own format: a CSV file's first line is its header (skipped at offset
        0). False while the header has no newline yet."""
        if name in self._file_formats:
            return True
        line_format = self.format
        assert isinstance(line_format, LineFormat)
        if line_format.has_header:
            with open(path, "rb") as file:
                header = file.readline()
            if not header.endswith(b"\n"):
                return False
            line_format = line_format.with_header(header[:-1])
            if self.offsets.get(name, 0) == 0:
                self.offsets[name] = len(header)
        self._file_formats[name] = line_format
        return True

    def _read_parquet(self, name: str, path: str, parquet: ParquetFormat) -> None:
        """A whole Parquet file; its offset counts the rows emitted."""
        import pyarrow.parquet as pq

        done = self.offsets.get(name, 0)
        try:
            rows = pq.read_metadata(path).num_rows
        except FileNotFoundError:
            return
        except Exception as error:  # a file that is not (yet) Parquet: say which
            raise JobFailedError(
                f"vertex {self.context.vertex_name!r}: cannot read {path} as Parquet ({error}); write "
                "Parquet files under a name starting with a dot and rename them when complete"
            ) from error
        if rows < done:
            raise PermanentError(
                f"vertex {self.context.vertex_name!r}: Parquet file {path} shrank from {done} to {rows} rows"
            )
        if rows > done:
            self._pending = pq.read_table(path, columns=parquet.columns).slice(done).to_pylist()
            self._pending_file = name

    def _flush_pending(self) -> bool:
        """Emit the units read; the file's offset moves past each batch as it goes out, so a
        snapshot taken between two calls covers exactly the lines emitted."""
        name = self._pending_file
        outbox = self.outbox
        lines = not isinstance(self.format, ParquetFormat)
        while self._pending:
            room = self._bad.room(outbox)
            if room <= 0:
                return False
            raw = self._pending[:room]
            offset = self.offsets.get(name, 0)
            if lines:
                records, bad = self._file_formats[name].parse_batch(raw)
                if bad:
                    self._bad.handle(outbox, os.path.join(self.directory, name), offset, raw, bad)
                advance = sum(map(len, raw)) + len(raw)
            else:
                records, advance = raw, len(raw)
            if records:
                outbox.offer_batch(records, self._bad.ordinal)
            del self._pending[:room]
            self.offsets[name] = offset + advance
        return True

    def custom_metrics(self) -> dict[str, int]:
        return {BAD_RECORDS_METRIC: self._bad.count}

    def save_to_snapshot(self) -> bool:
        if not self._started:
            self._start()
        if self._saving is None:
            if self._startpoints is not None:
                self._startpoints.saved(self.offsets)
            inodes, heads = self._inodes, self._heads
            self._saving = [
                ((_FILE, name), (offset, inodes.get(name), heads.get(name)))
                for name, offset in self.offsets.items()
            ]
        while self._saving:
            key, value = self._saving[-1]
            if not self.try_emit_to_snapshot(key, value):
                return False
            self._saving.pop()
        self._saving = None
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        offset, inode, head = value if isinstance(value, tuple) else (value, None, None)  # older: an offset
        self.offsets[key[1]] = offset
        if inode is not None:
            self._inodes[key[1]] = inode
        if head is not None:
            self._heads[key[1]] = head


def _end_of_last_line(path: str, chunk: int = 1 << 16) -> int:
    """The offset after the last newline of the file (0 if it has none, or does not exist)."""
    try:
        with open(path, "rb") as file:
            end = file.seek(0, os.SEEK_END)
            while end > 0:
                start = max(0, end - chunk)
                file.seek(start)
                found = file.read(end - start).rfind(b"\n")
                if found >= 0:
                    return start + found + 1
                end = start
    except FileNotFoundError:
        pass
    return 0


class _DirectoryStreamSupplier(ProcessorSupplier):
    """Makes the processors; tells the startpoint fan-out which partition owns a file."""

    def __init__(self, factory: Callable[[], _DirectoryStreamP], directory: str) -> None:
        self.factory = factory
        self.directory = directory

    def get(self, count: int) -> list[_DirectoryStreamP]:
        return [self.factory() for _ in range(count)]

    def split_partition(self, split: str, partition_count: int) -> int:
        return entry_partition((_FILE, split), partition_count)

    def split_problem(self, split: str) -> str | None:
        """Why a startpoint's split names no file this source reads, as far as the driver can see
        (its directory may be on the executors only: then nothing is said); None if it does."""
        if "/" in split or os.sep in split:
            return f"a split is a file name in {self.directory}, not a path ({split!r})"
        if not os.path.isdir(self.directory) or os.path.isfile(os.path.join(self.directory, split)):
            return None
        return f"{self.directory} holds no file {split!r} (it applies if one appears)"


def directory_stream(
    directory: str,
    pattern: str = "*",
    poll_millis: int = 100,
    max_line_bytes: int = 1 << 20,
    timestamp_fn: Callable[[str], int] | None = None,
    format: str | FileFormat = "text",
    errors: ErrorPolicy = "fail",
) -> ProcessorSupplier:
    """A stream of the records appended to the files in `directory` whose names match `pattern`
    (names starting with a dot are skipped). Offsets are saved in snapshots; see the module
    docstring. Never completes. `timestamp_fn(line)` (milliseconds, given the line's text) is
    needed only to resolve `Timestamp` startpoints.

    `format`: "text" (each line as `str`, the default), "jsonl", "csv", "parquet" (whole files),
    or a format object (`csv_format(types=...)`, `parquet_format(columns=...)`). `errors`: what a
    line the format cannot read does (a line that is not UTF-8, bad JSON, a bad CSV row):
    "fail" (naming the file and the byte offset), "skip" (counted in the metric `bad_records`) or
    "dead_letter" (a `BadRecord` to outbound ordinal 1); see `processors.bad_records`.

    ```pycon
    >>> import os, tempfile, time
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.runners.local import LocalRunner
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "app.log"), "w") as log:
    ...     _ = log.write("started\\nready\\n")
    >>> dag = DAG()
    >>> lines = dag.new_vertex("lines", P.directory_stream(folder, "*.log", poll_millis=10))
    >>> _ = dag.edge(Edge.between(lines, dag.new_vertex("sink", P.collect())))
    >>> job = LocalRunner().submit(dag)  # never completes: wait for the lines, then cancel
    >>> deadline = time.monotonic() + 60
    >>> while len(job.result("sink")) < 2 and time.monotonic() < deadline:
    ...     time.sleep(0.01)
    >>> job.cancel()
    >>> job.result("sink")
    ['started', 'ready']
    ```

    :param directory: the directory to watch (a local path); it must exist when the DAG is built.
    :param pattern: which file names to read (`fnmatch` style).
    :param poll_millis: how often a processor looks for new lines.
    :param max_line_bytes: a longer line is an error naming the file.
    :param timestamp_fn: a line's event time in milliseconds, for `Timestamp` startpoints only.
    :param format: how a file's bytes become records (see above).
    :param errors: what a record the format cannot read does: "fail", "skip" or "dead_letter".
    """
    if poll_millis < 0:
        raise ValueError(f"directory_stream: poll_millis must be >= 0, got {poll_millis}")
    if not os.path.isdir(directory):  # a typo would otherwise wait for files forever, silently
        what = "is not a directory" if os.path.exists(directory) else "does not exist"
        raise FileNotFoundError(
            f"directory_stream: {directory!r} {what}; create it before the job starts (files that "
            "appear in it later are read as they come)"
        )
    check_policy("directory_stream", errors)
    file_format = resolve_format("directory_stream", format)
    return _DirectoryStreamSupplier(
        functools.partial(
            _DirectoryStreamP,
            directory,
            pattern,
            poll_millis,
            max_line_bytes,
            timestamp_fn,
            file_format,
            errors,
        ),
        directory,
    )

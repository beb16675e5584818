"""The consumer end of a stage boundary: one member's shuffled records, read lazily.

Spark hands a task its shuffle input as one iterator with every pair mixed: each producing task's
records in the order it wrote them, the producing tasks in any order. `ShuffleReader` reads that
iterator one record at a time, and only when the queue the next record belongs to asks for more,
so a task holds a bounded share of its input whatever the input's size, and back-pressure reaches
Spark's reader: a record is decoded when its consumer has room for it.

A record whose consumer does not ask for it (the consumer drains a lower-priority edge first, or
its downstream waits for such an edge) would block every record behind it. When the task's loop
finds nothing to do and the record at the head has waited `patience` seconds, the reader moves it
aside into its pair's `SpillBuffer` (a few records in memory, the rest in a temporary file) and
reads on; it keeps doing so, without waiting, until a consumer takes a record again.

Records of one pair carry sequence numbers; one that arrives early is held back until its turn,
so a pair's entries are replayed in the producer's order whatever the arrival order.
"""

from __future__ import annotations

import pickle
import struct
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import IO, Any

from jetspark.runners.spark.records import END_EPOCH, DataRecord, ProcessorId, Record, SourceRecord

PairKey = tuple[int, ProcessorId, ProcessorId]  # (edge index, producer, consumer)
_LENGTH = struct.Struct("<Q")


class SpillBuffer:
    """A FIFO of `(seq, payload)` records: the first `memory_records` in memory, the rest on disk."""

    __slots__ = ("_memory", "_memory_records", "_file", "_read_at", "_write_at", "_on_disk")

    def __init__(self, memory_records: int = 2) -> None:
        self._memory: deque[tuple[int, bytes]] = deque()
        self._memory_records = memory_records
        self._file: IO[bytes] | None = None
        self._read_at = 0
        self._write_at = 0
        self._on_disk = 0

    def __len__(self) -> int:
        return len(self._memory) + self._on_disk

    def append(self, seq: int, payload: bytes) -> None:
        if not self._on_disk and len(self._memory) < self._memory_records:
            self._memory.append((seq, payload))
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="jetspark-spill-")  # noqa: SIM115 (closed in close())
        self._file.seek(self._write_at)
        self._file.write(_LENGTH.pack(seq) + _LENGTH.pack(len(payload)) + payload)
        self._write_at = self._file.tell()
        self._on_disk += 1

    def popleft(self) -> tuple[int, bytes] | None:
        if self._memory:
            return self._memory.popleft()
        if not self._on_disk:
            return None
        assert self._file is not None
        self._file.seek(self._read_at)
        (seq,) = _LENGTH.unpack(self._file.read(_LENGTH.size))
        (size,) = _LENGTH.unpack(self._file.read(_LENGTH.size))
        payload = self._file.read(size)
        self._read_at = self._file.tell()
        self._on_disk -= 1
        if not self._on_disk:  # drained: start the file over
            self._read_at = self._write_at = 0
            self._file.truncate(0)
        return seq, payload

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class _Input:
    """One reader of the shuffle: a pair's queue or a `from_rdd` source. Its records that were
    moved aside wait in `spilled`."""

    __slots__ = ("name", "spilled")

    def __init__(self, name: str) -> None:
        self.name = name
        self.spilled = SpillBuffer()


class _PairInput(_Input):
    __slots__ = ("next_seq", "early", "last_seen")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.next_seq = 0
        self.early: dict[int, bytes] = {}
        #: 0 until the pair's last record was read, then how it ended (`END_DONE`, `END_EPOCH`).
        self.last_seen = 0


class ShuffleReader:
    """Reads one member's shuffle input lazily for the queues and sources of its stage.

    Thread-safe: queues of non-cooperative consumers read from their own threads. Records that
    belong to no reader of this stage (results, metrics and staged files of upstream stages) are
    put in `passing` in the order met; the task sends them on.
    """

    def __init__(self, records: Iterator[Record], patience: float = 0.01) -> None:
        self._records = records
        self._lock = threading.Lock()
        self._head: Any = None
        self._head_since = 0.0
        self._exhausted = False
        self._stuck = False
        self._patience = patience
        self._pairs: dict[PairKey, _PairInput] = {}
        self._sources: dict[str, _Input] = {}
        self.passing: deque[Any] = deque()
        #: A producer ended its epoch output with the terminal snapshot barrier.
        self.epoch_end_seen = False

    # ---- readers ----------------------------------------------------------------------------

    def replay_queue(self, key: PairKey, name: str) -> ReplayQueue:
        """The queue that replays pair `key`'s entries to its consumer."""
        pair = self._pairs[key] = _PairInput(name)
        return ReplayQueue(name, self, pair)

    def source(self, vertex: str) -> ShuffledSourceInput:
        """The input of `from_rdd` source vertex `vertex` (its RDD was shuffled to its members)."""
        reader = self._sources[vertex] = _Input(f"source {vertex!r}")
        return ShuffledSourceInput(self, reader)

    def next_payload(self, pair: _PairInput) -> bytes | None:
        """The pair's next payload in sequence order, or None if it is not here yet."""
        with self._lock:
            while True:
                payload = pair.early.pop(pair.next_seq, None)
                if payload is None:
                    found = pair.spilled.popleft() or self._take_head(pair)
                    if found is None:
                        return None
                    seq, payload = found
                    if seq != pair.next_seq:
                        pair.early[seq] = payload
                        continue
                pair.next_seq += 1
                return payload

    def next_source_payload(self, source: _Input) -> bytes | None:
        """A source's next payload; None if none is here now; b"" once the input is exhausted."""
        with self._lock:
            found = source.spilled.popleft() or self._take_head(source)
            if found is not None:
                return found[1]
            return b"" if self._exhausted and self._head is None else None

    # ---- the head of the input --------------------------------------------------------------

    def _owner(self, value: Any) -> _Input:
        if type(value) is DataRecord:
            pair = self._pairs.get((value.edge, value.producer, value.consumer))
            if pair is None:
                raise AssertionError(
                    f"stage {value.stage}: a record of edge #{value.edge} from producer {value.producer} "
                    f"to {value.consumer}, which is not a consumer in this task"
                )
            if value.last:
                pair.last_seen = value.last
                if value.last == END_EPOCH:
                    self.epoch_end_seen = True
            return pair
        source = self._sources.get(value.vertex)
        if source is None:
            raise AssertionError(
                f"stage {value.stage}: items of source {value.vertex!r}, which is not in this task"
            )
        return source

    def _peek(self) -> Any:
        """The record at the head (reading one if needed); passing records are set aside."""
        while self._head is None and not self._exhausted:
            try:
                _, value = next(self._records)
            except StopIteration:
                self._exhausted = True
                break
            if type(value) is DataRecord or type(value) is SourceRecord:
                self._head = value
                self._head_since = time.monotonic()
            else:
                self.passing.append(value)
        return self._head

    def _take_head(self, reader: _Input) -> tuple[int, bytes] | None:
        head = self._peek()
        if head is None or self._owner(head) is not reader:
            return None
        self._head = None
        self._stuck = False
        return head.seq, head.payload

    def move_head_aside(self) -> bool:
        """Called when the task's loop made no progress: move a head nobody takes to its reader's
        spill buffer (see the module docstring). True if a record was moved."""
        with self._lock:
            head = self._peek()
            if head is None:
                return False
            if not self._stuck and time.monotonic() - self._head_since < self._patience:
                return False
            self._stuck = True
            self._owner(head).spilled.append(head.seq, head.payload)
            self._head = None
            return True

    def finish(self) -> None:
        """After the task's processors are done: read what is left (passing records only), and
        check that every pair's input was complete."""
        with self._lock:
            head = self._peek()
            if head is not None:
                raise AssertionError(
                    f"{self._owner(head).name}: input left over after every consumer finished"
                )
        missing = [pair.name for pair in self._pairs.values() if not pair.last_seen]
        if missing:
            raise AssertionError(f"shuffle input ended before the end of: {', '.join(sorted(missing))}")

    @property
    def exhausted(self) -> bool:
        return self._exhausted and self._head is None

    def cut_pairs(self) -> list[str]:
        """With the input read to its end: the pairs whose last record never came."""
        if not self.exhausted:
            return []
        return sorted(pair.name for pair in self._pairs.values() if not pair.last_seen)

    def close(self) -> None:
        for reader in (*self._pairs.values(), *self._sources.values()):
            reader.spilled.close()


class ReplayQueue:
    """The consumer end of a pair whose producer ran in another task (a `QueueReceiver` only): its
    entries, decoded one record at a time as the consumer drains them."""

    __slots__ = ("name", "_entries", "_reader", "_pair", "_pause")

    def __init__(self, name: str, reader: ShuffleReader, pair: _PairInput) -> None:
        self.name = name
        self._entries: deque[Any] = deque()
        self._reader = reader
        self._pair = pair
        #: After a record's entries were taken, one `take()` answers None (as an in-process queue
        #: that the consumer emptied does), so one drain into the inbox holds at most one record.
        self._pause = False

    def _refill(self) -> bool:
        payload = self._reader.next_payload(self._pair)
        if payload is None:
            return False
        self._entries.extend(pickle.loads(payload))
        return bool(self._entries)

    def take(self) -> Any:
        if not self._entries:
            if self._pause:
                self._pause = False
                return None
            if not self._refill():
                return None
            self._pause = True
        return self._entries.popleft()

    def __len__(self) -> int:
        return sum(len(e) for e in self._entries if type(e) is list)


class SourceInput:
    """The Spark data one member's `from_rdd` source reads; its processors share it."""

    def next_chunk(self, size: int) -> list[Any] | None:
        """Up to `size` next items; None if none is here yet; [] at the end. Called from one thread."""
        raise NotImplementedError


class IteratorSourceInput(SourceInput):
    """The rows of the RDD partition the task reads in place."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterator[Any]) -> None:
        self._items = items

    def next_chunk(self, size: int) -> list[Any] | None:
        chunk = []
        for item in self._items:
            chunk.append(item)
            if len(chunk) >= size:
                break
        return chunk


class ShuffledSourceInput(SourceInput):
    """Rows shuffled to this member (the RDD has another partition count than the members)."""

    __slots__ = ("_reader", "_input", "_items", "_at")

    def __init__(self, reader: ShuffleReader, source: _Input) -> None:
        self._reader = reader
        self._input = source
        self._items: list[Any] = []
        self._at = 0

    def next_chunk(self, size: int) -> list[Any] | None:
        if self._at >= len(self._items):
            payload = self._reader.next_source_payload(self._input)
            if not payload:
                return None if payload is None else []
            self._items = pickle.loads(payload)
            self._at = 0
        chunk = self._items[self._at : self._at + size]
        self._at += len(chunk)
        return chunk

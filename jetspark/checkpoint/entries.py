"""The byte format of one snapshot file: entries sorted by partition, and the index of its segments.

An entry is `(partition, key bytes, value bytes)` as the engine serialized it when it was offered
(a block of many entries, `core.snapshot_block`, is one entry here: the file's entry count counts
it once).
The file is a magic header, then the entries of each partition back to back (a *segment*). Two
layouts of a segment exist; the manifest names a file's (`SnapshotFile.layout`, 1 when absent):

    layout 1, b"JSPKSNP1" | for each entry: partition (>i), key length (>I), value length (>I), key, value
    layout 2, b"JSPKSNP2" | entry count n (>I) | n key lengths (>I) | n value lengths (>I) | n keys | n values

Layout 2, written now, puts a segment's lengths in one table, so a restore finds every entry's
bytes with a few C-level passes (the table unpacked as an array, its running sums, slices)
instead of a Python step per entry, and `encode` writes it without interleaving anything; the
partition is the segment's own. Files of layout 1 (earlier releases) still read.

Each segment's offset, length and CRC-32 go to the manifest, so a processor reads only the
segments of the partitions it owns and checks each one; the whole file has a SHA-256 as well.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import struct
import sys
import zlib
from array import array
from collections.abc import Iterable, Sequence

import attrs

MAGIC = b"JSPKSNP1"
MAGIC_2 = b"JSPKSNP2"
#: The layout `encode` writes.
LAYOUT = 2
MAGICS = {1: MAGIC, 2: MAGIC_2}
_HEADER = struct.Struct(">iII")
_COUNT = struct.Struct(">I")
#: An array typecode of 4-byte unsigned ints, for layout 2's length table (big-endian on disk).
_U32 = next(code for code in "IL" if array(code).itemsize == 4)
_SWAP = sys.byteorder == "little"
_PARTITION, _KEY, _VALUE = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)

#: (partition, key bytes, value bytes); -1 is the partition of broadcast entries.
Entry = tuple[int, bytes, bytes]


class CorruptSnapshotError(Exception):
    """A snapshot file (or manifest) is missing, truncated or does not match its checksum."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"snapshot file {path}: {problem}")
        self.path = path
        self.problem = problem

    def __reduce__(self) -> tuple[type[CorruptSnapshotError], tuple[str, str]]:
        # pickled with its two arguments: a Spark task's error reaches the driver as itself
        return (type(self), (self.path, self.problem))


@attrs.frozen
class Segment:
    partition: int
    offset: int
    length: int
    crc32: int


@attrs.frozen
class EncodedFile:
    data: bytes
    sha256: str
    segments: tuple[Segment, ...]
    entry_count: int
    layout: int = LAYOUT


def encode(entries: Iterable[Entry], layout: int = LAYOUT) -> EncodedFile:
    """Sort `entries` by partition (stable: a partition keeps its offer order) and lay them out
    (`layout` 1 only to write files as earlier releases did, for tests of reading them).

    In bulk, a partition at a time, without a Python step per entry: the lengths are packed by
    one call (one `map` in layout 1) and the segment joined by one `b"".join` (the entries'
    bytes were pickled when they were offered)."""
    ordered = sorted(entries, key=_PARTITION)
    lay_out = _segment_2 if layout == 2 else _segment_1
    magic = MAGICS[layout]
    parts = [magic]
    segments: list[Segment] = []
    offset = len(magic)
    for partition, run in itertools.groupby(ordered, key=_PARTITION):
        group = list(run)
        body = lay_out(partition, list(map(_KEY, group)), list(map(_VALUE, group)))
        segments.append(Segment(partition, offset, len(body), zlib.crc32(body)))
        parts.append(body)
        offset += len(body)
    data = b"".join(parts)
    return EncodedFile(data, hashlib.sha256(data).hexdigest(), tuple(segments), len(ordered), layout)


def _segment_1(partition: int, keys: list[bytes], values: list[bytes]) -> bytes:
    pieces: list[bytes] = [b""] * (3 * len(keys))
    pieces[0::3] = map(_HEADER.pack, itertools.repeat(partition, len(keys)), map(len, keys), map(len, values))
    pieces[1::3] = keys
    pieces[2::3] = values
    return b"".join(pieces)


def _segment_2(partition: int, keys: list[bytes], values: list[bytes]) -> bytes:
    key_lengths = array(_U32, map(len, keys))
    value_lengths = array(_U32, map(len, values))
    if _SWAP:
        key_lengths.byteswap()
        value_lengths.byteswap()
    parts = [_COUNT.pack(len(keys)), key_lengths.tobytes(), value_lengths.tobytes()]
    parts += keys
    parts += values
    return b"".join(parts)


def decode_segment(body: bytes, segment: Segment, path: str, layout: int = 1) -> list[Entry]:
    """The entries of one segment of a file of `layout`, after checking its length and CRC-32."""
    if len(body) != segment.length:
        raise CorruptSnapshotError(
            path,
            f"segment of partition {segment.partition} at {segment.offset} is truncated "
            f"({len(body)} of {segment.length} bytes)",
        )
    if zlib.crc32(body) != segment.crc32:
        raise CorruptSnapshotError(path, f"segment of partition {segment.partition} fails its CRC-32 check")
    entries = _decode_2(body, segment.partition) if layout == 2 else _decode_1(body, segment.partition)
    if entries is None:
        raise CorruptSnapshotError(path, f"segment of partition {segment.partition} is malformed")
    return entries


def _decode_1(body: bytes, partition: int) -> list[Entry] | None:
    entries: list[Entry] = []
    append = entries.append
    unpack_from = _HEADER.unpack_from
    size = _HEADER.size
    end = len(body)
    position = 0
    while position < end:
        if position + size > end:
            return None
        stored, key_length, value_length = unpack_from(body, position)
        position += size
        key_end = position + key_length
        value_end = key_end + value_length
        if stored != partition or value_end > end:
            return None
        append((partition, body[position:key_end], body[key_end:value_end]))
        position = value_end
    return entries


def _decode_2(body: bytes, partition: int) -> list[Entry] | None:
    if len(body) < _COUNT.size:
        return None
    (count,) = _COUNT.unpack_from(body)
    table_end = _COUNT.size + 8 * count
    if table_end > len(body):
        return None
    lengths = array(_U32)
    lengths.frombytes(body[_COUNT.size : table_end])
    if _SWAP:
        lengths.byteswap()
    # The keys and then the values lie back to back in the order of the table: its running
    # sums are where each one ends.
    ends = list(itertools.accumulate(lengths, initial=table_end))
    if ends[-1] != len(body):
        return None
    cut = body.__getitem__
    keys = map(cut, map(slice, ends[:count], ends[1 : count + 1]))
    values = map(cut, map(slice, ends[count : 2 * count], ends[count + 1 :]))
    return list(zip(itertools.repeat(partition, count), keys, values))


def wanted_ranges(segments: Sequence[Segment], partitions: frozenset[int] | None) -> list[list[Segment]]:
    """Runs of adjacent wanted segments, so that each run is one read."""
    runs: list[list[Segment]] = []
    for segment in segments:
        if partitions is not None and segment.partition not in partitions:
            continue
        if runs and runs[-1][-1].offset + runs[-1][-1].length == segment.offset:
            runs[-1].append(segment)
        else:
            runs.append([segment])
    return runs

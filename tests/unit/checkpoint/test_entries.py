"""The byte format of a snapshot file (`checkpoint/entries.py`): what `encode` lays out in bulk,
`decode_segment` reads back, entry for entry, partition by partition in offer order, in both
layouts (2, written now; 1, written by earlier releases)."""

from __future__ import annotations

import struct
import zlib

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark.checkpoint.entries import (
    LAYOUT,
    MAGIC,
    MAGIC_2,
    MAGICS,
    CorruptSnapshotError,
    Entry,
    decode_segment,
    encode,
)

entries = st.lists(st.tuples(st.integers(-1, 6), st.binary(max_size=6), st.binary(max_size=300)), max_size=40)
layouts = st.sampled_from([1, 2])


def _read_back(data: bytes, segments: tuple, layout: int) -> list[Entry]:
    read: list[Entry] = []
    for segment in segments:
        body = data[segment.offset : segment.offset + segment.length]
        assert zlib.crc32(body) == segment.crc32
        read.extend(decode_segment(body, segment, "file", layout))
    return read


@settings(max_examples=300, deadline=None)
@given(entries, layouts)
def test_every_segment_reads_back_its_partitions_entries_in_offer_order(
    given_entries: list[Entry], layout: int
) -> None:
    encoded = encode(given_entries, layout)
    assert encoded.layout == layout
    assert encoded.data.startswith(MAGICS[layout]) and encoded.entry_count == len(given_entries)
    assert _read_back(encoded.data, encoded.segments, layout) == sorted(given_entries, key=lambda e: e[0])
    assert [s.partition for s in encoded.segments] == sorted({e[0] for e in given_entries})


@settings(max_examples=100, deadline=None)
@given(entries)
def test_both_layouts_hold_the_same_segments_for_the_same_entries(given_entries: list[Entry]) -> None:
    old, new = encode(given_entries, 1), encode(given_entries, 2)
    assert [s.partition for s in old.segments] == [s.partition for s in new.segments]
    assert _read_back(old.data, old.segments, 1) == _read_back(new.data, new.segments, 2)


def test_files_are_written_in_layout_2() -> None:
    assert LAYOUT == 2 and encode([]).data == MAGIC_2


def test_layout_1_is_header_key_value_per_entry() -> None:
    encoded = encode([(3, b"k", b"vv"), (-1, b"b", b"")], 1)
    header = struct.Struct(">iII")
    assert encoded.data == MAGIC + header.pack(-1, 1, 0) + b"b" + header.pack(3, 1, 2) + b"kvv"


def test_layout_2_is_a_count_the_key_then_value_lengths_then_the_keys_then_the_values() -> None:
    encoded = encode([(3, b"k", b"vv"), (-1, b"b", b""), (3, b"", b"x")], 2)
    u32 = struct.Struct(">I")
    broadcast = u32.pack(1) + u32.pack(1) + u32.pack(0) + b"b"
    keyed = u32.pack(2) + u32.pack(1) + u32.pack(0) + u32.pack(2) + u32.pack(1) + b"k" + b"vvx"
    assert encoded.data == MAGIC_2 + broadcast + keyed


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.just(4), st.binary(max_size=5), st.binary(max_size=5)), min_size=1, max_size=8),
    layouts,
    st.data(),
)
def test_a_segment_whose_bytes_do_not_add_up_is_malformed_not_misread(
    given_entries: list[Entry], layout: int, data: st.DataObject
) -> None:
    # A body that passes its CRC (as a buggy writer's would) but whose lengths do not match it:
    # the decoder names the file and the partition instead of returning other entries.
    encoded = encode(given_entries, layout)
    (segment,) = encoded.segments
    body = encoded.data[segment.offset :]
    cut = data.draw(st.integers(1, len(body)), label="bytes cut off the end")
    broken = body[:-cut] if data.draw(st.booleans(), label="cut") else body + b"\x00" * cut
    forged = attrs.evolve(segment, length=len(broken), crc32=zlib.crc32(broken))
    try:
        read = decode_segment(broken, forged, "v0001-all.snap", layout)
    except CorruptSnapshotError as error:
        assert error.path == "v0001-all.snap" and "partition 4" in error.problem
    else:  # a cut at an entry boundary (layout 1 only: layout 2 counts its entries)
        assert layout == 1 and read == given_entries[: len(read)] and len(read) < len(given_entries)


def test_a_segment_failing_its_crc_is_corrupt() -> None:
    encoded = encode([(2, b"k", b"v")])
    (segment,) = encoded.segments
    body = bytearray(encoded.data[segment.offset :])
    body[-1] ^= 1
    with pytest.raises(CorruptSnapshotError, match="partition 2 fails its CRC-32"):
        decode_segment(bytes(body), segment, "f", 2)

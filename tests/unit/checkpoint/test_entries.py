"""The byte format of a snapshot file (`checkpoint/entries.py`): what `encode` lays out in bulk,
`decode_segment` reads back, entry for entry, partition by partition in offer order."""

from __future__ import annotations

import struct
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark.checkpoint.entries import MAGIC, Entry, decode_segment, encode

entries = st.lists(st.tuples(st.integers(-1, 6), st.binary(max_size=6), st.binary(max_size=6)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(entries)
def test_every_segment_reads_back_its_partitions_entries_in_offer_order(given_entries: list[Entry]) -> None:
    encoded = encode(given_entries)
    assert encoded.data.startswith(MAGIC) and encoded.entry_count == len(given_entries)
    read: list[Entry] = []
    for segment in encoded.segments:
        body = encoded.data[segment.offset : segment.offset + segment.length]
        assert zlib.crc32(body) == segment.crc32
        read.extend(decode_segment(body, segment, "file"))
    assert read == sorted(given_entries, key=lambda entry: entry[0])
    assert [s.partition for s in encoded.segments] == sorted({e[0] for e in given_entries})


def test_the_layout_is_header_key_value_per_entry() -> None:
    encoded = encode([(3, b"k", b"vv"), (-1, b"b", b"")])
    header = struct.Struct(">iII")
    assert encoded.data == MAGIC + header.pack(-1, 1, 0) + b"b" + header.pack(3, 1, 2) + b"kvv"

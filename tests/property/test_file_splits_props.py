"""Byte-range splits of line-based files: for any content, split size and read chunk, the splits
together read every line exactly once, in order, and a reader restarted at any saved position
reads on without loss or repetition."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from jetspark.processors.file_formats import CsvFormat, TextFormat
from jetspark.processors.file_splits import Split, byte_splits
from jetspark.processors.split_readers import LineSplitReader

lines_strategy = st.lists(st.text(alphabet="ab\r é", max_size=12), max_size=40)


def expected_lines(content: bytes) -> list[bytes]:
    lines = content.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def read_split(reader: LineSplitReader, split: Split, position: int) -> list[tuple[int, bytes]]:
    """(offset, line) of every line the split reads from `position` on."""
    out = []
    for offset, lines in reader.batches(split, position):
        for line in lines:
            out.append((offset, line))
            offset += len(line) + 1
    reader.close()
    return out


@given(
    lines=lines_strategy, last_newline=st.booleans(), split_bytes=st.integers(1, 64), chunk=st.integers(1, 32)
)
def test_splits_read_every_line_once_in_order(
    lines: list[str], last_newline: bool, split_bytes: int, chunk: int
) -> None:
    content = "\n".join(lines).encode() + (b"\n" if last_newline and lines else b"")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "f.txt"
        path.write_bytes(content)
        reader = LineSplitReader(TextFormat(), chunk=chunk)
        got = [
            line
            for split in byte_splits([str(path)], split_bytes)
            for _, line in read_split(reader, split, split.start)
        ]
    assert got == expected_lines(content)


@given(lines=lines_strategy, split_bytes=st.integers(1, 64), cut=st.integers(0, 100))
def test_a_split_restarted_at_a_saved_position_reads_on_exactly(
    lines: list[str], split_bytes: int, cut: int
) -> None:
    """A snapshot saves the offset of the next line; restarting there reads the rest of the split."""
    content = ("\n".join(lines) + "\n").encode()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "f.txt"
        path.write_bytes(content)
        reader = LineSplitReader(TextFormat(), chunk=7)
        for split in byte_splits([str(path)], split_bytes):
            whole = read_split(reader, split, split.start)
            if not whole:
                continue
            at = min(cut, len(whole) - 1)
            assert read_split(reader, split, whole[at][0]) == whole[at:]


@given(rows=st.lists(st.integers(0, 10**6), max_size=30), split_bytes=st.integers(1, 40))
def test_csv_splits_skip_the_header_once_and_read_every_row_once(rows: list[int], split_bytes: int) -> None:
    content = ("n\n" + "".join(f"{n}\n" for n in rows)).encode()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "f.csv"
        path.write_bytes(content)
        reader = LineSplitReader(CsvFormat(types={"n": int}))
        got = []
        for split in byte_splits([str(path)], split_bytes):
            for _, units in reader.batches(split, split.start):
                records, bad = reader.parse(units)
                assert bad == []
                got += [record["n"] for record in records]
            reader.close()
    assert got == rows

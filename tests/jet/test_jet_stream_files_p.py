"""Jet's `StreamFilesPTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.connector`), ported: the
source that follows the files of a directory, driven by hand as Jet's test drives it.

Jet's `StreamFilesP(dir, UTF_8, glob, false, Util::entry)` is one processor of
`processors.directory_stream(dir, glob, poll_millis=0)`, initialized on an engine outbox of
capacity 1 (Jet's `TestOutbox(1)`) with a test context (`engine_kit`). Jet drives it from a
thread that calls `complete()` and drains the outbox while the test writes; here the test thread
writes and then calls `complete()` (`Driver.call`), so that no wait depends on time: with
`poll_millis=0` every call looks at the files. Jet's `assertEmittedCountEventually(n)` (at least
`n` lines within 10 s, exactly `n`, and still `n` 2 s later) is `Driver.assert_emitted_count`:
call until `n` lines came, then exactly `n`, and still `n` after `SETTLE_CALLS` more calls.
Jet emits `entry(fileName, line)`; `directory_stream` emits the line (no `mapOutputFn`), so the
ports check the lines. Jet's `fileOffsets` map is what the processor saves to a snapshot: one
entry per file it follows. Each test is named after the Jet case it ports.

Differences:
- `when_preExistingFile_then_seeAppendedLines` and
  `when_fileModifiedButNotAppended_then_seeNoLines`: Jet's processor starts at the end of the
  files already there; `directory_stream` reads them from the beginning (its docstring's example
  reads a file written before the job; an `Upcoming` startpoint, docs/startpoints.md, starts at
  the end instead). The ports expect the lines already there, then what Jet expects of the
  appended or modified part.
- `when_watchedDirDeleted_then_complete`: Jet's processor completes when its directory is
  deleted; `directory_stream` never completes (its docstring and docs/files.md, "Following a
  directory"): it goes on calling and emits nothing, which the port checks.
- `when_fileDeleted_then_seeDeletion`: as Jet's, the processor drops a deleted file's offset
  (at its next poll of the directory), so snapshots no longer save it.

Skipped: none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jetspark import processors as P
from jetspark.core.processor import Processor
from jetspark.core.suppliers import ProcessorMetaSupplier, resolve_member_supplier
from jetspark.engine.snapshot import decode_entries
from jetspark.processors.directory_source import _DirectoryStreamP
from tests.contract.harness import processor_context
from tests.jet.engine_kit import KitOutbox, init

LINE_COUNT = 1_000
#: Calls after the expected count was reached, in which no more lines may come (Jet: 2 s).
SETTLE_CALLS = 20


class Driver:
    """One `directory_stream` processor and Jet's `driveProcessor` loop, a call at a time."""

    def __init__(self, directory: Path, glob: str | None = None) -> None:
        supplier = P.directory_stream(str(directory), glob or "*", poll_millis=0)
        self.processor: Processor = supplier.get(1)[0]
        self.outbox = KitOutbox(1, 1)
        init(self.processor, self.outbox)
        self.lines: list[Any] = []
        self.completed = False

    def call(self) -> None:
        self.completed = self.processor.complete()
        self.lines.extend(self.outbox.take(0))

    def call_until(self, count: int) -> None:
        for _ in range(2 * count + 100):
            if len(self.lines) >= count:
                return
            self.call()
        raise AssertionError(f"emitted {len(self.lines)} lines, expected {count}")

    def assert_emitted_count(self, expected: int) -> None:
        """Jet's `assertEmittedCountEventually`."""
        self.call_until(expected)
        assert len(self.lines) == expected
        for _ in range(SETTLE_CALLS):
            self.call()
        assert len(self.lines) == expected

    def file_offsets(self) -> dict[Any, Any]:
        """Jet's `processor.fileOffsets`: what the processor saves to a snapshot, by file name."""
        outbox = self.outbox.outbox
        outbox.allow_snapshot_offers("save_to_snapshot")
        try:
            assert self.processor.save_to_snapshot()
        finally:
            outbox.allow_snapshot_offers(None)
        self.outbox.reset()
        entries = decode_entries(self.outbox.snapshot)
        self.outbox.snapshot.clear()
        return {key[1]: value for key, value in entries}


def print_lines(file: Path, *lines: Any, mode: str = "a") -> None:
    """Jet's `PrintWriter.println` of each line, then `flush()`."""
    with file.open(mode, encoding="utf-8") as out:
        out.write("".join(f"{line}\n" for line in lines))


def write_to_file(file: Path, text: str) -> None:
    """Jet's `writeToFile`: append `text` (the file is created if missing)."""
    with file.open("a", encoding="utf-8") as out:
        out.write(text)


def test_StreamFilesPTest__when_metaSupplier_then_returnsCorrectProcessors(tmp_path: Path) -> None:
    meta_supplier = ProcessorMetaSupplier.of(P.directory_stream(str(tmp_path), "*"))
    supplier = resolve_member_supplier(meta_supplier.get([0]), 0)
    assert supplier is not None
    supplier.init(processor_context())
    processors = supplier.get(1)
    assert len(processors) == 1
    assert isinstance(processors[0], _DirectoryStreamP)
    supplier.close(None)


def test_StreamFilesPTest__when_writeOneFile_then_seeAllLines(tmp_path: Path) -> None:
    driver = Driver(tmp_path)
    driver.call()
    print_lines(tmp_path / "a.txt", *range(LINE_COUNT))
    driver.assert_emitted_count(LINE_COUNT)
    assert driver.lines == [str(i) for i in range(LINE_COUNT)]


def test_StreamFilesPTest__when_writeTwoFiles_then_seeAllLines(tmp_path: Path) -> None:
    """Jet's writer and driver run at once; here a call follows every 100 lines of each file."""
    driver = Driver(tmp_path)
    for i in range(LINE_COUNT):
        print_lines(tmp_path / "a.txt", i)
        print_lines(tmp_path / "b.txt", i)
        if i % 100 == 0:
            driver.call()
    driver.assert_emitted_count(2 * LINE_COUNT)
    assert sorted(map(int, driver.lines)) == sorted(2 * list(range(LINE_COUNT)))


def test_StreamFilesPTest__when_glob_then_onlyMatchingProcessed(tmp_path: Path) -> None:
    driver = Driver(tmp_path, "a.*")
    for i in range(LINE_COUNT):
        print_lines(tmp_path / "a.txt", i)
        print_lines(tmp_path / "b.txt", i)
        if i % 100 == 0:
            driver.call()
    driver.assert_emitted_count(LINE_COUNT)
    assert driver.lines == [str(i) for i in range(LINE_COUNT)]


def test_StreamFilesPTest__when_preExistingFile_then_seeAppendedLines(tmp_path: Path) -> None:
    """jetspark also reads the lines there before it started (see the module docstring); the
    incomplete line is emitted once it is complete, whole."""
    file = tmp_path / "a.txt"
    print_lines(file, *range(LINE_COUNT))
    write_to_file(file, "incomplete line")
    driver = Driver(tmp_path)
    driver.call()
    write_to_file(file, " still incomplete line ")
    driver.call()
    print_lines(file, *range(LINE_COUNT))
    driver.assert_emitted_count(2 * LINE_COUNT)
    assert driver.lines[LINE_COUNT] == "incomplete line still incomplete line 0"
    assert driver.lines[LINE_COUNT + 1 :] == [str(i) for i in range(1, LINE_COUNT)]


def test_StreamFilesPTest__when_fileModifiedButNotAppended_then_seeNoLines(tmp_path: Path) -> None:
    """The lines there before the start are read (see the module docstring); a byte changed in
    place, the file's size unchanged, brings no line."""
    file = tmp_path / "a.txt"
    print_lines(file, *range(LINE_COUNT), mode="w")
    driver = Driver(tmp_path)
    driver.assert_emitted_count(LINE_COUNT)
    with file.open("r+b") as raf:
        raf.write(b"\xff")
    for _ in range(SETTLE_CALLS):
        driver.call()
    assert len(driver.lines) == LINE_COUNT


def test_StreamFilesPTest__when_fileDeleted_then_seeDeletion(tmp_path: Path) -> None:
    """Jet's processor knows the file at once; jetspark's once it has read it."""
    file = tmp_path / "a.txt"
    print_lines(file, *range(LINE_COUNT), mode="w")
    driver = Driver(tmp_path)
    driver.assert_emitted_count(LINE_COUNT)
    assert len(driver.file_offsets()) == 1
    file.unlink()
    for _ in range(SETTLE_CALLS):
        driver.call()
    assert driver.file_offsets() == {}


def test_StreamFilesPTest__when_watchedDirDeleted_then_complete(tmp_path: Path) -> None:
    """`directory_stream` never completes (see the module docstring): with its directory gone it
    emits nothing and raises nothing."""
    directory = tmp_path / "watched"
    directory.mkdir()
    driver = Driver(directory)
    driver.call()
    directory.rmdir()
    for _ in range(SETTLE_CALLS):
        driver.call()
        assert not driver.completed
    assert driver.lines == []


def test_StreamFilesPTest__when_lineAddedInChunks_then_readAtOnce(tmp_path: Path) -> None:
    driver = Driver(tmp_path)
    driver.call()
    file1 = tmp_path / "a.txt"
    file2 = tmp_path / "b.txt"
    write_to_file(file1, "incomplete1")
    write_to_file(file2, "incomplete2")
    for _ in range(SETTLE_CALLS):
        driver.call()
    assert driver.lines == []
    write_to_file(file1, " complete1\n")
    for _ in range(SETTLE_CALLS):
        driver.call()
    assert driver.lines == ["incomplete1 complete1"]
    write_to_file(file2, " complete2\n")
    driver.call_until(2)
    assert driver.lines == ["incomplete1 complete1", "incomplete2 complete2"]


def test_StreamFilesPTest__when_multipleLinesAdded_then_seenOneByOne(tmp_path: Path) -> None:
    driver = Driver(tmp_path)
    driver.call()
    file = tmp_path / "a.txt"
    expected: list[str] = []
    for line in ("line1", "line2", "line3"):
        write_to_file(file, f"{line}\n")
        expected.append(line)
        driver.call_until(len(expected))
        assert driver.lines == expected

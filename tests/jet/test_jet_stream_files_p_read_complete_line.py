"""Jet's `StreamFilesP_readCompleteLineTest` (hazelcast-jet-core,
`com.hazelcast.jet.impl.connector`), ported: which complete lines the directory source reads.

Jet calls the processor's `readCompleteLine(reader)` on a string, once per expected line, and
expects null where no complete line is left. jetspark's `directory_stream` has no such method:
the port writes the string to a file, lets one processor read it (the `Driver` of
`test_jet_stream_files_p.py`: `complete()` with `poll_millis=0`, a capacity-1 outbox) and checks
that it emitted exactly Jet's lines, in order: a `null` of Jet's is "no more lines". Each test is
named after the Jet case it ports.

Differences:
- `test_mac9EndLines`: Jet ends a line at `\\r` alone (classic Mac OS line ends) as well as at
  `\\n` and `\\r\\n`; `directory_stream` ends lines at `\\n` only (dropping a `\\r` before it), so
  `"blabla\\rbla\\r"` is one incomplete line and nothing is emitted. On purpose (docs/files.md):
  in a growing file a final `\\r` may be half of a `\\r\\n`; the port checks jetspark's rule.

Skipped: none.
"""

from __future__ import annotations

from pathlib import Path

from tests.jet.test_jet_stream_files_p import SETTLE_CALLS, Driver


def complete_lines(directory: Path, text: str) -> list[str]:
    """The lines a processor emits for a file holding `text`, once it emits no more."""
    (directory / "file.txt").write_bytes(text.encode("utf-8"))
    driver = Driver(directory)
    for _ in range(SETTLE_CALLS):
        driver.call()
    return driver.lines


def test_StreamFilesP_readCompleteLineTest__when_emptyFile_then_null(tmp_path: Path) -> None:
    assert complete_lines(tmp_path, "") == []


def test_StreamFilesP_readCompleteLineTest__when_nonTerminatedSingleLine_then_null(tmp_path: Path) -> None:
    assert complete_lines(tmp_path, "blabla") == []


def test_StreamFilesP_readCompleteLineTest__when_terminatedSingleLine_then_singleLine(tmp_path: Path) -> None:
    assert complete_lines(tmp_path, "blabla\n") == ["blabla"]


def test_StreamFilesP_readCompleteLineTest__when_nonTerminatedSecondLine_then_singleLine(
    tmp_path: Path,
) -> None:
    assert complete_lines(tmp_path, "blabla\nbla") == ["blabla"]


def test_StreamFilesP_readCompleteLineTest__when_terminatedSecondLine_then_twoLines(tmp_path: Path) -> None:
    assert complete_lines(tmp_path, "blabla\nbla\n") == ["blabla", "bla"]


def test_StreamFilesP_readCompleteLineTest__when_emptyLine_then_emptyLine(tmp_path: Path) -> None:
    assert complete_lines(tmp_path, "\nbla\n") == ["", "bla"]


def test_StreamFilesP_readCompleteLineTest__when_twoEmptyLines_then_emptyLine(tmp_path: Path) -> None:
    assert complete_lines(tmp_path, "\n\nbla\n") == ["", "", "bla"]


def test_StreamFilesP_readCompleteLineTest__test_windowsEndLines(tmp_path: Path) -> None:
    assert complete_lines(tmp_path, "blabla\r\nbla\r\n") == ["blabla", "bla"]


def test_StreamFilesP_readCompleteLineTest__test_mac9EndLines(tmp_path: Path) -> None:
    """Differs on purpose (docs/files.md): Jet ends a line at a lone `\r` too; jetspark at `\n`
    only. In a file that is still being written a `\r` at the end may be the first half of a
    `\r\n` (Jet then reads the `\n` as an empty line), and a CSV field may hold a `\r`. A lone
    `\r` stays in the line; the line ends at the next `\n`."""
    assert complete_lines(tmp_path, "blabla\rbla\r") == []
    assert complete_lines(tmp_path, "blabla\rbla\n") == ["blabla\rbla"]

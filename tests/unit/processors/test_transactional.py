"""The two-phase commit of `TransactionalSinkP`, call by call (seed 003, "snapshot_commit_prepare",
"snapshot_commit_finish", "restore_from_snapshot"), on the file sink: what is visible after each
phase, what a failed snapshot keeps, and what a restored processor commits and rolls back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jetspark.processors.transactional import read_lines
from tests.transactional_kit import (
    Saved,
    file_sinks,
    restore,
    save_and_prepare,
    temp_files,
    write,
)


def sink(out: Path, saved: Saved, epochs: bool = False) -> Any:
    """The one processor of a `transactional_files` vertex on one member."""
    [processor] = file_sinks(out, 1, saved, epochs=epochs)
    return processor


def test_rows_are_visible_only_after_commit_finish_true(tmp_path: Path) -> None:
    saved = Saved()
    processor = sink(tmp_path, saved)
    write(processor, "a", "b")
    save_and_prepare(processor)
    assert len(saved.entries) == 1
    write(processor, "c")  # after prepare: the next transaction
    assert read_lines(str(tmp_path)) == []
    assert processor.snapshot_commit_finish(True)
    assert read_lines(str(tmp_path)) == ["a", "b"]
    assert len(temp_files(tmp_path)) == 1, "the open transaction holding 'c' is not committed"


def test_after_a_failed_snapshot_the_prepared_rows_wait_for_the_next_success(tmp_path: Path) -> None:
    saved = Saved()
    processor = sink(tmp_path, saved)
    write(processor, "a")
    save_and_prepare(processor)
    assert processor.snapshot_commit_finish(False)
    assert read_lines(str(tmp_path)) == [] and len(temp_files(tmp_path)) == 1
    write(processor, "b")
    save_and_prepare(processor)
    assert processor.snapshot_commit_finish(True)
    assert sorted(read_lines(str(tmp_path))) == ["a", "b"] and temp_files(tmp_path) == []


def test_a_restored_processor_commits_up_to_the_snapshot_and_rolls_back_the_rest(tmp_path: Path) -> None:
    saved = Saved()
    first = sink(tmp_path, saved)
    write(first, "a")
    save_and_prepare(first)  # the snapshot covers 'a'
    write(first, "b")  # the job fails here: 'b' was never part of a snapshot
    first.close()
    second = sink(tmp_path, Saved())
    restore(second, saved)
    assert read_lines(str(tmp_path)) == ["a"]
    assert temp_files(tmp_path) == [], "the transaction holding 'b' is rolled back"
    write(second, "b")
    assert second.complete()
    assert sorted(read_lines(str(tmp_path))) == ["a", "b"]


def test_committing_twice_is_harmless(tmp_path: Path) -> None:
    saved = Saved()
    first = sink(tmp_path, saved)
    write(first, "a")
    save_and_prepare(first)
    assert first.snapshot_commit_finish(True)
    first.close()
    second = sink(tmp_path, Saved())
    restore(second, saved)  # commits 'a' again: it is no longer pending
    assert read_lines(str(tmp_path)) == ["a"]


def test_a_fresh_processor_rolls_back_what_its_prefix_left(tmp_path: Path) -> None:
    saved = Saved()
    first = sink(tmp_path, saved)
    write(first, "a")  # never snapshotted
    first.close()
    second = sink(tmp_path, Saved())
    write(second, "b")
    assert second.complete()
    assert read_lines(str(tmp_path)) == ["b"] and temp_files(tmp_path) == []


def test_in_epochs_complete_waits_for_the_snapshot_that_takes_the_open_transaction(tmp_path: Path) -> None:
    saved = Saved()
    processor = sink(tmp_path, saved, epochs=True)
    write(processor, "a")
    assert not processor.complete(), "in epochs the driver's commit must cover the last rows"
    assert read_lines(str(tmp_path)) == []
    save_and_prepare(processor)
    next_epoch = sink(tmp_path, Saved(), epochs=True)
    restore(next_epoch, saved)
    assert next_epoch.complete()
    assert read_lines(str(tmp_path)) == ["a"]


def test_vertex_parts_of_transaction_ids_stay_distinct_short_and_dash_free() -> None:
    """Two vertices whose names clean up to the same text ("a.b", "a_b") must not share a prefix
    (each restore would roll back the other's transactions); a long name stays short."""
    from jetspark.processors.transactional import transaction_index, vertex_part

    parts = {vertex_part(name) for name in ("a.b", "a_b", "a-b", "a b")}
    assert len(parts) == 4 and vertex_part("a_b") == "a_b"
    long = vertex_part("v" * 300)
    assert len(long) <= 57 and long != vertex_part("v" * 299)
    assert all("-" not in part for part in parts | {long})
    assert transaction_index(f"0123456789abcdef-{vertex_part('a.b')}-7-abcdef012345-0000000003") == 7
    assert transaction_index("0123456789abcdef-a_b-7-0000000003") == 7  # an id from before the run part

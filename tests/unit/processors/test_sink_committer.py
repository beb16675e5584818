"""The coordinator's commit of a transactional sink (`TransactionCommitter`, `runners.sink_commits`):
it commits exactly what the restore of the committed snapshot would (up to each saved `seq`,
nothing after), twice is harmless, the restore that follows finds nothing left, and a failing
committer never fails anything: it is retried after a back-off of epochs."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.checkpoint import CheckpointStore
from jetspark.core.suppliers import (
    MemberSuppliers,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    SnapshotCommitter,
)
from jetspark.core.watermark import BroadcastKey
from jetspark.engine.snapshot import BROADCAST_PARTITION, encode_entry
from jetspark.processors.postgres import _PostgresP
from jetspark.processors.transactional import TransactionalSinkP, _TransactionalFilesP, read_lines
from jetspark.runners import snapshot_io
from jetspark.runners.sink_commits import SinkCommits
from tests.unit.processors.test_transactional import Saved, restore, save_and_prepare, sink, temp_files, write


def decoded(saved: Saved) -> list[tuple[Any, Any]]:
    return [entry.decode() for entry in saved.entries]


def test_the_driver_commits_what_the_restore_would_and_the_restore_then_finds_it_done(tmp_path: Path) -> None:
    snapshot = Saved()
    first = sink(tmp_path, snapshot)
    write(first, "a")
    save_and_prepare(first)  # the committed snapshot covers 'a' (seq 0)
    write(first, "b")
    assert first.snapshot_commit_prepare()  # 'b' prepared (seq 1), but no snapshot covers it
    assert len(temp_files(tmp_path)) == 2

    committer = P.transactional_files(str(tmp_path)).snapshot_committer("job1", "out")
    assert committer is not None
    assert committer.commit(decoded(snapshot)) == 1
    assert read_lines(str(tmp_path)) == ["a"], "seq 0 is visible, seq 1 is not"
    assert len(temp_files(tmp_path)) == 1
    assert committer.commit(decoded(snapshot)) == 0, "committing again finds nothing pending"
    committer.close()

    first.close()
    second = sink(tmp_path, Saved())
    restore(second, snapshot)  # the fallback: commits 'a' again (skipped), rolls 'b' back
    assert read_lines(str(tmp_path)) == ["a"]
    assert temp_files(tmp_path) == []


def test_the_driver_names_committed_files_as_the_processors_do(tmp_path: Path) -> None:
    by_processor, by_driver = tmp_path / "p", tmp_path / "d"
    for out in (by_processor, by_driver):
        snapshot = Saved()
        processor = sink(out, snapshot)
        write(processor, "a")
        save_and_prepare(processor)
        if out == by_processor:
            assert processor.snapshot_commit_finish(True)
        else:
            committer = P.transactional_files(str(out)).snapshot_committer("job1", "out")
            assert committer is not None and committer.commit(decoded(snapshot)) == 1
    assert sorted(p.name for p in by_driver.iterdir()) == sorted(p.name for p in by_processor.iterdir())


def test_the_format_file_sinks_commit_from_the_driver(tmp_path: Path) -> None:
    committer = P.write_jsonl(str(tmp_path)).snapshot_committer("job1", "out")
    assert committer is not None
    (tmp_path / ".job1-out-0-run1-0000000000@.tmp").write_text('{"a": 1}\n')
    (tmp_path / ".job1-out-0-run1-0000000001@.tmp").write_text('{"a": 2}\n')
    assert committer.commit([(BroadcastKey(("txn", 0)), ("job1-out-0-run1", 0))]) == 1
    assert [p.name for p in tmp_path.glob("part-*")] == ["part-job1-00000-0000000000.jsonl"]


class _NoDriver(TransactionalSinkP):
    """A user's sink that does not say it can commit from the coordinator."""


def test_only_a_sink_that_opts_in_and_is_given_as_its_class_offers_a_committer(tmp_path: Path) -> None:
    files = functools.partial(_TransactionalFilesP, str(tmp_path), str, 10)
    assert ProcessorSupplier.of(files).snapshot_committer("j", "v") is not None
    assert ProcessorMetaSupplier.of(files).snapshot_committer("j", "v") is not None
    assert ProcessorSupplier.of(lambda: files()).snapshot_committer("j", "v") is None, (
        "a lambda is not looked into: no processor is built on the driver just to ask"
    )
    assert ProcessorSupplier.of(_NoDriver).snapshot_committer("j", "v") is None
    assert P.map(str).snapshot_committer("j", "v") is None  # type: ignore[union-attr]
    missing = str(tmp_path / "not-on-the-driver")
    assert P.transactional_files(missing).snapshot_committer("j", "v") is None


def test_a_postgres_prefix_matches_its_own_processor_only(postgres_dsn: str) -> None:
    """Processor 1's prefix `job-v-1` must not reach processor 10's transactions."""
    import psycopg

    gids = ["pjob-v-1-0000000000", "pjob-v-10-0000000000", "pjob-v-1-0000000001"]
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        for gid in gids:
            conn.execute("BEGIN")
            conn.execute("SELECT 1")
            conn.execute(f"PREPARE TRANSACTION '{gid}'")
    committer = P.postgres(postgres_dsn, "INSERT INTO t VALUES (%s)").snapshot_committer("pjob", "v")
    assert committer is not None
    sink = committer.sink  # type: ignore[attr-defined]
    try:
        assert isinstance(sink, _PostgresP)
        assert sink._control.execute("SHOW statement_timeout").fetchone() == ("10s",), (
            "a stalled server must not hold the driver's epoch loop for long"
        )
        assert sorted(sink.pending("pjob-v-1")) == [gids[0], gids[2]]
        saved = [(BroadcastKey(("txn", 1)), ("pjob-v-1", 0)), (BroadcastKey(("txn", 10)), ("pjob-v-10", 0))]
        assert committer.commit(saved) == 2
        assert committer.commit(saved) == 0
        assert sink.pending("pjob-v") == [gids[2]], "seq 1 of processor 1 is after the snapshot"
        sink.rollback(gids[2])
    finally:
        committer.close()


# ---- runners.sink_commits ------------------------------------------------------------------------


class _Committer(SnapshotCommitter):
    def __init__(self, log: list[Any], failures: int) -> None:
        self.log, self.failures = log, failures

    def commit(self, entries: Iterable[tuple[Any, Any]]) -> int:
        if self.failures > 0:
            self.failures -= 1
            raise OSError("the database is down")
        self.log.append(sorted(entries, key=repr))
        return 1

    def discard_pending(self) -> int:
        self.log.append("discarded")
        return 0

    def close(self) -> None:
        self.log.append("closed")


class _Meta(ProcessorMetaSupplier):
    """A meta supplier whose committers fail `failures` times in all, then work."""

    def __init__(self, failures: int) -> None:
        self.log: list[Any] = []
        self.asked = 0
        self.failures = failures

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        raise AssertionError("not planned in this test")

    def snapshot_committer(self, job_id: str, vertex: str) -> SnapshotCommitter | None:
        self.asked += 1
        committer = _Committer(self.log, self.failures)
        self.failures = 0
        return committer


def _commit_snapshot(store: CheckpointStore, snapshot_id: int) -> Any:
    entry = encode_entry(BroadcastKey(("txn", 0)), ("j-sink-0", snapshot_id), BROADCAST_PARTITION)
    return snapshot_io.commit_snapshot(store, snapshot_id, {"sink": [entry]}, ["source", "sink"], 271, {})


def test_a_failing_driver_commit_is_logged_never_raised_and_tried_again_after_a_back_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = CheckpointStore(str(tmp_path), "job")
    meta = _Meta(failures=1)
    metas: dict[str, ProcessorMetaSupplier] = {"sink": meta, "source": ProcessorMetaSupplier.of(P.noop())}
    commits = SinkCommits("j", ["source", "sink"], metas.__getitem__)
    with caplog.at_level(logging.WARNING, "jetspark.sink_commits"):
        commits.commit(store, _commit_snapshot(store, 0), 271)
    assert commits.failed == {"sink": 1} and "the database is down" in caplog.text
    assert meta.log == ["closed"], "the failed committer is closed"
    commits.commit(store, _commit_snapshot(store, 1), 271)
    assert meta.asked == 1, "one epoch skipped after the first failure"
    commits.commit(store, _commit_snapshot(store, 2), 271)
    assert meta.asked == 2 and commits.committed == {"sink": 1}
    assert meta.log[1:] == [[(BroadcastKey(("txn", 0)), ("j-sink-0", 2))]]
    commits.commit(store, _commit_snapshot(store, 3), 271)
    assert meta.asked == 2, "a working committer is kept"
    commits.close()
    assert meta.log[-1] == "closed"


# ---- a cancelled job: the driver settles what its sinks left ------------------------------------


def test_a_cancelled_jobs_sink_is_settled_by_the_driver_commit_then_roll_back(tmp_path: Path) -> None:
    """The last snapshot's transaction is committed, one a late task prepared after it is rolled
    back; another job's and another vertex's pending files are left alone."""
    out = tmp_path / "out"
    store = CheckpointStore(str(tmp_path / "ck"), "job")
    saved = Saved()
    processor = sink(out, saved)
    write(processor, "a")
    save_and_prepare(processor)
    manifest = snapshot_io.commit_snapshot(store, 0, {"out": saved.entries}, ["out"], 271, {})
    write(processor, "late")
    assert processor.snapshot_commit_prepare()  # a task of the cancelled epoch, after the last restore
    processor.close()
    others = [".job2-out-0-1a2b3c4d5e6f-0000000000.tmp", ".job1-other-0-1a2b3c4d5e6f-0000000000.tmp"]
    for name in others:
        (out / name).write_text("not ours\n")
    metas = {"out": ProcessorMetaSupplier.of(P.transactional_files(str(out)))}
    commits = SinkCommits("job1", ["out"], metas.__getitem__)
    commits.discard_pending(store, manifest, 271)
    commits.close()
    assert read_lines(str(out)) == ["a"]
    assert temp_files(out) == sorted(others)


def test_a_cancelled_job_without_a_snapshot_has_every_pending_transaction_rolled_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    processor = sink(out, Saved())
    write(processor, "a")
    assert processor.snapshot_commit_prepare()
    processor.close()
    metas = {"out": ProcessorMetaSupplier.of(P.transactional_files(str(out)))}
    commits = SinkCommits("job1", ["out"], metas.__getitem__)
    commits.discard_pending(CheckpointStore(str(tmp_path / "ck"), "job"), None, 271)
    assert read_lines(str(out)) == [] and temp_files(out) == []


def test_a_vertex_whose_driver_commit_fails_keeps_its_pending_transactions(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Rolling back after a failed commit would drop the snapshot's own rows: logged, left."""
    store = CheckpointStore(str(tmp_path), "job")
    meta = _Meta(failures=1)
    commits = SinkCommits("j", ["sink"], {"sink": meta}.__getitem__)
    with caplog.at_level(logging.WARNING, "jetspark.sink_commits"):
        commits.discard_pending(store, _commit_snapshot(store, 0), 271)
    assert "discarded" not in meta.log and "the database is down" in caplog.text

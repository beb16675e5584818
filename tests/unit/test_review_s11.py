"""Review of the day's exactly-once changes (1da05a8..HEAD): each `xfail(strict=True)` test
reproduces a problem found; it fails today and starts passing once the problem is fixed.

Unit level only (no Spark): the real checkpoint store on a tmp_path, the real transactional sinks
driven call by call (tests/unit/test_architecture_audit.py's style)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jetspark import processors as P
from jetspark.checkpoint import CheckpointStore
from jetspark.core import DAG, JobConfig, ProcessingGuarantee
from jetspark.core.runs import ordered_run_id
from jetspark.core.watermark import BroadcastKey
from jetspark.engine.list_inbox import ListInbox
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.planning.pipeline import build_plan
from jetspark.planning.plan import create_processors
from jetspark.processors.transactional import read_lines
from jetspark.runners import driver_lock
from tests.transactional_kit import (
    Saved,
    file_sinks,
    restore,
    save_and_prepare,
    take_snapshot,
    temp_files,
    write,
)

# ---- transactional sinks ---------------------------------------------------------------------


def _epoch_zero_committed(out: Path, item: str) -> Saved:
    """Epoch 0's run wrote `item`, and its snapshot (returned) committed it."""
    saved = Saved()
    [first] = file_sinks(out, 1, saved, run=ordered_run_id(0))
    write(first, item)
    save_and_prepare(first)
    assert first.snapshot_commit_finish(True)
    first.close()
    return saved


def test_a_late_restore_of_an_aborted_run_keeps_the_committed_snapshots_transaction(tmp_path: Path) -> None:
    """Epoch 0 commits. Epoch 1's run A is aborted; one of its sink tasks (Z) has claimed its
    (stage, member) but is slow to reach the sink's restore (a large restore before it in the
    same task; PySpark workers run on after the Spark job is cancelled). Run B of epoch 1 writes,
    prepares, and the driver commits snapshot 1 (LATEST moves); the driver's own sink commit has
    not run yet, or failed ("the restore commits them as before"), or the sink has no coordinator
    commit. Z's restore from snapshot 0 now rolls back every pending transaction of index 0 whose
    prefix snapshot 0 does not name: B's, which belongs to committed snapshot 1. Epoch 2 restores
    snapshot 1 and finds nothing to commit: "b" is lost. Run ids are ordered now
    (`jetspark.core.runs`): Z leaves B's transaction alone, and what Z prepares itself is rolled
    back by epoch 2's restore."""
    out = tmp_path / "out"
    s0 = _epoch_zero_committed(out, "x")
    [zombie] = file_sinks(out, 1, Saved(), run=ordered_run_id(1))  # run A of epoch 1 (aborted)
    s1 = Saved()
    [rerun] = file_sinks(out, 1, s1, run=ordered_run_id(1))  # run B of epoch 1, started after A
    restore(rerun, s0)
    write(rerun, "b")
    save_and_prepare(rerun)
    rerun.close()
    # LATEST names snapshot 1 now; the driver's sink commit is still to come (or failed)
    restore(zombie, s0)  # the aborted run's task reaches its restore
    write(zombie, "z")
    save_and_prepare(zombie)  # and prepares its own transaction, which no snapshot will name
    zombie.close()
    [epoch2] = file_sinks(out, 1, Saved(), run=ordered_run_id(2))
    restore(epoch2, s1)  # commits what snapshot 1 names, rolls back the late run's
    epoch2.close()
    assert sorted(read_lines(str(out))) == ["b", "x"], "a transaction of a committed snapshot was rolled back"
    assert temp_files(out) == [], "the late run's prepared transaction was left"


def test_a_rerun_rolls_back_what_the_aborted_run_of_its_epoch_left(tmp_path: Path) -> None:
    """The other way round: run A of epoch 1 prepared and was aborted; run B (newer) restores
    snapshot 0 and rolls A's transaction back before it writes."""
    out = tmp_path / "out"
    s0 = _epoch_zero_committed(out, "x")
    [aborted] = file_sinks(out, 1, Saved(), run=ordered_run_id(1))
    restore(aborted, s0)
    write(aborted, "a")
    save_and_prepare(aborted)
    aborted.close()
    assert len(temp_files(out)) == 1
    [rerun] = file_sinks(out, 1, Saved(), run=ordered_run_id(1))
    restore(rerun, s0)
    rerun.close()
    assert temp_files(out) == []
    assert read_lines(str(out)) == ["x"]


def test_a_job_resumed_after_the_upgrade_commits_its_prepared_transaction(tmp_path: Path) -> None:
    """A job killed under the previous version: its snapshot saved ("job1-out-0", 1) and the
    file of transaction job1-out-0-0000000001 is prepared, not renamed yet. Resumed under this
    version, the restore commits it (seq 1 <= 1) and `_TransactionalFilesP._final` calls
    `transaction_index`, which takes 'out' for the index: ValueError, on every restart."""
    out = tmp_path / "out"
    [processor] = file_sinks(out, 1, Saved())
    (out / ".job1-out-0-0000000001.tmp").write_text("old\n", encoding="utf-8")
    inbox = ListInbox()
    inbox.fill([(BroadcastKey(("txn", 0)), ("job1-out-0", 1))])
    processor.restore_from_snapshot(inbox)
    assert processor.finish_snapshot_restore()
    processor.close()
    assert read_lines(str(out)) == ["old"]


# ---- the checkpoint store at submit ----------------------------------------------------------


def test_an_at_least_once_job_that_fell_back_past_damage_can_commit_again(tmp_path: Path) -> None:
    """Snapshots 0 and 1 committed; snapshot 1's file is damaged. An AT_LEAST_ONCE submit
    (`where_to_start`, store opened untidied as LocalRunner.submit and SparkRunner._open_store
    open it) falls back to snapshot 0, but LATEST still names 1: the run's first snapshot (id 1,
    restore id + 1) is 'not newer than the committed 1'. The local runner logs 'does not count'
    for every snapshot from then on; the epoch loop aborts each epoch until it gives up. Before
    the change the submit's store tidied: `_fall_back_to` moved LATEST back to 0."""
    from jetspark.runners.coordinator import where_to_start

    root = str(tmp_path)
    first = CheckpointStore(root, "job-1")
    take_snapshot(first, 0)
    take_snapshot(first, 1)
    (tmp_path / "job-1" / "snapshots" / "0000000001" / "count-m0.snap").write_bytes(b"damaged")
    config = JobConfig(
        name="job-1", processing_guarantee=ProcessingGuarantee.AT_LEAST_ONCE, checkpoint_root=root
    )
    store = CheckpointStore(root, "job-1", tidy=False)  # as both runners open it now
    try:
        start = where_to_start(store, config, verify=True)
        assert start.latest is not None and start.latest.snapshot_id == 0
        files = [store.write_file(1, "count", "count-m0", [(5, b"k", b"after the fall back")])]
        store.commit(start.latest.snapshot_id + 1, files, partition_count=271)  # the run's first snapshot
    finally:
        driver_lock.release(store)


def test_a_completed_job_whose_finish_was_cut_short_is_still_completed(tmp_path: Path) -> None:
    """`CheckpointStore.finish` writes the completed record, then deletes LATEST, runs and
    snapshots, in that order. A death (or an OSError, which `tidy_store` only logs) after LATEST
    went leaves a completed record, no LATEST and up to `retain` manifests. The next submit
    (`where_to_start` -> `drop_uncommitted`) raises CorruptSnapshotError 'LATEST was lost' before
    it reads the record, with or without start_over; it said 'already completed' before."""
    from jetspark.runners.coordinator import where_to_start
    from jetspark.runners.identity import claim

    root = str(tmp_path)
    first = CheckpointStore(root, "job-1")
    record, _ = claim(first, start_over=False)
    take_snapshot(first, 0)
    take_snapshot(first, 1)
    first.write_record(record.finished())  # finish(): the record first...
    (tmp_path / "job-1" / "LATEST").unlink()  # ...then LATEST; the driver died before the snapshots
    driver_lock.release(first)
    config = JobConfig(
        name="job-1", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, checkpoint_root=root
    )
    store = CheckpointStore(root, "job-1", tidy=False)
    try:
        start = where_to_start(store, config, verify=True)
        assert start.completed
    finally:
        driver_lock.release(store)


def test_a_second_submit_in_the_driver_process_leaves_the_running_epochs_files_alone(tmp_path: Path) -> None:
    """The audit's two-driver test, within one process (a notebook cell run twice, two submits
    of one name from a script): the running job holds the lock, its epoch task has written
    snapshot 1's file. A second submit of the same name is not refused (`held` is True, and
    `acquire` is re-entrant), deletes snapshot 1's directory, and takes the record over. The
    running driver then commits snapshot 1 naming a file that is gone: LATEST names a snapshot
    an EXACTLY_ONCE job cannot restore from."""
    from jetspark.runners.coordinator import where_to_start
    from jetspark.runners.identity import claim

    root = str(tmp_path / "ck")
    driver = CheckpointStore(root, "job-1", tidy=False)
    claim(driver, start_over=False)  # the running job in this process holds the lock
    take_snapshot(driver, 0)
    task_store = CheckpointStore(root, "job-1", tidy=False)
    written = task_store.write_file(1, "count", "count-m0-a7", [(5, b"k", b"epoch 1")])
    config = JobConfig(
        name="job-1", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, checkpoint_root=root
    )
    second = CheckpointStore(root, "job-1", tidy=False)
    try:
        with pytest.raises(Exception):
            where_to_start(second, config, verify=True)
    finally:
        assert os.path.exists(os.path.join(second.snapshot_dir(1), written.name)), (
            "the running epoch's snapshot file was deleted"
        )
        driver_lock.release(driver)


def test_a_lost_latest_is_detected_with_one_snapshot_retained(tmp_path: Path) -> None:
    from jetspark.checkpoint import CorruptSnapshotError
    from jetspark.checkpoint.job_record import first_record

    store = CheckpointStore(str(tmp_path), "job-1", retain=1)
    store.write_record(first_record("0123456789abcdef", "job-1", "run1"))  # a job that runs
    take_snapshot(store, 0)
    take_snapshot(store, 1)
    take_snapshot(store, 2)  # retention keeps snapshot 2 alone
    (tmp_path / "job-1" / "LATEST").unlink()
    reopened = CheckpointStore(str(tmp_path), "job-1", retain=1, tidy=False)
    with pytest.raises(CorruptSnapshotError, match="LATEST"):
        reopened.drop_uncommitted()


# ---- PostgreSQL: transaction ids longer than a gid may be ------------------------------------


def test_postgres_sink_prepares_under_a_long_vertex_name(postgres_dsn: str) -> None:
    """gid = `<job id:16>-<vertex>-<index>-<run:16 locally, 12 in epochs>-<seq:10>`: 47 characters
    besides the vertex name on the local runner (30 before the change). With a 160-character vertex
    name PREPARE TRANSACTION fails ('transaction identifier ... is too long') at the first snapshot,
    on every restart: the job can never commit. Nothing checks it when the DAG is built."""
    import psycopg

    from tests.postgres_server import roll_back_prepared

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS review_s11_long")
        conn.execute("CREATE TABLE review_s11_long (v text)")
    name = "db_" + "x" * 157
    dag = DAG()
    insert = "INSERT INTO review_s11_long (v) VALUES (%s)"
    dag.new_vertex(name, P.postgres(postgres_dsn, insert, to_row=lambda item: (item,)), local_parallelism=1)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)
    plan = build_plan(dag, config, 1, job_id="0123456789abcdef")
    [processor] = create_processors(plan, name, 0)
    saved = Saved()
    outbox = OutboxImpl([], name, snapshot_sink=saved)
    processor.init(outbox, plan.processor_context(name, 0, 0))
    outbox.allow_snapshot_offers("save_to_snapshot")
    try:
        write(processor, "a")
        save_and_prepare(processor)
        assert processor.snapshot_commit_finish(True)
        processor.close()
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            assert [v for (v,) in conn.execute("SELECT v FROM review_s11_long").fetchall()] == ["a"]
    finally:
        processor.close()
        roll_back_prepared(postgres_dsn)

"""Architecture audit (ARCHITECTURE.md): requirements of the brief that had no test, and gaps found
in the exactly-once paths, as tests. An `xfail(strict=True)` test reproduces a gap: it fails today
and starts passing (so fails the suite, as a reminder to drop the mark) once the gap is closed.

Unit level: the real checkpoint store on a tmp_path, the real transactional sinks driven call by
call as their tasklets drive them (tests/unit/processors/test_transactional.py's style)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.checkpoint import CheckpointStore, CorruptSnapshotError
from jetspark.core import DAG, JobConfig, ProcessingGuarantee
from jetspark.core.context import EPOCHS_ATTRIBUTE
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.planning.pipeline import build_plan
from jetspark.planning.plan import create_processors
from jetspark.processors.transactional import read_lines
from tests.transactional_kit import (
    Saved,
    file_sinks,
    restore,
    save_and_prepare,
    take_snapshot,
    write,
)
from tests.waiting import wait_until

# ---- exactly-once: restore on another member count -----------------------------------------


def test_files_sink_2_to_1_to_2_members_keeps_every_committed_row(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # run 1 on 2 members: each processor commits its seq 0
    s1 = Saved()
    run1 = file_sinks(out, 2, s1)
    write(run1[0], "a0")
    write(run1[1], "a1")
    for p in run1:
        save_and_prepare(p)
    for p in run1:
        assert p.snapshot_commit_finish(True)
        p.close()
    assert sorted(read_lines(str(out))) == ["a0", "a1"]
    # run 2 on 1 member: restores both processors' entries, commits one more transaction
    s2 = Saved()
    [only] = file_sinks(out, 1, s2)
    restore(only, s1)
    write(only, "b")
    save_and_prepare(only)
    assert only.snapshot_commit_finish(True)
    only.close()
    assert sorted(read_lines(str(out))) == ["a0", "a1", "b"]
    # run 3 on 2 members again, from run 2's snapshot
    run3 = file_sinks(out, 2, Saved())
    for p in run3:
        restore(p, s2)
    write(run3[1], "c1")
    for p in run3:
        save_and_prepare(p)
        assert p.snapshot_commit_finish(True)
        p.close()
    assert sorted(read_lines(str(out))) == ["a0", "a1", "b", "c1"], "a committed row was overwritten"


def test_a_job_resumed_on_2_then_1_then_2_members_keeps_every_row_once(tmp_path: Path) -> None:
    from examples.streaming_counts import expected_rows, streaming_dag
    from jetspark.runners.local import LocalRunner

    out, root, count = str(tmp_path / "out"), str(tmp_path / "ck"), 3000
    config = JobConfig(
        name="rescaled",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=30,
        checkpoint_root=root,
    )

    os.makedirs(out)

    def run_until_committed(members: int, rows_at_least: int) -> None:
        job = LocalRunner(members).submit(streaming_dag(out, count, rate=3000), config)
        wait_until(lambda: len(read_lines(out)) >= rows_at_least, f"{rows_at_least} rows committed", 120)
        job.suspend()

    run_until_committed(2, 300)  # both file processors commit their first transactions
    run_until_committed(1, 900)  # one file processor takes over both prefixes
    job = LocalRunner(2).submit(streaming_dag(out, count, rate=3000), config)
    job.join(120)
    assert sorted(read_lines(out)) == expected_rows(count)


# ---- exactly-once: a task of an aborted run that outlives the abort (no fencing) --------------


def _zombie_sequence(make: Any, write_items: Any, commit_on_driver: Any) -> None:
    """Epoch 0 commits; epoch 1's run A is aborted but one of its sink tasks (Z) lives on (PySpark
    workers run until killed; an executor cut off from the driver runs on); run B of epoch 1
    commits snapshot 1 and the driver commits its transaction; then Z, restored from snapshot 0
    like B, writes and prepares its terminal snapshot's transaction (the same deterministic id);
    epoch 2 restores snapshot 1 and commits what its prefix has pending up to the saved seq."""
    s0 = Saved()
    [first] = make(s0)
    write_items(first, "x")
    save_and_prepare(first)
    assert first.snapshot_commit_finish(True)
    first.close()
    [zombie] = make(Saved())  # run A of epoch 1: restored, then its epoch was aborted
    restore(zombie, s0)
    s1 = Saved()
    [rerun] = make(s1)  # run B of epoch 1
    restore(rerun, s0)
    write_items(rerun, "b")
    save_and_prepare(rerun)
    rerun.close()
    commit_on_driver(s1)  # LATEST names snapshot 1; the driver commits its transactions
    write_items(zombie, "z")  # the aborted run's task goes on a little
    save_and_prepare(zombie)  # and prepares under <job>-<vertex>-0-0000000001, as B did
    zombie.close()
    [epoch2] = make(Saved())
    restore(epoch2, s1)  # commits what is pending with seq <= 1
    epoch2.close()


def test_files_a_task_of_an_aborted_run_cannot_replace_a_committed_transaction(tmp_path: Path) -> None:
    from jetspark.processors.transactional import _TransactionalFilesP

    out = tmp_path / "out"

    def commit_on_driver(saved: Saved) -> None:
        committer = _TransactionalFilesP(str(out), str, 100_000).snapshot_committer("job1", "out")
        assert committer is not None
        committer.commit([entry.decode() for entry in saved.entries])
        committer.close()

    _zombie_sequence(lambda saved: file_sinks(out, 1, saved), write, commit_on_driver)
    assert sorted(read_lines(str(out))) == ["b", "x"], "the aborted run's row replaced the committed one"


def postgres_sinks(dsn: str, saved: Saved) -> list[Any]:
    dag = DAG()
    insert = "INSERT INTO audit_zombie (v) VALUES (%s)"
    dag.new_vertex("db", P.postgres(dsn, insert, to_row=lambda item: (item,)), local_parallelism=1)
    plan = build_plan(dag, JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE), 1, job_id="zjob")
    [processor] = create_processors(plan, "db", 0)
    context = plan.processor_context("db", 0, 0)
    context.attributes[EPOCHS_ATTRIBUTE] = True
    outbox = OutboxImpl([], "db", snapshot_sink=saved)
    processor.init(outbox, context)
    outbox.allow_snapshot_offers("save_to_snapshot")
    return [processor]


def test_postgres_a_task_of_an_aborted_run_cannot_add_rows_after_the_commit(postgres_dsn: str) -> None:
    import psycopg

    from jetspark.processors.postgres import _PostgresP

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS audit_zombie")
        conn.execute("CREATE TABLE audit_zombie (v text)")

    def commit_on_driver(saved: Saved) -> None:
        sink = _PostgresP(postgres_dsn, "INSERT INTO audit_zombie (v) VALUES (%s)", lambda i: (i,), 100_000)
        committer = sink.snapshot_committer("zjob", "db")
        assert committer is not None
        committer.commit([entry.decode() for entry in saved.entries])
        committer.close()

    try:
        _zombie_sequence(lambda saved: postgres_sinks(postgres_dsn, saved), write, commit_on_driver)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            rows = sorted(v for (v,) in conn.execute("SELECT v FROM audit_zombie").fetchall())
        assert rows == ["b", "x"], "a row of the aborted run was committed"
    finally:
        from tests.postgres_server import roll_back_prepared

        roll_back_prepared(postgres_dsn)


# ---- the checkpoint store: damage, two drivers, commit outcome --------------------------------


def test_a_lost_latest_is_detected_not_taken_for_a_fresh_job(tmp_path: Path) -> None:
    from jetspark.checkpoint.job_record import first_record

    store = CheckpointStore(str(tmp_path), "job-1")
    store.write_record(first_record("0123456789abcdef", "job-1", "run1"))  # a job that runs
    take_snapshot(store, 0)
    take_snapshot(store, 1)
    (tmp_path / "job-1" / "LATEST").unlink()
    try:
        reopened = CheckpointStore(str(tmp_path), "job-1")
        manifest = reopened.latest()
    except CorruptSnapshotError as error:  # detected and named: fine
        assert "LATEST" in str(error)
        return
    assert manifest is not None and manifest.snapshot_id == 1, "committed snapshots were taken for none"


def test_a_completed_job_whose_tidying_was_cut_short_is_not_taken_for_a_lost_latest(tmp_path: Path) -> None:
    """The record says completed; LATEST went, the snapshot directories did not (a crash or an
    error in the middle of the tidying): leftovers, tidied, not an error."""
    from jetspark.checkpoint.job_record import first_record

    store = CheckpointStore(str(tmp_path), "job-1")
    store.write_record(first_record("0123456789abcdef", "job-1", "run1").finished())
    take_snapshot(store, 0)
    take_snapshot(store, 1)
    (tmp_path / "job-1" / "LATEST").unlink()
    reopened = CheckpointStore(str(tmp_path), "job-1")
    assert reopened.latest() is None and reopened.committed_ids() == []


def test_a_refused_second_driver_leaves_the_running_epochs_files_alone(tmp_path: Path) -> None:
    import subprocess
    import sys
    import textwrap

    from jetspark.runners.identity import claim

    root = str(tmp_path / "ck")
    driver = CheckpointStore(root, "job-1")
    claim(driver, start_over=False)  # this process is the running driver: it holds the lock
    take_snapshot(driver, 0)
    task_store = CheckpointStore(root, "job-1", tidy=False)  # an epoch task writes its file
    written = task_store.write_file(1, "count", "count-m0-a7", [(5, b"k", b"epoch 1")])
    script = textwrap.dedent(f"""
        from jetspark import DAG, Edge, processors as P
        from jetspark.core import JobAlreadyRunningError, JobConfig, ProcessingGuarantee
        from jetspark.runners.local import LocalRunner
        dag = DAG()
        source = dag.new_vertex("source", P.generator_stream(count=1))
        dag.edge(Edge.between(source, dag.new_vertex("sink", P.collect())))
        config = JobConfig(name="job-1", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
                           checkpoint_root={root!r})
        try:
            LocalRunner(1).submit(dag, config)
            print("RAN")
        except JobAlreadyRunningError:
            print("REFUSED")
    """)
    second = subprocess.run(
        [sys.executable, "-c", script],
        cwd=str(Path(__file__).resolve().parents[2]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "REFUSED" in second.stdout, second.stdout + second.stderr
    driver.commit(1, [written], partition_count=271)  # the running driver's epoch ends and commits
    manifest = driver.latest()
    assert manifest is not None and list(driver.read(manifest, "count")) == [(5, b"k", b"epoch 1")]


def test_a_commit_that_raises_after_latest_moved_counts_as_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The directory's fsync after `LATEST` was replaced can raise (an I/O error): the snapshot
    is committed all the same, so the driver's commit (`snapshot_io.commit_reported`) returns its
    manifest instead of raising (the epoch would be handled as aborted: its results dropped, the
    driver's sink commit skipped). A commit that fails before `LATEST` moved still raises."""
    from jetspark.checkpoint import atomic
    from jetspark.runners.snapshot_io import commit_reported

    store = CheckpointStore(str(tmp_path), "job-1")
    take_snapshot(store, 0)
    real = atomic.sync_directory
    job_dir = str(tmp_path / "job-1")

    def failing(fs: Any, directory: str) -> None:
        if directory.rstrip("/") == job_dir:  # the fsync of LATEST's directory: an I/O error
            raise OSError(5, "Input/output error")
        real(fs, directory)

    monkeypatch.setattr(atomic, "sync_directory", failing)
    files = [store.write_file(1, "count", "count-m0", [(5, b"k", b"1")]).to_json()]
    manifest = commit_reported(store, 1, files, 271, {})
    assert manifest.snapshot_id == 1 and store.latest_id() == 1

    monkeypatch.setattr(
        atomic, "replace_json", lambda *args, **kwargs: (_ for _ in ()).throw(OSError(28, "full"))
    )
    files = [store.write_file(2, "count", "count-m0", [(5, b"k", b"2")]).to_json()]
    with pytest.raises(OSError, match="full"):
        commit_reported(store, 2, files, 271, {})
    assert store.latest_id() == 1, "a commit that failed before LATEST moved did not commit"


# ---- files named by the job id ---------------------------------------------------------------


def test_a_job_started_over_keeps_the_earlier_runs_jsonl_files(tmp_path: Path) -> None:
    from jetspark import Edge
    from jetspark.runners.local import LocalRunner

    out, root = str(tmp_path / "out"), str(tmp_path / "ck")

    def dag(first: int) -> DAG:
        d = DAG()
        source = d.new_vertex("source", P.from_iterable(range(first, first + 20)))
        d.edge(Edge.between(source, d.new_vertex("out", P.write_jsonl(out), local_parallelism=1)))
        return d

    def config(start_over: bool) -> JobConfig:
        return JobConfig(
            name="jsonl",
            processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
            checkpoint_root=root,
            start_over=start_over,
        )

    LocalRunner(1).submit(dag(0), config(False)).join(60)
    LocalRunner(1).submit(dag(100), config(True)).join(60)
    rows = []
    for directory, _, names in os.walk(out):
        for name in names:
            if name.startswith("part-"):
                with open(os.path.join(directory, name)) as file:
                    rows += [json.loads(line) for line in file]
    assert sorted(rows) == list(range(20)) + list(range(100, 120))


# ---- requirements checked here for the first time (these pass) ---------------------------------


def test_a_second_run_of_an_epoch_task_refuses_and_a_new_run_claims_afresh(tmp_path: Path) -> None:
    """Brief: any task or stage retry inside an epoch aborts the epoch. A retry or speculative copy
    (attempt number > 0) and a stage run again (attempt 0 again, same run) refuse to run; the
    restarted epoch (a new run id) runs."""
    from jetspark.runners.spark.epoch_task import EpochSpec, EpochTask

    dag = DAG()
    dag.new_vertex("out", P.collect(), local_parallelism=1)
    plan = build_plan(dag, JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE), 2, job_id="j")
    CheckpointStore(str(tmp_path), "job-1")

    def task(run: str, attempt_number: int, attempt_id: int) -> EpochTask:
        spec = EpochSpec(str(tmp_path), "job-1", 1, None, 0, 1.0, frozenset(), run)
        return EpochTask(spec, plan, ["out"], 1, attempt_id, None, stage=0, attempt_number=attempt_number)

    assert task("run-a", 0, 10).refusal(0, carrier=0) is None, "the first attempt runs"
    refused = task("run-a", 0, 11).refusal(0, carrier=0)  # the stage run again: attempt 0 again
    assert refused is not None and "again" in refused.reason
    assert task("run-a", 1, 12).refusal(0, carrier=0) is not None, "a retry or speculative copy refuses"
    assert task("run-b", 0, 13).refusal(0, carrier=0) is None, "the epoch's next run claims afresh"


def test_only_the_files_a_task_reported_are_committed_and_restored(tmp_path: Path) -> None:
    """Brief: the driver commits the snapshot from what every task reported; a file an aborted
    attempt left in the epoch's directory is neither in the manifest nor restored."""
    from jetspark.runners.snapshot_io import commit_reported

    store = CheckpointStore(str(tmp_path), "job-1")
    task = CheckpointStore(str(tmp_path), "job-1", tidy=False)
    task.write_file(1, "count", "count-m0-a3", [(5, b"k", b"from the failed attempt")])  # never reported
    reported = task.write_file(1, "count", "count-m0-a4", [(5, b"k", b"reported")])
    manifest = commit_reported(store, 1, [reported.to_json()], 271, {})
    assert [f.name for f in manifest.files] == ["count-m0-a4.snap"]
    latest = store.latest(verify=True)
    assert latest is not None and list(store.read(latest, "count")) == [(5, b"k", b"reported")]
    body = json.loads((tmp_path / "job-1" / "LATEST").read_text())
    assert body == {"snapshot_id": 1, "manifest": manifest.checksum}


def test_restoring_on_another_member_count_routes_every_keyed_entry_to_one_owner(tmp_path: Path) -> None:
    """Brief: a keyed entry goes to the processor owning its partition under the new plan, a
    broadcast key to every processor; so a snapshot of 2 members restores on 3 with nothing lost
    or doubled (read from the store by each member's share)."""
    from jetspark.engine.snapshot import SnapshotEntry as Entry
    from jetspark.runners.snapshot_io import read_shares

    dag = DAG()
    dag.new_vertex("v", P.collect(), local_parallelism=2)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)
    store = CheckpointStore(str(tmp_path), "job-1")
    keyed = [(p, f"k{p}".encode(), f"v{p}".encode()) for p in range(0, 271, 7)]
    files = [
        store.write_file(0, "v", "v-m0", [e for e in keyed if e[0] % 2 == 0] + [(-1, b"wm", b"0")]),
        store.write_file(0, "v", "v-m1", [e for e in keyed if e[0] % 2 == 1] + [(-1, b"wm", b"1")]),
    ]
    manifest = store.commit(0, files, partition_count=271)
    plan = build_plan(dag, config, 3, job_id="j")
    seen: list[tuple[int, bytes]] = []
    broadcast_per_member = []
    for member in range(3):
        data = read_shares(store, manifest, plan, ["v"], member)
        entries = [Entry._make(e) if not isinstance(e, Entry) else e for e in data.get("v", [])]
        seen += [(e.partition, e.key) for e in entries if e.partition != -1]
        broadcast_per_member.append(sorted(e.key for e in entries if e.partition == -1))
    assert sorted(seen) == sorted((p, k) for p, k, _ in keyed), "each keyed entry restored once"
    assert all(keys == [b"wm", b"wm"] for keys in broadcast_per_member), (
        "broadcast entries reach every member"
    )

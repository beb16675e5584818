"""The checkpoint store: commit order, checksums, fallback, retention, names, export."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark.checkpoint import CheckpointStore, CorruptSnapshotError
from jetspark.checkpoint.entries import Entry
from jetspark.checkpoint.job_record import first_record

ENTRIES: list[Entry] = [(5, b"k5", b"v5"), (-1, b"b", b"all"), (3, b"k3", b"v3"), (5, b"k5b", b"v5b")]


def take(store: CheckpointStore, snapshot_id: int, entries: list[Entry] = ENTRIES) -> None:
    files = [
        store.write_file(snapshot_id, "count", "count-m0", entries),
        store.write_file(snapshot_id, "src", "src-m0", [(7, b"o", b"1")]),
    ]
    store.commit(snapshot_id, files, partition_count=271, extra={"members": 1})


def flip_last_byte(victim: Path) -> None:
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))


def test_a_committed_snapshot_reads_back_grouped_by_partition_in_offer_order(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job-1")
    take(store, 0)
    manifest = store.latest()
    assert manifest is not None and manifest.snapshot_id == 0 and manifest.extra == {"members": 1}
    assert list(store.read(manifest, "count")) == [
        (-1, b"b", b"all"),
        (3, b"k3", b"v3"),
        (5, b"k5", b"v5"),
        (5, b"k5b", b"v5b"),
    ]
    assert list(store.read(manifest, "count", {5, -1})) == [
        (-1, b"b", b"all"),
        (5, b"k5", b"v5"),
        (5, b"k5b", b"v5b"),
    ]
    assert list(store.read(manifest, "src")) == [(7, b"o", b"1")]


def test_a_snapshot_is_committed_only_once_latest_names_it(tmp_path: Path) -> None:
    """The driver stopped after writing snapshot 1's manifest, before moving LATEST."""
    store = CheckpointStore(str(tmp_path), "job-1")
    take(store, 0)
    files = [store.write_file(1, "count", "count-m0", [(1, b"new", b"state")])]
    store.write_manifest(store.snapshot_dir(1), 1, files, 271, None)  # the crash: no LATEST move
    reopened = CheckpointStore(str(tmp_path), "job-1")
    manifest = reopened.latest()
    assert manifest is not None and manifest.snapshot_id == 0
    assert not (tmp_path / "job-1" / "snapshots" / "0000000001").exists(), (
        "an uncommitted snapshot is deleted"
    )
    take(reopened, 1)  # the next execution takes snapshot 1 afresh
    assert reopened.committed_ids() == [1, 0]


def test_a_truncated_file_names_the_file_or_falls_back_to_the_previous_snapshot(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job-1")
    take(store, 0)
    take(store, 1, [(2, b"k", b"newer")])
    victim = tmp_path / "job-1" / "snapshots" / "0000000001" / "count-m0.snap"
    victim.write_bytes(victim.read_bytes()[:-3])
    with pytest.raises(
        CorruptSnapshotError, match=r"count-m0.snap: has \d+ bytes, the manifest says"
    ) as caught:
        store.latest()
    assert caught.value.path == str(victim)
    manifest = store.latest(fallback=True)
    assert manifest is not None and manifest.snapshot_id == 0


def test_a_flipped_byte_is_found_by_the_segment_checksum_and_the_file_checksum(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job-1")
    take(store, 0)
    flip_last_byte(tmp_path / "job-1" / "snapshots" / "0000000000" / "count-m0.snap")
    manifest = store.latest()  # the sizes match: only reading finds it
    assert manifest is not None
    with pytest.raises(
        CorruptSnapshotError, match=r"count-m0\.snap: segment of partition 5 fails its CRC-32"
    ):
        list(store.read(manifest, "count", {5}))
    with pytest.raises(CorruptSnapshotError, match=r"count-m0\.snap: fails its SHA-256"):
        list(store.read(manifest, "count"))
    assert list(store.read(manifest, "count", {3})) == [(3, b"k3", b"v3")], "other segments still read"


def test_a_missing_file_or_a_tampered_manifest_is_detected(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job-1")
    take(store, 0)
    snapshot = tmp_path / "job-1" / "snapshots" / "0000000000"
    (snapshot / "src-m0.snap").unlink()
    with pytest.raises(CorruptSnapshotError, match=r"src-m0\.snap: is missing"):
        store.latest()
    take(store, 1)
    manifest_path = tmp_path / "job-1" / "snapshots" / "0000000001" / "manifest.json"
    body = json.loads(manifest_path.read_text())
    body["files"][0]["entries"] = 99
    manifest_path.write_text(json.dumps(body))
    with pytest.raises(CorruptSnapshotError, match=r"manifest\.json: fails its checksum"):
        store.latest()
    with pytest.raises(CorruptSnapshotError, match=r"0000000001/manifest\.json: fails its checksum"):
        store.latest(fallback=True)  # snapshot 0 is broken too: the first problem is named


def test_only_the_last_k_committed_snapshots_are_kept(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job-1", retain=2)
    for snapshot_id in range(5):
        take(store, snapshot_id)
    assert store.committed_ids() == [4, 3]
    assert sorted(p.name for p in (tmp_path / "job-1" / "snapshots").iterdir()) == [
        "0000000003",
        "0000000004",
    ]
    with pytest.raises(ValueError, match="not newer than the committed 4"):
        take(store, 4)


@pytest.mark.parametrize("name", ["", "..", "../escape", "a/b", "/abs", ".hidden", "x" * 129, "a b"])
def test_names_that_could_escape_the_root_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="cannot name a checkpoint directory"):
        CheckpointStore(str(tmp_path), name)
    store = CheckpointStore(str(tmp_path), "job-1")
    take(store, 0)
    manifest = store.latest()
    assert manifest is not None
    with pytest.raises(ValueError, match="cannot name a checkpoint directory"):
        store.export(manifest, name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job-1"]


def test_an_exported_snapshot_outlives_the_job_and_is_replaced_by_name(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job-1", retain=1)
    take(store, 0)
    first = store.latest()
    assert first is not None
    store.export(first, "before-upgrade")
    take(store, 1, [(9, b"k", b"later")])
    take(store, 2, [(9, b"k", b"latest")])  # snapshot 0 is gone from the job's directory
    other_job = CheckpointStore(str(tmp_path), "job-2")
    exported = other_job.exported("before-upgrade")
    assert exported.snapshot_id == 0 and exported.extra["exported_name"] == "before-upgrade"
    assert list(other_job.read(exported, "count", {3})) == [(3, b"k3", b"v3")]
    latest = store.latest()
    assert latest is not None
    store.export(latest, "before-upgrade")
    assert list(other_job.read(other_job.exported("before-upgrade"), "count")) == [(9, b"k", b"latest")]
    with pytest.raises(FileNotFoundError, match="no exported snapshot 'nope'"):
        other_job.exported("nope")


def test_an_fsspec_url_works_as_the_root() -> None:
    root = f"memory://jetspark-{uuid.uuid4().hex[:8]}"
    store = CheckpointStore(root, "job-1")
    take(store, 0)
    take(store, 1, [(4, b"x", b"y")])
    reopened = CheckpointStore(root, "job-1")
    manifest = reopened.latest()
    assert manifest is not None and manifest.snapshot_id == 1
    assert list(reopened.read(manifest, "count")) == [(4, b"x", b"y")]


entries_strategy = st.lists(
    st.tuples(st.integers(-1, 20), st.binary(max_size=8), st.binary(max_size=16)), max_size=60
)


@settings(max_examples=60, deadline=None)
@given(entries=entries_strategy, wanted=st.frozensets(st.integers(-1, 20)))
def test_reading_a_share_gives_exactly_its_partitions_entries_in_offer_order(
    entries: list[Entry], wanted: frozenset[int]
) -> None:
    store = CheckpointStore(f"memory://prop-{uuid.uuid4().hex}", "job")
    store.commit(0, [store.write_file(0, "v", "v-m0", entries)], partition_count=21)
    manifest = store.latest()
    assert manifest is not None
    expected = [e for p in sorted(wanted) for e in entries if e[0] == p]
    assert list(store.read(manifest, "v", wanted)) == expected
    assert sorted(store.read(manifest, "v")) == sorted(entries)


def test_a_failed_clean_up_after_the_commit_leaves_the_snapshot_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(str(tmp_path), "job-1", retain=1)
    take(store, 0)

    def refuse(_latest: int) -> None:
        raise PermissionError("read-only snapshot directory")

    monkeypatch.setattr(store, "_apply_retention", refuse)
    take(store, 1)  # no error: the commit happened
    assert store.latest_id() == 1 and store.committed_ids() == [1, 0]


def test_verify_reads_every_file_so_a_flipped_bit_is_named_before_a_restore(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job-1")
    take(store, 0)
    flip_last_byte(tmp_path / "job-1" / "snapshots" / "0000000000" / "count-m0.snap")
    assert store.latest() is not None  # the sizes match
    with pytest.raises(CorruptSnapshotError, match=r"count-m0\.snap: fails its SHA-256 check"):
        store.latest(verify=True)


def test_a_fallback_moves_latest_back_so_the_next_commit_continues_from_there(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job-1")
    take(store, 0)
    take(store, 1, [(2, b"k", b"newer")])
    (tmp_path / "job-1" / "snapshots" / "0000000001" / "src-m0.snap").unlink()
    manifest = store.latest(fallback=True)
    assert manifest is not None and manifest.snapshot_id == 0
    assert store.latest_id() == 0 and store.committed_ids() == [0]
    take(store, 1)  # the epoch after the intact snapshot commits under the damaged one's id
    assert store.latest_id() == 1


def test_a_corrupt_snapshot_error_pickles_as_itself() -> None:
    import pickle

    error = pickle.loads(pickle.dumps(CorruptSnapshotError("/x/a.snap", "is missing")))
    assert isinstance(error, CorruptSnapshotError)
    assert error.path == "/x/a.snap" and str(error) == "snapshot file /x/a.snap: is missing"


@pytest.mark.parametrize("root", ["local", "memory"])
def test_a_task_of_a_run_is_claimed_once_and_a_new_run_claims_afresh(tmp_path: Path, root: str) -> None:
    url = str(tmp_path) if root == "local" else f"memory://claims-{uuid.uuid4().hex}"
    store = CheckpointStore(url, "job-1")
    assert store.claim("run-a", 2, 1, "attempt-0")
    assert not store.claim("run-a", 2, 1, "attempt-1"), "a second attempt of the task loses"
    assert not store.claim("run-a", 2, 1, "attempt-0"), "so does the same claimant, coming back"
    assert store.claim("run-a", 2, 0, "attempt-1") and store.claim("run-a", 3, 1, "attempt-1")
    assert store.claim("run-b", 2, 1, "attempt-1"), "another run of the epoch claims afresh"
    store.forget_run("run-a")
    assert store.claim("run-a", 2, 1, "attempt-2") and not store.claim("run-b", 2, 1, "attempt-2")
    store.forget_runs()
    assert store.claim("run-b", 2, 1, "attempt-3")


def test_two_attempts_racing_for_a_task_on_a_local_root_never_both_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interleaving a check-write-read claim loses: attempt 0 writes and reads its name back
    (it won), then attempt 1, which had checked before 0 wrote, writes and reads its own name back
    too. On a local root the claim is an exclusive create: the late attempt loses."""
    store = CheckpointStore(str(tmp_path), "job-1")
    assert store.claim("run-a", 1, 0, "attempt-0")
    monkeypatch.setattr(store.fs, "exists", lambda _path: False)  # "checked before 0 wrote"
    assert not store.claim("run-a", 1, 0, "attempt-1")
    assert (tmp_path / "job-1" / "runs" / "run-a" / "s0001-m00000").read_bytes() == b"attempt-0"


def test_a_completed_job_keeps_no_claim_markers(tmp_path: Path) -> None:
    from jetspark.checkpoint.job_record import first_record

    store = CheckpointStore(str(tmp_path), "job-1")
    assert store.claim("run-a", 0, 0, "0")
    store.finish(first_record("0123456789abcdef", "job-1", "run1").finished())
    assert not (tmp_path / "job-1" / "runs").exists()
    assert store.claim("run-a", 0, 0, "1")


def test_what_runners_keep_beside_the_snapshots_is_named_by_the_store(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job-1")
    assert store.is_local and not CheckpointStore(f"memory://{uuid.uuid4().hex}", "job-1").is_local
    assert store.driver_lock_path == f"{tmp_path}/job-1/DRIVER"
    copy = store.side_input_dir("0123", "rows")
    assert copy == f"{tmp_path}/job-1/side-inputs/0123/rows"
    Path(copy).mkdir(parents=True)
    assert not store.side_input_written(copy), "a copy whose writer died before its _SUCCESS"
    (Path(copy) / "_SUCCESS").touch()
    assert store.side_input_written(copy)
    store.drop_side_inputs()
    assert not (tmp_path / "job-1" / "side-inputs").exists()
    store.drop_side_inputs()  # nothing left to delete


# ---- LATEST lost: the record remembers that a snapshot was committed ----------------------------


def running_job(tmp_path: Path, retain: int = 2) -> CheckpointStore:
    store = CheckpointStore(str(tmp_path), "job-1", retain=retain)
    store.write_record(first_record("0123456789abcdef", "job-1", "run1"))
    return store


def test_the_record_is_marked_at_the_first_commit_and_keeps_the_mark_through_a_takeover(
    tmp_path: Path,
) -> None:
    store = running_job(tmp_path)
    record = store.read_record()
    assert record is not None and not record.committed
    take(store, 0)
    record = store.read_record()
    assert record is not None and record.committed
    store.write_record(record.taken_over("run2"))  # the next submit's run
    reopened = CheckpointStore(str(tmp_path), "job-1")
    again = reopened.read_record()
    assert again is not None and again.committed and again.run == "run2"


def test_a_completed_record_keeps_the_commit_mark_the_runner_never_saw(tmp_path: Path) -> None:
    """The runner finishes with its own copy of the record, read before the first commit marked
    the one on disk; the completed record still says a snapshot was committed."""
    store = running_job(tmp_path)
    runners_copy = store.read_record()
    take(store, 0)
    take(store, 1)
    assert runners_copy is not None and not runners_copy.committed
    store.finish(runners_copy.finished())
    done = CheckpointStore(str(tmp_path), "job-1").read_record()
    assert done is not None and done.completed is not None and done.committed
    assert not store.has_leftovers()


def test_a_record_written_by_another_store_keeps_its_commit_mark_when_finished(tmp_path: Path) -> None:
    store = running_job(tmp_path)
    take(store, 0)
    runners_copy = first_record("0123456789abcdef", "job-1", "run1")  # as read before the commit
    CheckpointStore(str(tmp_path), "job-1").finish(runners_copy.finished())
    done = store.read_record()
    assert done is not None and done.committed


def test_a_record_of_a_job_that_never_committed_stays_unmarked_when_finished(tmp_path: Path) -> None:
    store = running_job(tmp_path)
    record = store.read_record()
    assert record is not None
    store.finish(record.finished())
    done = store.read_record()
    assert done is not None and done.completed is not None and not done.committed


def test_leftovers_of_a_cut_short_finish_are_found_and_removed(tmp_path: Path) -> None:
    store = running_job(tmp_path)
    take(store, 0)
    assert store.has_leftovers()
    (tmp_path / "job-1" / "LATEST").unlink()
    shutil.rmtree(tmp_path / "job-1" / "snapshots" / "0000000000")  # only the empty directory stays
    assert store.has_leftovers()
    store.remove_leftovers()
    assert not store.has_leftovers() and (tmp_path / "job-1" / "JOB").exists()


@pytest.mark.parametrize("snapshots_left", [0, 1])
def test_a_lost_latest_of_a_job_that_committed_is_refused_with_any_number_of_snapshots_left(
    tmp_path: Path, snapshots_left: int
) -> None:
    store = running_job(tmp_path, retain=1)
    take(store, 0)
    take(store, 1)
    (tmp_path / "job-1" / "LATEST").unlink()
    if snapshots_left == 0:
        shutil.rmtree(tmp_path / "job-1" / "snapshots")
    with pytest.raises(CorruptSnapshotError, match="LATEST"):
        CheckpointStore(str(tmp_path), "job-1", retain=1)
    assert (tmp_path / "job-1" / "JOB").exists()  # nothing deleted


def test_a_crash_before_the_first_latest_is_still_tidied(tmp_path: Path) -> None:
    """One manifest, no LATEST, an unmarked record: the first commit died between the two; the
    snapshot is deleted and the job starts afresh, as before the mark."""
    store = running_job(tmp_path)
    files = [store.write_file(0, "count", "count-m0", ENTRIES)]
    store.write_manifest(store.snapshot_dir(0), 0, files, 271, {})
    reopened = CheckpointStore(str(tmp_path), "job-1")
    assert reopened.latest_id() is None and not (tmp_path / "job-1" / "snapshots" / "0000000000").exists()


def test_a_discard_cut_short_leaves_no_record_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cancelled job's directory goes record first: a death part way through leaves files the
    next submit tidies, never a marked record without LATEST (which it would refuse)."""
    store = running_job(tmp_path)
    take(store, 0)
    removed: list[str] = []
    real_remove = store._remove

    def die_after_the_first(path: str) -> None:
        if removed:
            raise KeyboardInterrupt("the driver died")
        removed.append(path)
        real_remove(path)

    monkeypatch.setattr(store, "_remove", die_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        store.discard()
    (tmp_path / "job-1" / "LATEST").unlink()  # whatever else went, the record went first
    assert not (tmp_path / "job-1" / "JOB").exists()
    CheckpointStore(str(tmp_path), "job-1")  # tidies, raises nothing


def test_a_completed_record_keeps_the_metrics_it_completed_with(tmp_path: Path) -> None:
    store = running_job(tmp_path)
    record = store.read_record()
    assert record is not None and record.metrics is None
    store.finish(record.finished({"counts": {"received": 7, "emitted": 3}}))
    done = CheckpointStore(str(tmp_path), "job-1").read_record()
    assert done is not None and done.metrics == {"counts": {"received": 7, "emitted": 3}}

"""The checkpoint store's writes are durable on a local file system: each file is synced before it
counts, and each directory whose entries changed is synced after (`checkpoint/atomic.py`), so a
committed snapshot, `LATEST` and the job's record survive a power loss, not only a crash."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs
import fsspec
import pytest

from jetspark.checkpoint import CheckpointStore, CorruptSnapshotError, atomic
from jetspark.checkpoint.job_record import first_record


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths `os.fsync` was called on, in order."""
    paths: list[str] = []
    real = os.fsync

    def recording(descriptor: Any) -> None:
        fd = descriptor if isinstance(descriptor, int) else descriptor.fileno()
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(descriptor)

    monkeypatch.setattr(os, "fsync", recording)
    return paths


def test_a_commit_syncs_the_files_then_the_manifest_then_latest_and_their_directories(
    tmp_path: Path, synced: list[str]
) -> None:
    store = CheckpointStore(str(tmp_path), "job")
    written = store.write_file(0, "counts", "m0", [(0, b"k", b"v")])
    job_dir = tmp_path / "job"
    snapshot_dir = job_dir / "snapshots" / f"{0:010d}"
    assert synced == [str(snapshot_dir / written.name)]
    synced.clear()
    store.commit(0, [written], partition_count=1)
    # the manifest (as a temporary file, then its directory), the snapshots directory, LATEST
    assert [Path(p).name.split(".tmp-")[0] for p in synced] == [
        "manifest.json",
        snapshot_dir.name,
        "snapshots",
        "LATEST",
        "job",
    ]
    assert store.latest() is not None and store.latest().snapshot_id == 0  # type: ignore[union-attr]


def test_the_jobs_record_is_synced_before_it_replaces_the_old_one(tmp_path: Path, synced: list[str]) -> None:
    store = CheckpointStore(str(tmp_path), "job")
    store.write_record(first_record("0123456789abcdef", "job", "run1"))
    assert [Path(p).name.split(".tmp-")[0] for p in synced] == ["JOB", "job"]
    assert store.read_record() is not None


def test_a_memory_file_system_is_written_without_syncing(synced: list[str]) -> None:
    store = CheckpointStore("memory://atomic-test", "job")
    written = store.write_file(0, "counts", "m0", [(0, b"k", b"v")])
    store.commit(0, [written], partition_count=1)
    assert synced == [] and store.latest() is not None


def test_json_is_replaced_whole_and_read_back_or_none_when_missing(tmp_path: Path, synced: list[str]) -> None:
    fs = fsspec.filesystem("file")
    path = f"{tmp_path}/deep/er/record.json"
    assert atomic.read_json(fs, path) is None
    atomic.replace_json(fs, path, {"b": 1, "a": [1, 2]})
    assert Path(path).read_bytes() == b'{"a": [1, 2], "b": 1}'  # keys sorted: same body, same bytes
    assert [Path(p).name.split(".tmp-")[0] for p in synced] == ["record.json", "er"]
    atomic.replace_json(fs, path, {"c": None})
    assert atomic.read_json(fs, path) == {"c": None}
    assert [p.name for p in Path(path).parent.iterdir()] == ["record.json"]  # no temporary left
    Path(path).write_text("{not json")
    with pytest.raises(ValueError):
        atomic.read_json(fs, path)


def test_records_written_before_the_json_helper_are_read(tmp_path: Path) -> None:
    """`LATEST` used to be written with unsorted keys, and the job record by hand: both read."""
    store = CheckpointStore(str(tmp_path), "job")
    written = store.write_file(0, "counts", "m0", [(0, b"k", b"v")])
    manifest = store.commit(0, [written], partition_count=1)
    latest = tmp_path / "job" / "LATEST"
    latest.write_text(json.dumps({"snapshot_id": 0, "manifest": manifest.checksum}))
    record = first_record("0123456789abcdef", "job", "run1")
    (tmp_path / "job" / "JOB").write_text(json.dumps({"format": 1, **attrs.asdict(record)}, sort_keys=True))
    again = CheckpointStore(str(tmp_path), "job")
    assert again.latest() == manifest and again.read_record() == record


def test_a_damaged_record_names_its_file(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job")
    (tmp_path / "job" / "JOB").write_text('{"format": 1')
    with pytest.raises(CorruptSnapshotError, match=r"job/JOB: cannot be read"):
        store.read_record()
    (tmp_path / "job" / "LATEST").write_text("[]")
    with pytest.raises(CorruptSnapshotError, match=r"job/LATEST: cannot be read"):
        store.latest()

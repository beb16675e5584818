"""`runners/snapshot_io.py`: one naming scheme for snapshot files (read back for both kinds of
writer, and for names written before it), and snapshots written the way jetspark wrote them before
still restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from jetspark.checkpoint import CheckpointStore
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.engine.snapshot import encode_entry, entry_partition
from jetspark.runners.local import JobStatus, LocalRunner
from jetspark.runners.snapshot_io import FileName, member_files, read_snapshot
from tests.e2e.test_checkpoints import durable
from tests.e2e.test_snapshots import COUNT, EXPECTED, counting_dag, suspend_at_gate
from tests.gates import Gate


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (FileName(0), "v0000-all"),
        (FileName(12), "v0012-all"),
        (FileName(1, 2, 0), "v0001-m00002-a0"),
        (FileName(3, 41, 17), "v0003-m00041-a17"),
    ],
)
def test_a_name_reads_back_as_itself_with_or_without_the_store_suffix(name: FileName, text: str) -> None:
    assert str(name) == text
    assert FileName.parse(text) == name == FileName.parse(f"{text}.snap")


@pytest.mark.parametrize("text", ["count-m0.snap", "v1-mx-a0", "v0001-m00002", "manifest.json", ""])
def test_a_name_of_another_scheme_is_nobodys(text: str) -> None:
    assert FileName.parse(text) is None
    assert not FileName(1, 2).same_writer(text)


def test_a_members_files_are_those_of_its_vertex_from_any_of_its_attempts(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job")
    vertices = ["source", "counts"]
    files = [
        store.write_file(0, vertex, str(FileName.of(vertices, vertex, member, attempt)), [])
        for vertex, member, attempt in [
            ("counts", 0, 3),
            ("counts", 1, 3),
            ("source", 0, 3),
            ("counts", 0, 9),
        ]
    ]
    manifest = store.commit(0, files, DEFAULT_PARTITION_COUNT)
    mine = member_files(manifest, "counts", FileName.of(vertices, "counts", 0, 5))
    assert [f.name for f in mine] == ["v0001-m00000-a3.snap", "v0001-m00000-a9.snap"]
    assert member_files(manifest, "counts", FileName.of(vertices, "counts")) == [], "the local runner's"
    with pytest.raises(ValueError, match="vertex 'sink' saved snapshot entries but is not in the job's plan"):
        FileName.of(vertices, "sink", 0)


def test_a_local_snapshot_named_the_way_jetspark_named_them_before_restores(tmp_path: Path) -> None:
    """Before, the local runner numbered a snapshot's files by the vertex's place among the
    vertices that saved something, sorted by name: `v0000-all` was not the plan's vertex 0. A job
    resumes from such a snapshot: the manifest, not the name, says whose entries a file holds."""
    root = str(tmp_path)
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 3)
    job = LocalRunner(2).submit(counting_dag(gate=gate), durable(root))
    suspend_at_gate(job, gate)
    store = CheckpointStore(root, "counting")
    manifest = store.latest()
    assert manifest is not None
    taken = read_snapshot(store, manifest, DEFAULT_PARTITION_COUNT)
    # the same entries again, as snapshot n + 1 under the old names, re-encoded to be sure
    # nothing but the manifest tells the files apart
    old = []
    for index, vertex in enumerate(sorted(taken.data)):
        entries = [
            encode_entry(k, v, entry_partition(k, DEFAULT_PARTITION_COUNT)) for k, v in taken.entries(vertex)
        ]
        old.append(store.write_file(manifest.snapshot_id + 1, vertex, f"v{index:04d}-all", entries))
    store.commit(manifest.snapshot_id + 1, old, DEFAULT_PARTITION_COUNT, dict(manifest.extra))
    assert {(f.vertex, f.name) for f in old} != {(f.vertex, f.name) for f in manifest.files}, (
        "the old names swap the files of two vertices"
    )
    gate.open()
    resumed = LocalRunner(3).submit(counting_dag(gate=gate), durable(root))
    resumed.join(60)
    assert resumed.status is JobStatus.COMPLETED, resumed.error
    assert sorted(resumed.result("sink")) == EXPECTED

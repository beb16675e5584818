"""Files of both segment layouts in one store (`entries.py`): a snapshot an earlier release wrote
(layout 1, its manifest naming no layout) restores, whole or by partition, as the base of a chain
of layout 2 deltas too; the manifest names the layout of files written now."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from jetspark.checkpoint import CheckpointStore, CorruptSnapshotError, deltas
from jetspark.checkpoint import store as store_module
from jetspark.checkpoint.entries import MAGIC, MAGIC_2, Entry, encode
from jetspark.engine.snapshot import DELETED

FILLER: list[Entry] = [(7, b"x%02d" % i, b"1" * 10) for i in range(20)]
FULL: list[Entry] = [(-1, b"wm", b"5"), (3, b"a", b"1"), (3, b"b", b"1"), (5, b"c", b"1"), *FILLER]


def _write_as_earlier_releases(monkeypatch: pytest.MonkeyPatch, store: CheckpointStore) -> None:
    """Snapshot 0 written in layout 1, as a release before layout 2 wrote it."""
    with monkeypatch.context() as patched:
        patched.setattr(store_module, "encode", functools.partial(encode, layout=1))
        full = store.write_file(0, "counts", "v0001-m00000-a1", FULL)
    assert full.layout == 1 and "layout" not in full.to_json()
    store.commit(0, [full], 271, {"member_count": 1})


def test_a_layout_1_snapshot_restores_whole_and_by_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(str(tmp_path), "job")
    _write_as_earlier_releases(monkeypatch, store)
    path = tmp_path / "job" / "snapshots" / "0000000000"
    assert (path / "v0001-m00000-a1.snap").read_bytes().startswith(MAGIC)
    assert "layout" not in json.loads((path / "manifest.json").read_text())["files"][0]
    manifest = store.latest(verify=True)
    assert manifest is not None
    assert sorted(store.read(manifest, "counts")) == sorted(FULL)
    assert sorted(store.read(manifest, "counts", {-1, 3})) == sorted(FULL[:3])


def test_layout_2_deltas_apply_on_a_layout_1_full_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(str(tmp_path), "job", retain=1)
    _write_as_earlier_releases(monkeypatch, store)
    base = store.latest()
    assert base is not None
    chain = deltas.plan_chain(0, base.files[0])
    assert chain is not None
    delta = store.write_file(
        1, "counts", "v0001-m00000-a2", [(-1, b"wm", b"6"), (3, b"b", b"2"), (5, b"c", DELETED)], chain
    )
    assert delta.layout == 2 and delta.to_json()["layout"] == 2
    assert (
        (tmp_path / "job" / "snapshots" / "0000000001" / "v0001-m00000-a2.snap")
        .read_bytes()
        .startswith(MAGIC_2)
    )
    store.commit(1, [delta], 271, {"member_count": 1})
    manifest = store.latest(verify=True)
    assert manifest is not None
    assert manifest.files[0].chain[0][1].layout == 1  # the chain's file keeps its own layout
    expected = sorted([(-1, b"wm", b"6"), (3, b"a", b"1"), (3, b"b", b"2"), *FILLER])
    assert sorted(store.read(manifest, "counts")) == expected
    assert sorted(store.read(manifest, "counts", {3})) == [(3, b"a", b"1"), (3, b"b", b"2")]
    exported = store.export(manifest, "saved")  # an export writes the merged entries whole, in layout 2
    assert exported.files[0].layout == 2 and not exported.files[0].chain
    assert sorted(store.read(exported, "counts")) == expected


def test_a_manifest_naming_an_unknown_layout_is_corrupt(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job")
    file = store.write_file(0, "counts", "v0001-all", FULL)
    body = file.to_json()
    body["layout"] = 9
    store.write_manifest(store.snapshot_dir(0), 0, [], 271, None)
    with pytest.raises(ValueError, match="layout 9 is unknown"):
        store_module.SnapshotFile.from_json(body)
    manifest_path = tmp_path / "job" / "snapshots" / "0000000000" / "manifest.json"
    raw = json.loads(manifest_path.read_text())
    raw.pop("checksum")
    raw["files"] = [body]
    raw["checksum"] = store_module._body_checksum(raw)
    manifest_path.write_text(json.dumps(raw))
    with pytest.raises(CorruptSnapshotError, match="layout 9 is unknown"):
        store.load_manifest(store.snapshot_dir(0))

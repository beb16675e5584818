"""Incremental snapshot files (`checkpoint/deltas.py`): a delta applies on its chain at restore,
deletions remove keys, retention keeps what a chain needs, checks cover chain files, an export
stands alone, and the chain planner forces a full file often enough."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from jetspark.checkpoint import CheckpointStore, CorruptSnapshotError, deltas
from jetspark.checkpoint.entries import Entry
from jetspark.checkpoint.store import SnapshotFile
from jetspark.core import BroadcastKey
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.snapshot import DELETED, SnapshotEntry, entry_partition

FILLER: list[Entry] = [(7, b"x%02d" % i, b"1") for i in range(20)]  # deltas stay small beside it
FULL: list[Entry] = [(3, b"a", b"1"), (3, b"b", b"1"), (5, b"c", b"1"), *FILLER]
MERGED = sorted([(3, b"a", b"1"), (3, b"b", b"2"), (5, b"d", b"1"), *FILLER])


def commit_chain(store: CheckpointStore) -> SnapshotFile:
    """Snapshot 0: a full file; 1: b changed, c deleted; 2: d added. Returns snapshot 2's file."""
    full = store.write_file(0, "counts", "v0001-m00000-a1", FULL)
    store.commit(0, [full], 271, {"member_count": 1})
    chain1 = deltas.plan_chain(0, full)
    assert chain1 is not None
    one = store.write_file(1, "counts", "v0001-m00000-a2", [(3, b"b", b"2"), (5, b"c", DELETED)], chain1)
    store.commit(1, [one], 271, {"member_count": 1})
    chain2 = deltas.plan_chain(1, one)
    assert chain2 is not None and [i for i, _ in chain2] == [0, 1]
    two = store.write_file(2, "counts", "v0001-m00000-a3", [(5, b"d", b"1")], chain2)
    store.commit(2, [two], 271, {"member_count": 1})
    return two


def test_a_restore_reads_the_full_file_and_applies_each_delta_in_order(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job", retain=1)
    commit_chain(store)
    manifest = store.latest(verify=True)
    assert manifest is not None
    assert sorted(store.read(manifest, "counts")) == MERGED
    assert sorted(store.read(manifest, "counts", {5})) == [(5, b"d", b"1")]


def test_retention_keeps_the_snapshots_a_chain_applies_on(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job", retain=1)
    commit_chain(store)
    left = sorted(p.name for p in (tmp_path / "job" / "snapshots").iterdir())
    assert left == ["0000000000", "0000000001", "0000000002"]
    full = store.write_file(3, "counts", "v0001-m00000-a4", FULL)  # a full file ends the chain
    store.commit(3, [full], 271, {"member_count": 1})
    assert sorted(p.name for p in (tmp_path / "job" / "snapshots").iterdir()) == ["0000000003"]


def test_a_missing_or_damaged_chain_file_is_named(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job", retain=1)
    commit_chain(store)
    victim = tmp_path / "job" / "snapshots" / "0000000000" / "v0001-m00000-a1.snap"
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(CorruptSnapshotError, match=r"v0001-m00000-a1\.snap.*SHA-256"):
        store.latest(verify=True)
    victim.unlink()
    with pytest.raises(CorruptSnapshotError, match=r"v0001-m00000-a1\.snap: is missing"):
        store.latest()


def test_an_export_writes_an_incremental_file_whole(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job", retain=1)
    commit_chain(store)
    manifest = store.latest()
    assert manifest is not None
    exported = store.export(manifest, "saved")
    assert all(not f.chain for f in exported.files)
    store.discard()  # the chain's snapshots are gone; the export still reads
    assert sorted(store.read(exported, "counts")) == MERGED


def test_a_full_file_every_so_often_and_when_the_deltas_outgrow_the_state(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job")
    base = store.write_file(0, "v", "w", [(1, b"k%d" % i, b"v") for i in range(100)])
    assert deltas.plan_chain(0, None) is None
    chain = deltas.plan_chain(0, base)
    assert chain is not None
    for snapshot_id in range(1, deltas.FULL_EVERY - 1):
        small = store.write_file(snapshot_id, "v", f"w{snapshot_id}", [(1, b"k1", b"v2")], chain)
        chain = deltas.plan_chain(snapshot_id, small)
        assert chain is not None and len(chain) == snapshot_id + 1
    last = store.write_file(9, "v", "w9", [(1, b"k1", b"v3")], chain)
    assert deltas.plan_chain(9, last) is None, "FULL_EVERY files in a chain: the next is full"
    big = store.write_file(
        1, "v", "big", [(1, b"k%d" % i, b"w") for i in range(60)], deltas.plan_chain(0, base)
    )
    assert deltas.plan_chain(1, big) is None, "the delta outgrew half the full file"


def test_an_incremental_save_keeps_changed_keys_and_writes_deletions_for_the_rest() -> None:
    taken: list[SnapshotEntry] = []
    outbox = OutboxImpl([], "p", 1024, taken.extend, 271)
    outbox.allow_snapshot_offers("save_to_snapshot")
    outbox.save_only({"b", "gone"})
    for key in ("a", "b", "c"):
        assert outbox.offer_to_snapshot(key, 1)
    outbox.end_incremental()
    outbox.flush()
    decoded = sorted((pickle.loads(e.key), e.value and pickle.loads(e.value), e.partition) for e in taken)
    assert decoded == [("b", 1, entry_partition("b", 271)), ("gone", b"", entry_partition("gone", 271))]
    assert outbox.snapshot_partitions == {entry_partition("b", 271), entry_partition("gone", 271)}


def test_broadcast_entries_come_from_the_newest_file_alone_duplicates_included() -> None:
    # Two processors of a member save the same broadcast key (each its watermark): both stay,
    # and a delta's broadcast entries replace the chain's (a save writes all of them).
    full: list[Entry] = [(-1, b"wm", b"5"), (-1, b"wm", b"7"), (3, b"a", b"1")]
    delta: list[Entry] = [(-1, b"wm", b"9"), (-1, b"wm", b"8"), (3, b"b", b"1")]
    assert list(deltas.merge([full, delta])) == [
        (-1, b"wm", b"9"),
        (-1, b"wm", b"8"),
        (3, b"a", b"1"),
        (3, b"b", b"1"),
    ]
    assert list(deltas.merge([full, [(3, b"a", DELETED)]])) == [], "no broadcast entry saved last"


def test_an_incremental_save_keeps_every_broadcast_entry_and_deletes_none() -> None:
    taken: list[SnapshotEntry] = []
    outbox = OutboxImpl([], "p", 1024, taken.extend, 271)
    outbox.allow_snapshot_offers("save_to_snapshot")
    assert outbox.keys_to_save() is None, "a full save"
    outbox.save_only({"a", BroadcastKey("gone")})
    assert outbox.keys_to_save() == {"a", BroadcastKey("gone")}
    assert outbox.offer_to_snapshot(BroadcastKey("wm"), 3)
    assert outbox.offer_to_snapshot("b", 1)
    outbox.end_incremental()
    outbox.flush()
    assert sorted((pickle.loads(e.key), e.value) for e in taken if e.partition == -1) == [
        (BroadcastKey("wm"), pickle.dumps(3, pickle.HIGHEST_PROTOCOL))
    ]
    assert [pickle.loads(e.key) for e in taken if e.partition != -1] == ["a"], "a deleted, b unchanged"
    outbox.allow_snapshot_offers(None)
    assert outbox.keys_to_save() is None, "outside save_to_snapshot"


def test_a_file_records_how_many_entries_it_holds_a_blocks_counted_one_by_one(tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path), "job")
    from jetspark.core.snapshot_block import block_key, block_value

    block = (3, block_key(4), block_value([1, 2, 3, 4], ["a", "b", "c", "d"]))
    written = store.write_file(0, "counts", "v0001-m00000-a1", [block, (5, b"k", b"v")])
    assert written.keys == 5
    store.commit(0, [written], 271, {"member_count": 1})
    manifest = store.latest()
    assert manifest is not None and manifest.files[0].keys == 5, "the manifest keeps it"
    earlier = written.to_json()
    del earlier["keys"]
    assert SnapshotFile.from_json(earlier).keys is None, "a file of an earlier release: not known"


def full_file(keys: int | None) -> SnapshotFile:
    return SnapshotFile("f.snap", "counts", 100, "0" * 64, 1, (), (), 2, keys)


def test_a_large_states_next_save_is_limited_to_changing_half_its_keys_a_small_ones_is_not() -> None:
    large = deltas.LIMITED_FROM_KEYS * 4
    assert deltas.delta_limit(((0, full_file(large)),)) == int(deltas.MAX_DELTA_RATIO * large)
    assert deltas.delta_limit(((0, full_file(deltas.LIMITED_FROM_KEYS - 1)),)) is None
    assert deltas.delta_limit(((0, full_file(None)),)) is None

"""An entry offered to the snapshot is the same whatever path the outbox takes: the fast one
(an int or str key, a full save, nothing refused) or the checked one (any other key, an
incremental save, after a refusal) give the partition `entry_partition` computes and the key and
value pickled as `encode_entry` does, so files, routing and restores do not depend on it."""

from __future__ import annotations

import pickle
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark.core.errors import ProcessorContractError
from jetspark.core.watermark import BroadcastKey
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.snapshot import DELETED, SnapshotEntry, decode_entries, encode_entry, entry_partition

scalars = st.one_of(
    st.integers(),
    st.text(),
    st.binary(max_size=8),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
)
keys = st.one_of(
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.text(),
    scalars,
    st.tuples(scalars, scalars),
    st.text(max_size=3).map(BroadcastKey),
)
values = st.one_of(
    scalars, st.lists(scalars, max_size=3), st.dictionaries(st.integers(), scalars, max_size=3)
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(keys, values), max_size=30),
    st.sampled_from([1, 7, 271]),
    st.integers(1, 5),
    st.booleans(),
)
def test_offered_entries_are_those_encode_entry_makes(
    offers: list[tuple[Any, Any]], partition_count: int, batch_size: int, incremental: bool
) -> None:
    saved: list[SnapshotEntry] = []
    outbox = OutboxImpl([], "p", batch_size, saved.extend, partition_count)
    outbox.allow_snapshot_offers("save_to_snapshot")
    if incremental:  # every key named as changed: the checked path keeps them all
        outbox.save_only({key for key, _ in offers})
    for key, value in offers:
        while not outbox.offer_to_snapshot(key, value):  # refused when full: flush, offer again
            outbox.flush()
    outbox.flush()
    expected = [encode_entry(key, value, entry_partition(key, partition_count)) for key, value in offers]
    assert saved == expected
    assert all(type(entry) is SnapshotEntry for entry in saved)
    assert outbox.snapshot_partitions == {entry.partition for entry in expected}


def test_a_tuple_key_that_cannot_be_routed_is_refused_with_the_checked_paths_error() -> None:
    outbox = OutboxImpl([], "vertex 'v' processor #0", 4, lambda _entries: None)
    outbox.allow_snapshot_offers("save_to_snapshot")
    with pytest.raises(ProcessorContractError, match=r"snapshot key \('k', \['x'\]\) cannot be routed"):
        outbox.offer_to_snapshot(("k", ["x"]), 1)
    with pytest.raises(ProcessorContractError, match=r"snapshot value for key \('k', 1\) cannot be pickled"):
        outbox.offer_to_snapshot(("k", 1), threading.Lock())
    assert outbox.snapshot_buffer == [] and outbox.snapshot_partitions == set()


def _save_one_by_one(
    offers: list[tuple[Any, Any]], partition_count: int, changed: set[Any] | None
) -> list[SnapshotEntry]:
    saved: list[SnapshotEntry] = []
    outbox = OutboxImpl([], "p", 1024, saved.extend, partition_count)
    outbox.allow_snapshot_offers("save_to_snapshot")
    if changed is not None:
        outbox.save_only(changed)
    for key, value in offers:
        assert outbox.offer_to_snapshot(key, value)
    outbox.end_incremental()
    outbox.flush()
    return saved


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(keys, values), max_size=30),
    st.sampled_from([1, 7, 271]),
    st.integers(1, 5),
    st.one_of(st.none(), st.lists(keys, max_size=10)),
    st.booleans(),
)
def test_bulk_offers_save_what_offers_one_by_one_save(
    offers: list[tuple[Any, Any]],
    partition_count: int,
    batch_size: int,
    more_changed: list[Any] | None,
    split: bool,
) -> None:
    """The same entries, in the same order, the same deletions in an incremental save (a changed
    key not offered), whatever the bucket's bound (bulk offers take every entry)."""
    changed = None
    if more_changed is not None:  # incremental: some offered keys changed, others not; some removed
        hashable = [key for key, _ in offers[::2] if _hashable(key)]
        changed = set(hashable) | {key for key in more_changed if _hashable(key)}
    saved: list[SnapshotEntry] = []
    outbox = OutboxImpl([], "p", batch_size, saved.extend, partition_count)
    outbox.allow_snapshot_offers("save_to_snapshot")
    if changed is not None:
        outbox.save_only(set(changed))
    chunks = [offers[: len(offers) // 2], offers[len(offers) // 2 :]] if split else [offers]
    for chunk in chunks:
        keys_, values_ = [key for key, _ in chunk], [value for _, value in chunk]
        assert outbox.offer_all_to_snapshot(keys_, values_) == len(chunk)
        outbox.flush()
    outbox.end_incremental()
    outbox.flush()
    expected = _save_one_by_one(offers, partition_count, None if changed is None else set(changed))
    assert _by_partition(saved) == _by_partition(expected)
    assert all(type(entry) is SnapshotEntry for entry in saved)
    assert outbox.snapshot_partitions == {entry.partition for entry in expected}


def _by_partition(entries: list[SnapshotEntry]) -> tuple[dict[int, list[tuple[bytes, bytes]]], set[bytes]]:
    """Per partition, its entries in order, each key and value pickled alone (a block's opened);
    and the deletions' keys apart, in any order (`end_incremental` writes them last)."""
    ordered: dict[int, list[tuple[bytes, bytes]]] = {}
    deleted: set[bytes] = set()
    for entry in entries:
        if entry.value == DELETED:
            deleted.add(entry.key)
            continue
        run = ordered.setdefault(entry.partition, [])
        run.extend((_pickled(key), _pickled(value)) for key, value in decode_entries([entry]))
    return ordered, deleted


def _pickled(obj: Any) -> bytes:
    return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)


def _hashable(key: Any) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def test_bulk_offers_serialize_at_once_and_go_one_by_one_where_an_entry_is_bad() -> None:
    saved: list[SnapshotEntry] = []
    outbox = OutboxImpl([], "vertex 'v' processor #0", 4, saved.extend)
    outbox.allow_snapshot_offers("save_to_snapshot")
    state = {"count": 1}
    assert outbox.offer_all_to_snapshot(["a", "b"], [state, 2]) == 2
    state["count"] = 5  # changed right after the offer: the snapshot holds what was offered
    outbox.flush()
    assert sorted(decode_entries(saved), key=repr) == [("a", {"count": 1}), ("b", 2)]
    with pytest.raises(ProcessorContractError, match=r"snapshot value for key 'lock' cannot be pickled"):
        outbox.offer_all_to_snapshot(["ok", "lock"], [1, threading.Lock()])
    with pytest.raises(ProcessorContractError, match=r"snapshot key \['x'\] cannot be routed"):
        outbox.offer_all_to_snapshot([["x"]], [1])
    with pytest.raises(ValueError, match="2 keys but 1 values"):
        outbox.offer_all_to_snapshot(["a", "b"], [1])
    outbox.allow_snapshot_offers(None)
    with pytest.raises(ProcessorContractError, match=r"allowed only from save_to_snapshot"):
        outbox.offer_all_to_snapshot(["a"], [1])


def test_after_a_refused_single_offer_a_bulk_offer_must_begin_with_the_refused_entry() -> None:
    saved: list[SnapshotEntry] = []
    outbox = OutboxImpl([], "p", 1, saved.extend)
    outbox.allow_snapshot_offers("save_to_snapshot")
    assert outbox.offer_to_snapshot("a", 1) and not outbox.offer_to_snapshot("b", 2)
    with pytest.raises(ProcessorContractError):
        outbox.offer_all_to_snapshot(["c"], [3])  # in the same call as the refusal
    outbox.flush()
    with pytest.raises(ProcessorContractError):
        outbox.offer_all_to_snapshot(["c", "b"], [3, 2])  # not the refused entry first
    outbox.flush()
    # the refused entry first: while one is unfinished, taken one by one up to the bound
    assert outbox.offer_all_to_snapshot(["b", "c", "d"], [2, 3, 4]) == 1
    outbox.flush()
    assert outbox.offer_all_to_snapshot(["c", "d"], [3, 4]) == 1
    outbox.flush()
    assert outbox.offer_all_to_snapshot(["d"], [4]) == 1
    outbox.flush()
    # nothing unfinished: all taken at once, past the bound of single offers
    assert outbox.offer_all_to_snapshot(["e", "f", "g"], [5, 6, 7]) == 3
    outbox.flush()
    assert sorted(key for key, _ in decode_entries(saved)) == ["a", "b", "c", "d", "e", "f", "g"]

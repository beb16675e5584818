"""Blocks of snapshot entries (`core.snapshot_block`) mean what their entries one by one mean:
a restore decodes the same pairs, the merge of incremental files keeps the newest value per key
whichever way each layer was written, and a restore under another partition count routes each
entry of a block by its own key."""

from __future__ import annotations

import pickle
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark.checkpoint.deltas import merge
from jetspark.core.snapshot_block import entry_total, is_block
from jetspark.engine.snapshot import (
    DELETED,
    SnapshotEntry,
    decode_entries,
    encode_blocks,
    encode_entry,
    entry_partition,
    opened_entries,
    repartitioned,
)

keys = st.one_of(st.integers(-50, 50), st.text(max_size=3), st.tuples(st.integers(0, 3), st.text(max_size=2)))
values = st.one_of(st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=3))
GONE = object()
#: A layer: per key its new value, or GONE (a deletion); the first layer has no deletions.
layers = st.lists(
    st.dictionaries(keys, st.one_of(values, st.just(GONE)), max_size=12), min_size=1, max_size=4
)


def written(layer: dict[Any, Any], partition_count: int, in_blocks: bool) -> list[SnapshotEntry]:
    """A layer as a snapshot file holds it: its values in blocks or one by one, its deletions one
    by one (as `end_incremental` writes them)."""
    kept = [(key, value) for key, value in layer.items() if value is not GONE]
    partitions = [entry_partition(key, partition_count) for key, _ in kept]
    if in_blocks:
        entries = encode_blocks(partitions, [k for k, _ in kept], [v for _, v in kept])
    else:
        entries = [encode_entry(key, value, p) for (key, value), p in zip(kept, partitions)]
    for key, value in layer.items():
        if value is GONE:
            entries.append(
                encode_entry(key, 0, entry_partition(key, partition_count))._replace(value=DELETED)
            )
    return entries


@settings(max_examples=300, deadline=None)
@given(layers, st.lists(st.booleans(), min_size=4, max_size=4), st.sampled_from([1, 7, 271]))
def test_a_merge_keeps_the_newest_value_of_each_key_however_each_layer_was_written(
    given_layers: list[dict[Any, Any]], in_blocks: list[bool], partition_count: int
) -> None:
    given_layers[0] = {k: v for k, v in given_layers[0].items() if v is not GONE}  # a full file
    expected: dict[Any, Any] = {}
    for layer in given_layers:
        for key, value in layer.items():
            if value is GONE:
                expected.pop(key, None)
            else:
                expected[key] = value
    files = [written(layer, partition_count, blocks) for layer, blocks in zip(given_layers, in_blocks)]
    merged = [SnapshotEntry._make(entry) for entry in merge(files)]
    pairs = decode_entries(merged)
    assert len(pairs) == len(expected) == entry_total(merged)  # each key once
    assert {_pickled(k): v for k, v in pairs} == {_pickled(k): v for k, v in expected.items()}
    for entry in merged:  # every entry in its key's partition, no deletion left
        assert entry.value != DELETED
        assert {entry_partition(k, partition_count) for k, _ in decode_entries([entry])} == {entry.partition}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(keys, values, max_size=30), st.sampled_from([1, 7, 271]), st.sampled_from([1, 5, 271]))
def test_a_block_restored_under_another_partition_count_is_split_by_its_keys_new_partitions(
    state: dict[Any, Any], before: int, after: int
) -> None:
    blocks = encode_blocks([entry_partition(k, before) for k in state], list(state), list(state.values()))
    moved = [new for block in blocks for new in repartitioned(block, after)]
    assert all(is_block(entry.key) for entry in moved)
    assert sorted(map(_pickled, decode_entries(moved))) == sorted(map(_pickled, state.items()))
    for entry in moved:
        assert {entry_partition(k, after) for k, _ in decode_entries([entry])} == {entry.partition}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(keys, values, st.booleans()), max_size=20))
def test_decoding_opens_blocks_in_place_and_opened_entries_are_those_written_one_by_one(
    offers: list[tuple[Any, Any, bool]],
) -> None:
    entries: list[SnapshotEntry] = []
    for key, value, as_block in offers:
        partition = entry_partition(key, 271)
        entries += (
            encode_blocks([partition], [key], [value]) if as_block else [encode_entry(key, value, partition)]
        )
    assert decode_entries(entries) == [(key, value) for key, value, _ in offers]
    assert opened_entries(entries) == [encode_entry(k, v, entry_partition(k, 271)) for k, v, _ in offers]


def test_values_shared_in_the_state_are_shared_after_a_restore_of_one_block() -> None:
    shared: list[int] = [1]
    (block,) = encode_blocks([0, 0], ["a", "b"], [shared, shared])
    (key_a, first), (key_b, second) = decode_entries([block])
    assert (key_a, key_b) == ("a", "b")
    assert first is second and first == [1]
    assert pickle.loads(pickle.dumps(block)) == block  # a block travels as any entry does


def _pickled(obj: Any) -> bytes:
    return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)

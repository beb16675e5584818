"""An entry offered to the snapshot is the same whatever path the outbox takes: the fast one
(an int or str key, a full save, nothing refused) or the checked one (any other key, an
incremental save, after a refusal) give the partition `entry_partition` computes and the key and
value pickled as `encode_entry` does, so files, routing and restores do not depend on it."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark.core.errors import ProcessorContractError
from jetspark.core.watermark import BroadcastKey
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.snapshot import SnapshotEntry, encode_entry, entry_partition

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

"""Properties of the default partitioner over generated keys: range, determinism, equal keys."""

import copy
import pickle
import zlib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jetspark.core.partitioner import default_partitioner, key_bytes, stable_hash

scalar_keys = st.one_of(
    st.text(),
    st.binary(),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
)
keys = st.recursive(
    scalar_keys,
    lambda children: st.lists(children, max_size=4).map(tuple) | st.frozensets(children, max_size=4),
    max_leaves=12,
)
partition_counts = st.integers(min_value=1, max_value=10_000)


@given(keys, partition_counts)
def test_partition_is_in_range(key: Any, count: int) -> None:
    assert 0 <= default_partitioner(key, count) < count


@given(keys)
def test_stable_hash_is_unsigned_32_bit(key: Any) -> None:
    assert 0 <= stable_hash(key) < 2**32


@given(keys, partition_counts)
def test_partition_depends_only_on_the_key_value(key: Any, count: int) -> None:
    # A copy that went through pickle (as keys do between Spark stages) lands in the same partition.
    assert default_partitioner(key, count) == default_partitioner(copy.deepcopy(key), count)
    assert default_partitioner(key, count) == default_partitioner(pickle.loads(pickle.dumps(key)), count)


@given(keys)
def test_default_partitioner_agrees_with_stable_hash(key: Any) -> None:
    assert default_partitioner(key, 271) == stable_hash(key) % 271


@given(st.integers(min_value=-(2**53), max_value=2**53), partition_counts)
def test_int_and_float_of_equal_value_share_a_partition(n: int, count: int) -> None:
    assert default_partitioner(n, count) == default_partitioner(float(n), count)


@given(keys, keys)
def test_unequal_canonical_keys_have_unequal_bytes(a: Any, b: Any) -> None:
    # key_bytes is injective on canonical keys, up to numeric equality (2 and 2.0, 1 and True share bytes).
    if key_bytes(a) == key_bytes(b):
        assert normalize(a) == normalize(b)


@given(st.frozensets(st.integers() | st.text(), max_size=30), st.randoms(use_true_random=False))
def test_a_frozenset_built_in_any_order_has_the_same_bytes(elements: frozenset[Any], rng: Any) -> None:
    # Insertion order changes a set's slot layout (its iteration order) but not its value.
    shuffled = list(elements)
    rng.shuffle(shuffled)
    assert key_bytes(frozenset(shuffled)) == key_bytes(elements)
    assert key_bytes(frozenset(shuffled)) == key_bytes(pickle.loads(pickle.dumps(elements)))


@given(st.frozensets(st.integers() | st.text(), max_size=30))
def test_a_frozenset_is_encoded_by_its_sorted_elements(elements: frozenset[Any]) -> None:
    # What makes the bytes independent of the process's hash seed: no iteration order survives.
    parts = sorted(key_bytes(element) for element in elements)
    assert key_bytes(elements) == b"F" + b"".join(len(p).to_bytes(4, "big") + p for p in parts)


def normalize(key: Any) -> Any:
    if isinstance(key, tuple):
        return tuple(normalize(part) for part in key)
    if isinstance(key, frozenset):
        return ("frozenset", frozenset(normalize(part) for part in key))
    if isinstance(key, bool):
        return ("number", int(key))  # True == 1: they share their bytes
    if key is None:
        return (type(key).__name__, key)
    if isinstance(key, float) and key.is_integer():
        return ("number", int(key))
    if isinstance(key, (int, float)):
        return ("number", key)
    return (type(key).__name__, key)


@given(
    st.one_of(keys, st.integers(), st.text(), st.characters().map(lambda c: c + "\ud800")), partition_counts
)
def test_fast_paths_hash_the_canonical_bytes(key: Any, count: int) -> None:
    # The int and str fast paths skip key_bytes: they must give what hashing its bytes gives, so
    # partitions (and snapshots' segments) stay those of every earlier release.
    assert stable_hash(key) == zlib.crc32(key_bytes(key))
    assert default_partitioner(key, count) == zlib.crc32(key_bytes(key)) % count

"""jetspark.core.partitioner: canonical key bytes, stable hash, default partitioner."""

import json
import os
import pickle
import subprocess
import sys
import zlib
from fractions import Fraction
from pathlib import Path

import pytest

from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT, default_partitioner, key_bytes, stable_hash

REPO_ROOT = Path(__file__).resolve().parents[3]

# Keys of every canonical type, and nested tuples of them, as JSON-free Python literals.
SAMPLE_KEYS_SOURCE = """[
    "", "a", "word", "ü", "\\U0001f600", "\\ud800", b"", b"a", b"\\x00\\xff",
    0, 1, -1, 2, -7, 2**31, 2**70, -(2**70), 0.5, -0.0, 2.5, 1e300, float("inf"),
    None, True, False, (), ("a", 1), ("a", (b"b", None, 2.5)), (("x",),),
]"""
SAMPLE_KEYS = eval(SAMPLE_KEYS_SOURCE)


def partitions_in_subprocess(hash_seed: str) -> list[int]:
    script = (
        "import json\n"
        "from jetspark.core.partitioner import default_partitioner\n"
        f"keys = {SAMPLE_KEYS_SOURCE}\n"
        "print(json.dumps([default_partitioner(k, 271) for k in keys]))\n"
    )
    return run_in_subprocess(script, hash_seed)


def run_in_subprocess(script: str, hash_seed: str) -> list[int]:
    """Run `script` in a fresh interpreter with PYTHONHASHSEED=hash_seed; its stdout as JSON."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    return list(json.loads(out.stdout))


def test_default_partition_count_is_jets() -> None:
    assert DEFAULT_PARTITION_COUNT == 271


@pytest.mark.parametrize("hash_seed", ["0", "1", "4242"])
def test_partitions_are_the_same_in_another_process(hash_seed: str) -> None:
    here = [default_partitioner(key, 271) for key in SAMPLE_KEYS]
    assert partitions_in_subprocess(hash_seed) == here


def test_canonical_bytes_are_fixed() -> None:
    # The key -> partition mapping decides where snapshot entries are restored: it must not change.
    assert key_bytes("a") == b"sa"
    assert key_bytes(b"a") == b"ba"
    assert key_bytes(-12) == b"i-12"
    assert key_bytes(None) == b"N"
    assert key_bytes(True) == b"i1"
    assert key_bytes(False) == b"i0"
    assert key_bytes(("a", 1)) == b"t" + b"\x00\x00\x00\x02sa" + b"\x00\x00\x00\x02i1"
    assert key_bytes(0.5) == b"f\x3f\xe0\x00\x00\x00\x00\x00\x00"


def test_known_partitions() -> None:
    known = {"a": 47, "word": 74, b"a": 179, 0: 228, 1: 130, 2**70: 239, None: 33, ("a", 1): 164}
    assert {key: default_partitioner(key, 271) for key in known} == known


def test_stable_hash_is_crc32_of_key_bytes() -> None:
    for key in SAMPLE_KEYS:
        assert stable_hash(key) == zlib.crc32(key_bytes(key))
        assert 0 <= stable_hash(key) < 2**32


@pytest.mark.parametrize("count", [1, 2, 7, 271, 1000])
def test_partition_is_in_range(count: int) -> None:
    for key in SAMPLE_KEYS:
        assert 0 <= default_partitioner(key, count) < count


def test_default_partitioner_is_stable_hash_mod_count() -> None:
    for key in SAMPLE_KEYS:
        assert default_partitioner(key, 271) == stable_hash(key) % 271


@pytest.mark.parametrize(
    ("integral", "floating"), [(2, 2.0), (0, 0.0), (0, -0.0), (-5, -5.0), (2**60, 2.0**60)]
)
def test_int_and_equal_float_share_a_partition(integral: int, floating: float) -> None:
    assert integral == floating
    assert key_bytes(integral) == key_bytes(floating)
    assert default_partitioner(integral, 271) == default_partitioner(floating, 271)


def test_equal_tuples_with_int_and_float_share_a_partition() -> None:
    assert key_bytes(("k", 3)) == key_bytes(("k", 3.0))


def test_different_types_do_not_collide_in_bytes() -> None:
    assert len({key_bytes(k) for k in ["1", b"1", 1, 1.5, None, ("1",), (1,)]}) == 7


def test_str_and_bytes_are_told_apart() -> None:
    assert key_bytes("ab") != key_bytes(b"ab")


def test_tuple_elements_are_length_prefixed() -> None:
    assert key_bytes(("ab", "c")) != key_bytes(("a", "bc"))
    assert key_bytes((("a",), "b")) != key_bytes(("a", ("b",)))


def test_lone_surrogates_are_encodable() -> None:
    assert key_bytes("\ud800") == b"s\xed\xa0\x80"


def test_other_keys_fall_back_to_pickle_and_stay_deterministic() -> None:
    assert key_bytes(Fraction(1, 3)).startswith(b"p")
    assert key_bytes(Fraction(1, 3)) == key_bytes(Fraction(2, 6))


def test_the_pickle_fallback_is_protocol_4_whatever_pythons_default() -> None:
    # Another protocol (a newer Python's default) would change the bytes, so the partition, of
    # every pickled key: snapshots taken before the change would be restored to the wrong owners.
    key = Fraction(1, 3)
    assert key_bytes(key) == b"p" + pickle.dumps(key, protocol=4)
    assert key_bytes(key)[:3] == b"p\x80\x04"


# Frozensets iterate in the order of their elements' salted hashes, so their pickle differs between
# processes; enough string elements that two hash seeds practically never agree on the order.
FROZENSET_KEYS_SOURCE = """[
    frozenset("abcd"), frozenset(str(i) for i in range(20)), frozenset(), frozenset({b"x", "x", 1, 2.5}),
    frozenset({("a", 1), ("b", 2)}), ("k", frozenset("xyz")), frozenset({frozenset("ab"), frozenset("cd")}),
]"""


def frozenset_partitions_in_subprocess(hash_seed: str) -> list[int]:
    script = (
        "import json\n"
        "from jetspark.core.partitioner import default_partitioner\n"
        f"keys = {FROZENSET_KEYS_SOURCE}\n"
        "print(json.dumps([default_partitioner(k, 271) for k in keys]))\n"
    )
    return run_in_subprocess(script, hash_seed)


def test_frozenset_partitions_are_the_same_under_every_hash_seed() -> None:
    here = [default_partitioner(key, 271) for key in eval(FROZENSET_KEYS_SOURCE)]
    assert [frozenset_partitions_in_subprocess(seed) for seed in ("1", "2", "3")] == [here] * 3


def test_frozenset_bytes_are_its_sorted_element_bytes() -> None:
    assert key_bytes(frozenset()) == b"F"
    assert key_bytes(frozenset({"b", "a"})) == b"F" + b"\x00\x00\x00\x02sa" + b"\x00\x00\x00\x02sb"


def test_equal_frozensets_give_equal_bytes() -> None:
    words = [f"w{i}" for i in range(200)]
    built_forwards, built_backwards = frozenset(words), frozenset(reversed(words))
    shrunk = set(words + [f"gone{i}" for i in range(500)])  # deletions leave another slot layout
    shrunk.difference_update(f"gone{i}" for i in range(500))
    assert key_bytes(built_forwards) == key_bytes(built_backwards) == key_bytes(frozenset(shrunk))
    assert key_bytes(frozenset({True, 2.0})) == key_bytes(frozenset({1.0, 2}))


def test_frozensets_are_told_apart_from_tuples_and_by_their_elements() -> None:
    assert key_bytes(frozenset({"a"})) != key_bytes(("a",))
    assert key_bytes(frozenset({"ab", "c"})) != key_bytes(frozenset({"a", "bc"}))
    assert key_bytes(frozenset({frozenset({1})})) != key_bytes(frozenset({1}))


@pytest.mark.parametrize(
    ("key", "type_name"), [({"a", "b"}, "set"), ({"a": 1}, "dict"), ([1, 2], "list"), (("t", [1]), "list")]
)
def test_unhashable_keys_are_a_type_error_naming_the_type(key: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=f"unhashable type {type_name}: a key must be hashable"):
        default_partitioner(key, 271)


def test_bool_keys_share_the_partition_of_the_equal_int() -> None:
    """True == 1 and False == 0 group together in a dict, so they must partition together too."""
    from jetspark.core.partitioner import default_partitioner, key_bytes

    assert key_bytes(True) == key_bytes(1)
    assert key_bytes(False) == key_bytes(0)
    assert default_partitioner(True, 271) == default_partitioner(1, 271)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (0, 3544183485),
        (-7, 550557277),
        (10**20, 3426037536),
        ("", 453955339),
        ("user-1", 2399728255),
        ("é\ud800", 1076323954),
        (True, 2755183147),
        (2.0, 1026659217),
        (("a", 1), 2998185358),
        ((), 2238339752),
        (("user-7", -3), 1466848347),
        ((1, ("x", b"y"), None, 2.5, True), 3958870619),
        (("é\ud800", 10**20, frozenset({1, "a"})), 299231005),
    ],
)
def test_stable_hash_is_that_of_earlier_releases(key: object, expected: int) -> None:
    # Values computed by the release before the int, str and tuple fast paths: snapshots and partitions of
    # jobs written then must route the same now.
    assert stable_hash(key) == expected
    assert default_partitioner(key, 271) == expected % 271

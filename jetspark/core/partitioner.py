"""Stable key -> partition mapping, identical in every process and every Python run.

Python's `hash()` is salted per process, so it can never decide where a key goes. A key is first
turned into canonical bytes (`key_bytes`), then hashed with CRC-32 and reduced modulo the partition
count. The canonical form covers str, bytes, int, float, bool, None, and tuples and frozensets of
them; equal keys of these types get equal bytes (2 and 2.0, True and 1 too). A frozenset's
elements are encoded and sorted, since its iteration order follows the salted hashes.

An unhashable key (list, set, dict, bytearray, ...) raises TypeError: it could not be a dict key,
so no grouping could use it. Any other key falls back to pickle protocol 4. That is stable across
processes only when the object's pickle does not depend on hash order: a set or frozenset inside
it (a dataclass or a namedtuple holding a frozenset, say) is pickled in the order of its salted
hashes, so such a key's partition can differ between processes; make it a tuple or a frozenset of
canonical values first. Its class must also be importable under the same name everywhere. And
equal keys share a partition only if they pickle to equal bytes: a dict inside pickles in its
insertion order, a class with its own `__eq__` may pickle state that equality ignores, and a
subclass of another canonical type (a namedtuple, an `IntEnum`) is told apart from the equal plain
value.
"""

from __future__ import annotations

import pickle
import reprlib
import struct
import zlib
from typing import Any, Protocol

DEFAULT_PARTITION_COUNT = 271
_LENGTH = struct.Struct(">I")


def key_bytes(key: Any) -> bytes:
    """Canonical bytes of a key: equal keys of the supported types give equal bytes everywhere.

    Raises TypeError for an unhashable key; see the module docstring for keys that are pickled.
    """
    cls = key.__class__
    if cls is str:
        text: str = key
        return b"s" + text.encode("utf-8", "surrogatepass")
    if cls is int:
        return b"i" + str(key).encode()
    if cls is bytes:
        raw: bytes = key
        return b"b" + raw
    if cls is tuple:  # composite keys are common: their int and str parts without a call
        pieces = [b"t"]
        for part in key:
            kind = part.__class__
            if kind is str:
                encoded = b"s" + part.encode("utf-8", "surrogatepass")
            elif kind is int:
                encoded = b"i%d" % part
            else:
                encoded = key_bytes(part)
            pieces.append(_LENGTH.pack(len(encoded)))
            pieces.append(encoded)
        return b"".join(pieces)
    if cls is bool:
        return b"i1" if key else b"i0"  # True == 1 (and groups with it in a dict): same partition
    if key is None:
        return b"N"
    if cls is float:
        if key.is_integer():
            return b"i" + str(int(key)).encode()  # 2.0 == 2, so they must share a partition
        return b"f" + struct.pack(">d", key)
    if isinstance(key, frozenset):  # iteration order follows the salted hashes: sort the encodings
        parts = sorted(key_bytes(part) for part in key)
        return b"F" + b"".join(struct.pack(">I", len(p)) + p for p in parts)
    if cls.__hash__ is None:
        raise TypeError(
            f"partitioning key {reprlib.repr(key)} is of the unhashable type {cls.__qualname__}: a key "
            "must be hashable, as a dict key (use a tuple for a list, a frozenset for a set)"
        )
    return b"p" + pickle.dumps(key, protocol=4)


#: CRC-32 of the type tags of ints and strs: `crc32(tag + rest) == crc32(rest, crc32(tag))`, so
#: the two commonest keys hash without building their canonical bytes (a concatenation fewer).
INT_TAG_CRC = zlib.crc32(b"i")
STR_TAG_CRC = zlib.crc32(b"s")


def stable_hash(key: Any) -> int:
    """A non-negative 32-bit hash of `key_bytes(key)` (an int or a str without a call to it)."""
    cls = key.__class__
    if cls is int:
        return zlib.crc32(b"%d" % key, INT_TAG_CRC)
    if cls is str:
        return zlib.crc32(key.encode("utf-8", "surrogatepass"), STR_TAG_CRC)
    return zlib.crc32(key_bytes(key))


class Partitioner(Protocol):
    """Maps a partitioning key to a partition id in `[0, partition_count)`."""

    def __call__(self, key: Any, partition_count: int) -> int: ...


def whole_item(item: Any) -> Any:
    """The key function that keys an item by itself (Jet's `wholeItem()`).

    Word count partitions words by themselves: with this function the engine uses the items as
    their own keys and skips a Python call per item on a partitioned edge, and `aggregate_by_key`
    counts such keys in C."""
    return item


def default_partitioner(key: Any, partition_count: int) -> int:
    """The partitioner used when an edge names none: `stable_hash(key) % partition_count`."""
    cls = key.__class__  # stable_hash's fast paths, inlined: this runs once per item and entry
    if cls is int:
        return zlib.crc32(b"%d" % key, INT_TAG_CRC) % partition_count
    if cls is str:
        return zlib.crc32(key.encode("utf-8", "surrogatepass"), STR_TAG_CRC) % partition_count
    return zlib.crc32(key_bytes(key)) % partition_count

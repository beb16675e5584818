"""Blocks: many snapshot entries of one partition, pickled by one call.

A snapshot entry is `(partition, key bytes, value bytes)`, the key and the value pickled one by
one. A bulk save (`Outbox.offer_all_to_snapshot`) writes a *block* per partition instead: one
entry whose key bytes say it is a block and how many entries it holds, and whose value bytes are
one pickle of `(keys, values)`, two lists. One pickle call per partition instead of two per entry
makes a save and a restore several times cheaper, and a block travels, is stored, checked and
routed like any entry of its partition. Two places open blocks: the restore that decodes entries
for a processor, and the merge of incremental files, which keeps the newest entry per key.

A block's key bytes are `b"\\x00"` and its entry count (4 bytes, big-endian). No entry's key
bytes begin with a zero byte: they are a pickle, and every pickle the engine writes begins with
the PROTO opcode (0x80).

Values of one block that were one object when saved are one object when restored (pickle keeps
sharing within a call), as they were in the processor's state.
"""

from __future__ import annotations

import operator
import pickle
import struct
from collections.abc import Sequence
from itertools import repeat
from typing import Any

_TAG = b"\x00"
_COUNT = struct.Struct(">I")
_BLOCK_KEY_SIZE = 1 + _COUNT.size
_KEY_BYTES = operator.itemgetter(1)


def block_key(count: int) -> bytes:
    """The key bytes of a block of `count` entries."""
    return _TAG + _COUNT.pack(count)


def block_value(keys: list[Any], values: list[Any]) -> bytes:
    """The value bytes of a block: one pickle of both lists (raises pickle's error)."""
    return pickle.dumps((keys, values), pickle.HIGHEST_PROTOCOL)


def is_block(key_bytes: bytes) -> bool:
    return key_bytes[:1] == _TAG and len(key_bytes) == _BLOCK_KEY_SIZE


def any_blocks(entries: Sequence[tuple[int, bytes, bytes]]) -> bool:
    """Whether any of `entries` may be a block (a C-level pass over their key bytes): False
    means none is."""
    return any(map(bytes.startswith, map(_KEY_BYTES, entries), repeat(_TAG)))


def block_pairs(value_bytes: bytes) -> zip[tuple[Any, Any]]:
    """The (key, value) objects of a block, in order."""
    keys, values = pickle.loads(value_bytes)
    return zip(keys, values)


def block_count(key_bytes: bytes) -> int:
    """How many entries the block whose key bytes these are holds."""
    count: int = _COUNT.unpack_from(key_bytes, 1)[0]
    return count


def entry_total(entries: Sequence[tuple[int, bytes, bytes]]) -> int:
    """How many entries `entries` stand for: a block counts its entries."""
    if not any_blocks(entries):
        return len(entries)
    total = 0
    for entry in entries:
        key_bytes = entry[1]
        total += block_count(key_bytes) if is_block(key_bytes) else 1
    return total

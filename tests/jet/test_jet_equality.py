"""Jet's `EqualityTest` (hazelcast-jet-core, `impl.execution`), ported.

Jet checks `equals`/`hashCode` of `BroadcastKey` and `SnapshotBarrier` with EqualsVerifier
(`usingGetClass`: an instance of a subclass is never equal); here the same properties by hand:
equal fields make equal objects with equal hashes, any other field or class does not.
"""

from __future__ import annotations

from typing import Any

import pytest

from jetspark import BroadcastKey
from jetspark.engine.special import SnapshotBarrier


class _SubKey(BroadcastKey):
    pass


def _check(make: Any, same: tuple[Any, ...], others: list[tuple[Any, ...]], subclass: Any) -> None:
    a, b = make(*same), make(*same)
    assert a == b and hash(a) == hash(b)
    for fields in others:
        assert make(*fields) != a
    if subclass is not None:
        assert subclass(*same) != a
    assert a != object()


def test_EqualityTest__testEqualsAndHashCode_whenBroadcastKeyReference() -> None:
    _check(BroadcastKey, ("k",), [("other",), (1,)], _SubKey)


@pytest.mark.parametrize("terminal", [False, True])
def test_EqualityTest__testEqualsAndHashCode_whenSnapshotBarrier(terminal: bool) -> None:
    _check(SnapshotBarrier, (3, terminal), [(4, terminal), (3, not terminal)], None)

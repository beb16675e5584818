"""Jet's `ReadIListPTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.connector`), ported.

Jet's `readListP(name)` reads an `IList` in chunks of `ReadIListP.FETCH_SIZE` (16384) items and
emits them in list order; the test checks a list shorter and one longer than a chunk with
`TestSupport.verifyProcessor(...).disableSnapshots().disableLogging().expectOutput(data)`.
jetspark has no IList; its counterpart of a source reading a list it was given is
`from_iterable(items)`, which emits a `room()`-sized batch at a time. The same sizes and the same
`verify_processor` checks (one processor, so the whole list in order).
"""

from __future__ import annotations

from jetspark import processors as P
from jetspark.testing import verify_processor

FETCH_SIZE = 16384  # Jet's ReadIListP.FETCH_SIZE


def _test_reader(list_length: int) -> None:
    data = list(range(list_length))
    verify_processor(P.from_iterable(data)).disable_snapshots().disable_logging().expect_output(data)


def test_ReadIListPTest__when_sizeLessThanFetchSize_then_readAll() -> None:
    _test_reader(FETCH_SIZE // 2)


def test_ReadIListPTest__when_sizeMoreThanFetchSize_then_readAll() -> None:
    _test_reader(FETCH_SIZE * 3 // 2)

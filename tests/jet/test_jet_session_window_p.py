"""Jet's `SessionWindowPTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.processor`), ported.

Session timeout 10, counting, items `(key, timestamp)`. Each test is named after the Jet case it
ports; the scenarios and expected outputs are Jet's, the code ours against the public API
(`aggregate_to_session_window`, `verify_processor`). Jet's `@Repeat(10)` over random shuffles
becomes ten seeded shuffles. Jet's `@After` checks of the private maps have no public
counterpart and are left out.
"""

from __future__ import annotations

import operator
import random
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import Watermark
from jetspark.processors import WindowResult
from jetspark.testing import SAME_ITEMS_ANY_ORDER, verify_processor

SESSION_TIMEOUT = 10
key_of = operator.itemgetter(0)
ts_of = operator.itemgetter(1)


def verifier() -> Any:
    supplier = P.aggregate_to_session_window(key_of, ts_of, SESSION_TIMEOUT, P.counting())
    return verify_processor(supplier).partitioned_input(key_of)


def events_with_key(key: str) -> list[tuple[str, int]]:
    # session 1: [1, 22), session 2: [30, 50)
    return [(key, 1), (key, 6), (key, 12), (key, 30), (key, 35), (key, 40)]


def expected_sessions(key: str) -> list[WindowResult]:
    return [WindowResult(1, 22, key, 3), WindowResult(30, 50, key, 3)]


def assert_correctness(events: list[Any]) -> None:
    keys = list(dict.fromkeys(key_of(e) for e in events))
    expected: list[Any] = [s for key in keys for s in expected_sessions(key)]
    verifier().output_checker(SAME_ITEMS_ANY_ORDER).input([*events, Watermark(100)]).expect_output(
        [*expected, Watermark(100)]
    )


def test_SessionWindowPTest__when_orderedEventsWithOneKey() -> None:
    assert_correctness(events_with_key("a"))


@pytest.mark.parametrize("seed", range(10))
def test_SessionWindowPTest__when_disorderedEventsWithOneKey(seed: int) -> None:
    events = events_with_key("a")
    random.Random(seed).shuffle(events)
    assert_correctness(events)


def test_SessionWindowPTest__when_orderedEventsWithThreeKeys() -> None:
    assert_correctness(events_with_key("a") + events_with_key("b") + events_with_key("c"))


@pytest.mark.parametrize("seed", range(10))
def test_SessionWindowPTest__when_disorderedEVentsWithThreeKeys(seed: int) -> None:
    events = events_with_key("a") + events_with_key("b") + events_with_key("c")
    random.Random(seed).shuffle(events)
    assert_correctness(events)


def test_SessionWindowPTest__when_batchProcessing_then_flushEverything() -> None:
    # wm(25) closes the first session, not the second: complete() emits that one
    (
        verifier()
        .input([*events_with_key("a"), Watermark(25)])
        .expect_output([WindowResult(1, 22, "a", 3), Watermark(25), WindowResult(30, 50, "a", 3)])
    )


def test_SessionWindowPTest__when_lateEvent_then_dropped() -> None:
    verifier().input([Watermark(20), ("key", 19)]).expect_output([Watermark(20)])


def test_SessionWindowPTest__when_sessionsTouch_then_shouldNotBeMerged() -> None:
    (
        verifier()
        .input([("key", 0), ("key", 10)])
        .expect_output([WindowResult(0, 10, "key", 1), WindowResult(10, 20, "key", 1)])
    )

"""Jet's `HashJoinPTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.processor`), ported.

Jet's `HashJoinP` joins a probe stream with one or more build-side maps (key -> value, or a list
of values) as a left outer join. jetspark's `hash_join` joins one build side of items, keyed by
`build_key_fn`: a Jet map entry `k -> v` is the build item `(k, v)`, several values are several
items of one key, and a join with two build sides (Jet's tri-join, and the `ItemsByTag` variants)
is two `hash_join`s, the second probing with the first one's output: each stage is verified with
the kit, the second on the first one's expected output. Tags become the dict keys "tag0"/"tag1".
Each test is named after the Jet case it ports; the scenarios and outputs are Jet's.
"""

from __future__ import annotations

from typing import Any

from jetspark import processors as P
from jetspark.testing import verify_processor

PROBE_FIRST = [10, 1]  # Jet's priorities: the build side (lower value) is drained first


def _identity(value: Any) -> Any:
    return value


def _build_key(item: tuple[Any, Any]) -> Any:
    return item[0]


def _probe_of_pair(joined: tuple[Any, ...]) -> Any:
    return joined[0]


def _pair(probe: Any, build: tuple[Any, Any] | None) -> tuple[Any, Any]:
    return (probe, None if build is None else build[1])


def _triple(joined: tuple[Any, Any], build: tuple[Any, Any] | None) -> tuple[Any, Any, Any]:
    return (joined[0], joined[1], None if build is None else build[1])


def _tagged(joined: tuple[Any, Any], build: tuple[Any, Any] | None) -> tuple[Any, dict[str, Any]]:
    return (joined[0], {"tag0": joined[1], "tag1": None if build is None else build[1]})


def join(
    mapper: Any, probe: list[Any], build: list[Any], expected: list[Any], probe_key: Any = _identity
) -> None:
    (
        verify_processor(P.hash_join(probe_key, _build_key, mapper, outer=True))
        .inputs([probe, build], priorities=PROBE_FIRST)
        .disable_snapshots()
        .expect_output(expected)
    )


def two_builds(
    probe: list[Any], first: list[Any], second: list[Any], middle: list[Any], expected: list[Any], mapper: Any
) -> None:
    """Jet's join with two build sides: probe x first (outer) gives `middle`, then x second."""
    join(_pair, probe, first, middle)
    join(mapper, middle, second, expected, probe_key=_probe_of_pair)


def test_HashJoinPTest__test_oneToOneJoin_biJoin() -> None:
    join(_pair, [0, 1, 2], [(1, "a"), (2, "b")], [(0, None), (1, "a"), (2, "b")])


def test_HashJoinPTest__test_oneToNJoin_biJoin() -> None:
    def enriching_key(item: tuple[int, str]) -> int:
        return item[0] % 10

    (
        verify_processor(P.hash_join(_identity, enriching_key, _pair, outer=True))
        .inputs([[0, 1, 2], [(1, "a"), (2, "b"), (2, "c")]], priorities=PROBE_FIRST)
        .disable_snapshots()
        .expect_output([(0, None), (1, "a"), (2, "b"), (2, "c")])
    )


def test_HashJoinPTest__test_oneToOneJoin_triJoin() -> None:
    two_builds(
        [1, 2, 3],
        [(1, "a"), (3, "c")],
        [(1, "A"), (2, "B")],
        [(1, "a"), (2, None), (3, "c")],
        [(1, "a", "A"), (2, None, "B"), (3, "c", None)],
        _triple,
    )


ONE_TO_N_FIRST = [(1, "a"), (2, "b"), (2, "c"), (4, "d"), (4, "e")]
ONE_TO_N_SECOND = [(2, "A"), (3, "B"), (3, "C"), (4, "D"), (4, "E")]
ONE_TO_N_MIDDLE = [(0, None), (1, "a"), (2, "b"), (2, "c"), (3, None), (4, "d"), (4, "e")]
ONE_TO_N_TRIPLES = [
    (0, None, None),
    (1, "a", None),
    (2, "b", "A"),
    (2, "c", "A"),
    (3, None, "B"),
    (3, None, "C"),
    (4, "d", "D"),
    (4, "d", "E"),
    (4, "e", "D"),
    (4, "e", "E"),
]


def test_HashJoinPTest__test_oneToNJoin_triJoin() -> None:
    two_builds([0, 1, 2, 3, 4], ONE_TO_N_FIRST, ONE_TO_N_SECOND, ONE_TO_N_MIDDLE, ONE_TO_N_TRIPLES, _triple)


def tags(first: Any, second: Any) -> dict[str, Any]:
    return {"tag0": first, "tag1": second}


def test_HashJoinPTest__test_oneToOneJoin_withTags() -> None:
    two_builds(
        [1, 2, 3],
        [(1, "a"), (3, "c")],
        [(1, "A"), (2, "B")],
        [(1, "a"), (2, None), (3, "c")],
        [(1, tags("a", "A")), (2, tags(None, "B")), (3, tags("c", None))],
        _tagged,
    )


def test_HashJoinPTest__test_oneToNJoin_withTags() -> None:
    expected = [(t[0], tags(t[1], t[2])) for t in ONE_TO_N_TRIPLES]
    two_builds([0, 1, 2, 3, 4], ONE_TO_N_FIRST, ONE_TO_N_SECOND, ONE_TO_N_MIDDLE, expected, _tagged)


def test_HashJoinPTest__test_biJoin_mapToNull() -> None:
    def matched_only(probe: int, build: tuple[int, str] | None) -> Any:
        return None if build is None else (probe, build[1])  # None: nothing is emitted

    join(matched_only, [0, 1], [(1, "a")], [(1, "a")])


def test_HashJoinPTest__test_triJoin_mapToNull() -> None:
    def both_matched(joined: tuple[int, Any], build: tuple[int, str] | None) -> Any:
        return None if joined[1] is None or build is None else (joined[0], joined[1], build[1])

    two_builds(
        [0, 1, 2, 3],
        [(1, "a"), (2, "b")],
        [(1, "A"), (3, "C")],
        [(0, None), (1, "a"), (2, "b"), (3, None)],
        [(1, "a", "A")],
        both_matched,
    )


def test_HashJoinPTest__test_withTags_mapToNull() -> None:
    def first_matched(joined: tuple[int, Any], build: tuple[int, str] | None) -> Any:
        return None if joined[1] is None else _tagged(joined, build)

    two_builds(
        [1, 2, 3],
        [(1, "a"), (3, "c")],
        [(1, "A"), (2, "B")],
        [(1, "a"), (2, None), (3, "c")],
        [(1, tags("a", "A")), (3, tags("c", None))],
        first_matched,
    )


def test_HashJoinPTest__when_arrayListInItems_then_treatedAsAnItem() -> None:
    join(_pair, [0], [(0, ["a", "b"])], [(0, ["a", "b"])])

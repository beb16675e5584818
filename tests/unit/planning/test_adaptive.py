"""The adaptive parallelism deciders on the worked cases of FLIP-187 and of the reference notes."""

from __future__ import annotations

import pytest

from jetspark.core import JobConfig
from jetspark.core.config import AdaptiveParallelism, ParallelismDecider
from jetspark.planning.adaptive import (
    broadcast_ranges,
    decide_ranges,
    evenly_by_bytes_ranges,
    normalize,
    power_of_2_parallelism,
    subpartition_ranges,
)

MIB = 1024 * 1024
GIB = 1024 * MIB
TIB = 1024 * GIB


def flink(non_broadcast: int, broadcast: int) -> int:
    """The worked cases' settings: V = 1 GiB, min 3 (so 4), max 100 (so 64)."""
    return power_of_2_parallelism(
        non_broadcast, broadcast, bytes_per_task=GIB, min_parallelism=3, max_parallelism=100
    )


@pytest.mark.parametrize(
    ("non_broadcast", "broadcast", "expected"),
    [
        (8 * GIB + GIB // 4, 256 * MIB, 8),  # N0 = 11, rounds down
        (9 * GIB, 256 * MIB, 16),  # N0 = 12, halfway between 8 and 16: up
        (8 * GIB, GIB, 16),  # broadcast capped at V/2 = 512 MiB: 8 GiB / 512 MiB
        (512 * MIB, 256 * MIB, 4),  # N0 = 1, raised to the smallest power of 2 >= min
        (8 * GIB + TIB, 256 * MIB, 64),  # capped at the largest power of 2 <= max
    ],
)
def test_the_worked_cases_of_flip_187(non_broadcast: int, broadcast: int, expected: int) -> None:
    assert flink(non_broadcast, broadcast) == expected


def test_normalize_rounds_to_the_nearest_power_of_2() -> None:
    assert [normalize(p) for p in (0, 1, 2, 3, 5, 6, 7, 11, 12, 24, 25)] == [
        1,
        1,
        2,
        4,
        4,
        8,
        8,
        8,
        16,
        32,
        32,
    ]


@pytest.mark.parametrize(
    ("subpartitions", "consumers", "expected"),
    [
        (3, 1, [(0, 2)]),
        (3, 2, [(0, 0), (1, 2)]),
        (6, 4, [(0, 0), (1, 2), (3, 3), (4, 5)]),
    ],
)
def test_consumer_k_reads_a_contiguous_range(
    subpartitions: int, consumers: int, expected: list[tuple[int, int]]
) -> None:
    assert subpartition_ranges(subpartitions, consumers) == expected


def test_more_consumers_than_subpartitions_is_refused() -> None:
    with pytest.raises(ValueError, match="4 consumers cannot split 3 subpartitions"):
        subpartition_ranges(3, 4)


def test_a_broadcast_result_is_one_subpartition_read_by_all() -> None:
    assert broadcast_ranges(3) == [(0, 0), (0, 0), (0, 0)]
    settings = AdaptiveParallelism(bytes_per_task=100, min_parallelism=2, max_parallelism=8)
    assert decide_ranges([], settings, broadcast_bytes=10_000, broadcast=True) == [(0, 0), (0, 0)]


def test_a_range_without_a_power_of_2_is_a_configuration_error() -> None:
    with pytest.raises(
        ValueError, match=r"no power of 2 lies in \[min_parallelism, max_parallelism\] = \[5, 7\]"
    ):
        AdaptiveParallelism(min_parallelism=5, max_parallelism=7)
    # the evenly-by-bytes decider has no such rule
    AdaptiveParallelism(decider=ParallelismDecider.EVENLY_BY_BYTES, min_parallelism=5, max_parallelism=7)


def test_bad_settings_name_the_option() -> None:
    with pytest.raises(ValueError, match=r"AdaptiveParallelism\.bytes_per_task must be an int >= 1"):
        AdaptiveParallelism(bytes_per_task=0)
    with pytest.raises(ValueError, match="min_parallelism 8 is above max_parallelism 4"):
        AdaptiveParallelism(min_parallelism=8, max_parallelism=4)


def test_adaptive_parallelism_is_off_by_default() -> None:
    assert JobConfig().adaptive_parallelism is None


def test_power_of_2_splits_evenly_by_count_whatever_the_skew() -> None:
    settings = AdaptiveParallelism(bytes_per_task=100, min_parallelism=1, max_parallelism=8)
    sizes = [390, 10, 0, 0, 0, 0, 0, 0]  # 400 bytes: 4 consumers of two subpartitions each
    assert decide_ranges(sizes, settings) == [(0, 1), (2, 3), (4, 5), (6, 7)]


def test_evenly_by_bytes_gives_a_skewed_subpartition_a_range_of_its_own() -> None:
    settings = AdaptiveParallelism(
        decider=ParallelismDecider.EVENLY_BY_BYTES, bytes_per_task=100, min_parallelism=1, max_parallelism=8
    )
    sizes = [390, 10, 30, 30, 30, 30, 30, 30]
    assert decide_ranges(sizes, settings) == [(0, 0), (1, 4), (5, 7)]


def test_evenly_by_bytes_raises_the_limit_to_stay_under_max() -> None:
    ranges = evenly_by_bytes_ranges([50] * 10, bytes_per_task=50, min_parallelism=1, max_parallelism=3)
    assert ranges == [(0, 3), (4, 7), (8, 9)]


def test_evenly_by_bytes_lowers_the_limit_to_reach_min() -> None:
    ranges = evenly_by_bytes_ranges([1] * 8, bytes_per_task=1000, min_parallelism=4, max_parallelism=8)
    assert ranges == [(0, 1), (2, 3), (4, 5), (6, 7)]

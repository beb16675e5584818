"""Properties of the adaptive parallelism deciders (planning/adaptive.py), for any bytes and
settings: every subpartition is read exactly once, ranges are contiguous and in order, N <= P,
and N respects [min, max] as far as the subpartition count allows."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from jetspark.core.config import AdaptiveParallelism, ParallelismDecider
from jetspark.planning.adaptive import decide_ranges, subpartition_ranges

sizes_lists = st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=300)


@st.composite
def settings(draw: st.DrawFn) -> AdaptiveParallelism:
    decider = draw(st.sampled_from(ParallelismDecider))
    low = draw(st.integers(min_value=1, max_value=64))
    high = draw(st.integers(min_value=low, max_value=300))
    if decider is ParallelismDecider.POWER_OF_2:
        high = max(high, 1 << (low - 1).bit_length())  # [low, high] must hold a power of 2
    return AdaptiveParallelism(
        decider=decider,
        bytes_per_task=draw(st.integers(min_value=1, max_value=10**12)),
        min_parallelism=low,
        max_parallelism=high,
    )


def assert_exact_cover(ranges: list[tuple[int, int]], subpartitions: int) -> None:
    assert 1 <= len(ranges) <= subpartitions
    assert ranges[0][0] == 0 and ranges[-1][1] == subpartitions - 1
    for (_, end), (start, _) in itertools.pairwise(ranges):
        assert start == end + 1, ranges  # contiguous, in order, no gap, no overlap
    assert all(first <= last for first, last in ranges)


@given(st.integers(min_value=1, max_value=2000), st.data())
def test_even_ranges_cover_every_subpartition_once(subpartitions: int, data: st.DataObject) -> None:
    consumers = data.draw(st.integers(min_value=1, max_value=subpartitions))
    ranges = subpartition_ranges(subpartitions, consumers)
    assert len(ranges) == consumers
    assert_exact_cover(ranges, subpartitions)
    lengths = [last - first + 1 for first, last in ranges]
    assert max(lengths) - min(lengths) <= 1


@given(sizes_lists, settings(), st.integers(min_value=0, max_value=10**12))
def test_decided_ranges_cover_every_subpartition_once(
    sizes: list[int], config: AdaptiveParallelism, broadcast_bytes: int
) -> None:
    ranges = decide_ranges(sizes, config, broadcast_bytes)
    assert_exact_cover(ranges, len(sizes))
    assert len(ranges) <= config.max_parallelism
    assert len(ranges) >= min(config.min_parallelism, len(sizes))


@given(sizes_lists, st.integers(min_value=1, max_value=10**6))
def test_evenly_by_bytes_never_puts_more_than_the_limit_in_a_shared_range(
    sizes: list[int], limit: int
) -> None:
    config = AdaptiveParallelism(
        decider=ParallelismDecider.EVENLY_BY_BYTES,
        bytes_per_task=limit,
        min_parallelism=1,
        max_parallelism=10**6,
    )
    for first, last in decide_ranges(sizes, config):
        if last > first:  # a range of several subpartitions stays within the limit
            assert sum(sizes[first : last + 1]) <= limit

"""Adaptive batch parallelism: how many members a stage gets, and which subpartitions each reads.

Pure functions, no Spark. The producers of a distributed edge write P subpartitions (one per
member of the job's plan); once they have finished, the consumer's member count N is decided from
the bytes they wrote, and consumer k of N reads a contiguous range of subpartitions. Two deciders
(`AdaptiveParallelism.decider`):

- `POWER_OF_2` (Flink's FLIP-187): broadcast bytes count at most half of `bytes_per_task` (V);
  N0 = ceil(non-broadcast bytes / (V - broadcast)); N0 is rounded to the nearest power of 2 and
  clamped to [round_up_pow2(min), round_down_pow2(max)]; consumer k reads
  [floor(P*k/N), floor(P*(k+1)/N) - 1], so ranges differ in length by at most one subpartition,
  whatever their bytes.
- `EVENLY_BY_BYTES` (later Flink): contiguous subpartitions packed greedily up to a byte limit, the
  limit moved until the count lies in [min, max]: a skewed subpartition gets a range of its own.

Invariants of every result (tested by hypothesis): each subpartition is read exactly once, the
ranges are contiguous and in order, and N <= P. A broadcast result has one subpartition, which
every consumer reads: range (0, 0).
"""

from __future__ import annotations

from collections.abc import Sequence

from jetspark.core.config import AdaptiveParallelism, ParallelismDecider

#: A consumer's subpartitions, first and last inclusive.
Range = tuple[int, int]


def round_down_to_power_of_2(value: int) -> int:
    """The largest power of 2 <= value (value >= 1)."""
    return 1 << (value.bit_length() - 1)


def round_up_to_power_of_2(value: int) -> int:
    """The smallest power of 2 >= value (value >= 1)."""
    return 1 << (value - 1).bit_length()


def normalize(parallelism: int) -> int:
    """`parallelism` rounded to the nearest power of 2; a tie between the two goes up."""
    parallelism = max(parallelism, 1)
    down, up = round_down_to_power_of_2(parallelism), round_up_to_power_of_2(parallelism)
    return down if parallelism < (up + down) / 2 else up


def power_of_2_parallelism(
    non_broadcast_bytes: int,
    broadcast_bytes: int,
    *,
    bytes_per_task: int,
    min_parallelism: int,
    max_parallelism: int,
) -> int:
    """FLIP-187's member count for a stage consuming these bytes (see the module docstring)."""
    low, high = round_up_to_power_of_2(min_parallelism), round_down_to_power_of_2(max_parallelism)
    if low > high:
        raise ValueError(
            f"adaptive parallelism: no power of 2 lies in [{min_parallelism}, {max_parallelism}]"
        )
    broadcast = min(broadcast_bytes, -(-bytes_per_task // 2))
    per_task = max(bytes_per_task - broadcast, 1)
    initial = -(-non_broadcast_bytes // per_task)
    return min(max(normalize(initial), low), high)


def subpartition_ranges(subpartitions: int, consumers: int) -> list[Range]:
    """Consumer k of `consumers` reads [floor(P*k/N), floor(P*(k+1)/N) - 1]; needs N <= P."""
    if not 1 <= consumers <= subpartitions:
        raise ValueError(
            f"{consumers} consumers cannot split {subpartitions} subpartitions (need 1 <= N <= P)"
        )
    p, n = subpartitions, consumers
    return [(p * k // n, p * (k + 1) // n - 1) for k in range(n)]


def broadcast_ranges(consumers: int) -> list[Range]:
    """A broadcast result is one subpartition holding everything; every consumer reads it."""
    return [(0, 0)] * consumers


def pack_by_bytes(sizes: Sequence[int], limit: int) -> list[Range]:
    """Contiguous ranges, each closed when the next subpartition would take it over `limit`
    bytes (a subpartition bigger than `limit` gets a range of its own)."""
    ranges: list[Range] = []
    start, total = 0, 0
    for index, size in enumerate(sizes):
        if index > start and total + size > limit:
            ranges.append((start, index - 1))
            start, total = index, 0
        total += size
    if sizes:
        ranges.append((start, len(sizes) - 1))
    return ranges


def evenly_by_bytes_ranges(
    sizes: Sequence[int], *, bytes_per_task: int, min_parallelism: int, max_parallelism: int
) -> list[Range]:
    """Ranges packed by bytes, about `bytes_per_task` each, their count clamped to
    [min, max] (and to the subpartition count). The count of `pack_by_bytes` never grows with
    the limit, so the clamping limit is found by bisection."""
    if not sizes:
        raise ValueError("adaptive parallelism: no subpartitions to split")
    low, high = min(min_parallelism, len(sizes)), min(max_parallelism, len(sizes))
    ranges = pack_by_bytes(sizes, bytes_per_task)
    if len(ranges) > high:  # too many: the smallest limit giving at most `high`
        lo, hi = bytes_per_task, sum(sizes)
        while lo < hi:
            mid = (lo + hi) // 2
            if len(pack_by_bytes(sizes, mid)) <= high:
                hi = mid
            else:
                lo = mid + 1
        ranges = pack_by_bytes(sizes, lo)
    elif len(ranges) < low:  # too few: the largest limit giving at least `low`
        lo, hi = 0, bytes_per_task
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if len(pack_by_bytes(sizes, mid)) >= low:
                lo = mid
            else:
                hi = mid - 1
        ranges = pack_by_bytes(sizes, lo)
        if not low <= len(ranges) <= high:  # zero-byte runs, or a jump over [low, high]: by count
            ranges = subpartition_ranges(len(sizes), low)
    return ranges


def decide_ranges(
    sizes: Sequence[int], settings: AdaptiveParallelism, broadcast_bytes: int = 0, broadcast: bool = False
) -> list[Range]:
    """The subpartition range of each consumer of a stage, from the bytes per subpartition its
    (non-broadcast) producers wrote and the bytes of its broadcast inputs. With `broadcast`, the
    stage's only input is a broadcast result: N from its bytes, every consumer reading (0, 0)."""
    if broadcast:
        n = power_of_2_parallelism(
            0,
            broadcast_bytes,
            bytes_per_task=settings.bytes_per_task,
            min_parallelism=settings.min_parallelism,
            max_parallelism=settings.max_parallelism,
        )
        return broadcast_ranges(n)
    if settings.decider is ParallelismDecider.EVENLY_BY_BYTES:
        limit = settings.bytes_per_task - min(broadcast_bytes, settings.bytes_per_task // 2)
        return evenly_by_bytes_ranges(
            sizes,
            bytes_per_task=max(limit, 1),
            min_parallelism=settings.min_parallelism,
            max_parallelism=settings.max_parallelism,
        )
    n = power_of_2_parallelism(
        sum(sizes),
        broadcast_bytes,
        bytes_per_task=settings.bytes_per_task,
        min_parallelism=settings.min_parallelism,
        max_parallelism=settings.max_parallelism,
    )
    return subpartition_ranges(len(sizes), min(n, len(sizes)))

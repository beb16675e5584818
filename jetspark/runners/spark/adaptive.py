"""Adaptive batch parallelism on Spark: a stage's task count decided from the bytes it receives.

The plan keeps its members; what adapts is how many Spark tasks run them. A stage after a
shuffle is built in three steps, on the driver, in the job's thread:

1. The shuffle into the stage is written with one Spark partition per member of the stage (the
   subpartitions of FLIP-187) plus one that stays empty. On its way to the shuffle every record is
   measured in the producing task: its payload bytes are added, per target partition and split
   into broadcast and other edges, to a Spark accumulator.
2. A Spark job reads the empty partition alone. To serve it Spark runs every producing task, so
   the shuffle is then written and the accumulator holds the bytes of each subpartition.
3. The pure deciders (`planning.adaptive.decide_ranges`) turn the bytes into contiguous ranges of
   subpartitions; task k of the stage reads range k: Spark's `PartitionPruningRDD` keeps the
   range's partitions of the shuffle and `coalesce(1)` makes them one partition, and the union of
   the ranges is the stage's input, task k running the members of range k. The final job reuses
   the written shuffle (same shuffle dependency), so nothing runs twice.

Source stages (no shuffle into them) run on `AdaptiveParallelism.source_parallelism` tasks (the
Spark default parallelism when unset), each running an even range of members. Stages that read a
`from_rdd` source keep one task per member (the RDD's partitions are bound to members).

Broadcast bytes: each member of the stage receives its own copy, so a stage's broadcast bytes are
the largest copy one member receives; when all of its input is broadcast, the decided count
splits the members evenly.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import attrs

from jetspark.core.config import AdaptiveParallelism
from jetspark.core.edge import RoutingPolicy
from jetspark.planning.adaptive import Range, decide_ranges, subpartition_ranges
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners.spark.partition_pruning import only_partitions
from jetspark.runners.spark.records import DataRecord, SourceRecord
from jetspark.runners.spark.shuffle_union import shuffled_union


@attrs.frozen
class StageDecision:
    """What adaptive parallelism decided for one stage, for `SparkJob.adaptive_decisions`."""

    stage: int
    #: Bytes each subpartition (member of the stage, in order) received: other edges, broadcast.
    sizes: tuple[int, ...]
    broadcast_sizes: tuple[int, ...]
    ranges: tuple[Range, ...]

    @property
    def task_bytes(self) -> tuple[int, ...]:
        """The input bytes of each task (the broadcast copies it reads included)."""
        both = [a + b for a, b in zip(self.sizes, self.broadcast_sizes)]
        return tuple(sum(both[first : last + 1]) for first, last in self.ranges)


def _add_lists(first: list[int], second: list[int]) -> list[int]:
    for i, value in enumerate(second):
        first[i] += value
    return first


class _SizesParam:
    """Accumulator parameter: element-wise sums of two lists of `length` ints."""

    def __init__(self, length: int) -> None:
        self.length = length

    def zero(self, value: list[int]) -> list[int]:
        return [0] * self.length

    def addInPlace(self, first: list[int], second: list[int]) -> list[int]:  # Spark calls it so
        return _add_lists(first, second)


def _measured(
    sizes: Any, tasks: dict[int, int], broadcast_edges: frozenset[int], records: Iterable[Any]
) -> Iterator[Any]:
    """Pass `records` on, adding their payload bytes per target task to the accumulator `sizes`
    (the first half of its list for other edges, the second for broadcast edges)."""
    count = len(tasks)
    local = [0] * (2 * count)
    for pair in records:
        member, record = pair
        kind = type(record)
        if kind is DataRecord or kind is SourceRecord:
            task = tasks.get(member, member % count)
            offset = count if kind is DataRecord and record.edge in broadcast_edges else 0
            local[offset + task] += len(record.payload)
        yield pair
    sizes.add(local)


def _nothing(records: Iterable[Any]) -> list[Any]:
    return []


def measure_and_write(
    sc: Any, feeders: Sequence[Any], plan: ExecutionPlan, live: Sequence[int], to_task: Any
) -> tuple[Any, list[int], list[int]]:
    """Write the shuffle of the records of `feeders` into a stage running members `live` (steps 1
    and 2 of the module docstring); return it with the bytes of each member's subpartition
    (other, broadcast)."""
    count = len(live)
    sizes = sc.accumulator([0] * (2 * count), _SizesParam(2 * count))
    tasks = {m: i for i, m in enumerate(live)}
    broadcast = frozenset(e.index for e in plan.edges if e.routing is RoutingPolicy.BROADCAST)
    measure = functools.partial(_measured, sizes, tasks, broadcast)
    # partition `count` stays empty
    shuffled = shuffled_union(sc, feeders, count + 1, to_task, lambda rdd: rdd.mapPartitions(measure))
    sc.runJob(shuffled, _nothing, [count])
    total: list[int] = list(sizes.value)
    return shuffled, total[:count], total[count:]


def decide(
    stage: int, sizes: list[int], broadcast_sizes: list[int], settings: AdaptiveParallelism
) -> StageDecision:
    """Step 3's decision: the subpartition ranges of the stage's tasks."""
    broadcast_bytes = max(broadcast_sizes, default=0)
    if not any(sizes) and broadcast_bytes:  # all input broadcast: decide the count, split evenly
        count = len(decide_ranges([], settings, broadcast_bytes, broadcast=True))
        ranges = subpartition_ranges(len(sizes), min(count, len(sizes)))
    else:
        ranges = decide_ranges(sizes, settings, broadcast_bytes)
    return StageDecision(stage, tuple(sizes), tuple(broadcast_sizes), tuple(ranges))


def read_ranges(sc: Any, shuffled: Any, ranges: Sequence[Range]) -> Any:
    """An RDD whose partition k holds the partitions `ranges[k]` of `shuffled`, in order."""
    return sc.union([only_partitions(shuffled, range(first, last + 1)).coalesce(1) for first, last in ranges])


def source_ranges(
    live: Sequence[int], settings: AdaptiveParallelism, default_parallelism: int
) -> list[Range]:
    """The member ranges of a source stage's tasks: an even split over the source parallelism."""
    tasks = settings.source_parallelism or default_parallelism
    return subpartition_ranges(len(live), min(tasks, len(live)))

"""A stage's input: the records of its feeding RDDs, shuffled to its tasks, in one Python pass.

PySpark's `partitionBy` keys and batches the records in a Python function (`add_shuffle_key`)
that it pipelines into the Python worker making them, when it is called on an RDD of Python
functions. Called on a union (`sc.union(...)`, a JVM RDD), it cannot be pipelined: every task of
the feeding stage then runs a second Python worker, which unpickles each record the first one
pickled, keys it and pickles it again, and the task pays a second worker's start and end
(measured: 30-50 ms per task on local[2], which an epoch pays at each stage boundary).

So each feeding RDD is shuffled on its own, with the same partitioner object, and the shuffled
RDDs are joined with a union: Spark makes a union of RDDs with one partitioner a
`PartitionerAwareUnionRDD` whose partition i is partition i of each, which is what the one
shuffle of the union gave. (Should a Spark version not do so, the union is shuffled as one.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def shuffled_union(
    sc: Any,
    feeders: Sequence[Any],
    partitions: int,
    to_partition: Callable[[Any], int],
    prepare: Callable[[Any], Any] | None = None,
) -> Any:
    """The records of `feeders` (PySpark RDDs of `(key, record)` pairs) in `partitions`
    partitions, a record in partition `to_partition(key)`; `prepare` (an RDD -> RDD step, run in
    the same Python pass) is applied to each feeder first."""
    if not feeders:
        raise ValueError("a shuffle needs at least one feeding RDD")
    steps = [feeder if prepare is None else prepare(feeder) for feeder in feeders]
    shuffled = [step.partitionBy(partitions, to_partition) for step in steps]
    if len(shuffled) == 1:
        return shuffled[0]
    union = sc.union(shuffled)
    if union.getNumPartitions() == partitions:
        return union
    # Spark concatenated the partitions (it saw different partitioners): one shuffle of the union
    return sc.union(steps).partitionBy(partitions, to_partition)

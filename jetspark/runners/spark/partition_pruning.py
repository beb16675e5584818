"""Reading some partitions of an RDD without computing the others.

Spark's `PartitionPruningRDD` (a developer API of Spark core) launches tasks only for the
partitions its filter keeps; PySpark does not wrap it, so it is made through the JVM gateway, with
a Scala `Set[Int]` as the filter (a Scala set is a function to Boolean). Partition i of the result
is the i-th kept partition, in order. Used by `from_rdd(keys=...)` (partition pruning) and by
adaptive parallelism (a task reading a range of a shuffle's partitions).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def only_partitions(rdd: Any, partitions: Iterable[int]) -> Any:
    """`rdd` cut to `partitions` (kept in index order)."""
    from pyspark.rdd import RDD

    sc = rdd.context
    jvm = sc._jvm
    indexes = jvm.java.util.ArrayList()
    for partition in partitions:
        indexes.add(partition)
    wanted = jvm.scala.collection.JavaConverters.asScalaBufferConverter(indexes).asScala().toSet()
    pruned = jvm.org.apache.spark.rdd.PartitionPruningRDD.create(rdd._jrdd.rdd(), wanted)
    return RDD(pruned.toJavaRDD(), sc, rdd._jrdd_deserializer)

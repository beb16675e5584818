"""`shuffled_union`: a stage's input shuffled from its feeding RDDs in one Python pass each."""

from __future__ import annotations

import re
from typing import Any

import pytest

from jetspark.runners.spark.shuffle_union import shuffled_union


def _to_partition(key: int) -> int:
    return key % 3


def _contents(rdd: Any) -> list[list[tuple[int, str]]]:
    return [sorted(part) for part in rdd.glom().collect()]


def _keying_over_a_union(rdd: Any) -> list[bool]:
    """For each shuffle under `rdd` (a `PairwiseRDD` in Spark's lineage), whether its keying
    Python RDD reads a union (so that a task runs a second Python pass over the records the
    feeders' pass made) rather than being that pass."""
    lines = [re.sub(r"^[\s|+\-()0-9]*", "", line) for line in rdd.toDebugString().decode().splitlines()]
    found = []
    for i, line in enumerate(lines):
        if line.startswith("PairwiseRDD"):
            assert lines[i + 1].startswith("PythonRDD"), lines[i + 1]
            found.append(lines[i + 2].startswith("UnionRDD"))
    return found


def test_one_feeder_is_partitioned_by_the_function(spark: Any) -> None:
    sc = spark.sparkContext
    feeder = sc.parallelize([(k, f"r{k}") for k in range(10)], 2)
    shuffled = shuffled_union(sc, [feeder], 3, _to_partition)
    assert shuffled.getNumPartitions() == 3
    assert _contents(shuffled) == [[(k, f"r{k}") for k in range(10) if k % 3 == p] for p in range(3)]


def test_two_feeders_give_partition_i_the_records_of_both_that_go_to_i(spark: Any) -> None:
    sc = spark.sparkContext
    left = sc.parallelize([(k, f"l{k}") for k in range(8)], 2)
    right = sc.parallelize([(k, f"r{k}") for k in range(5, 12)], 3)
    shuffled = shuffled_union(sc, [left, right], 3, _to_partition)
    assert shuffled.getNumPartitions() == 3
    expected = [
        sorted(
            [(k, f"l{k}") for k in range(8) if k % 3 == p]
            + [(k, f"r{k}") for k in range(5, 12) if k % 3 == p]
        )
        for p in range(3)
    ]
    assert _contents(shuffled) == expected


def test_each_feeder_is_keyed_in_the_python_worker_that_makes_its_records(spark: Any) -> None:
    """The point of the module: no second Python pass (a union below `partitionBy`) per shuffle."""
    sc = spark.sparkContext
    left = sc.parallelize(range(6), 2).map(lambda k: (k, "l"))
    right = sc.parallelize(range(6), 2).map(lambda k: (k, "r"))
    one = shuffled_union(sc, [left], 3, _to_partition).map(lambda pair: pair)
    both = shuffled_union(sc, [left, right], 3, _to_partition).map(lambda pair: pair)
    assert _keying_over_a_union(one) == [False]
    assert _keying_over_a_union(both) == [False, False]
    # what the module avoids: the union shuffled as one is keyed in a second Python pass
    old = sc.union([left, right]).partitionBy(3, _to_partition).map(lambda pair: pair)
    assert _keying_over_a_union(old) == [True]


def test_prepare_runs_on_every_feeder_before_its_shuffle(spark: Any) -> None:
    sc = spark.sparkContext
    left = sc.parallelize([(k, "l") for k in range(4)], 2)
    right = sc.parallelize([(k, "r") for k in range(4)], 2)
    shuffled = shuffled_union(
        sc, [left, right], 3, _to_partition, lambda rdd: rdd.map(lambda pair: (pair[0] + 1, pair[1]))
    )
    assert sorted(shuffled.collect()) == sorted(
        [(k + 1, "l") for k in range(4)] + [(k + 1, "r") for k in range(4)]
    )
    assert all(k % 3 == p for p, part in enumerate(_contents(shuffled)) for k, _ in part)


class _ConcatenatingUnion:
    """A SparkContext whose first `union` concatenates the partitions (as Spark does for RDDs
    with different partitioners), to check the fallback."""

    def __init__(self, sc: Any) -> None:
        self._sc = sc
        self.unions = 0

    def union(self, rdds: list[Any]) -> Any:
        self.unions += 1
        if self.unions == 1:
            return self._sc.union([rdd.map(lambda pair: pair) for rdd in rdds])  # partitioner dropped
        return self._sc.union(rdds)


def test_a_union_that_loses_the_partitioning_falls_back_to_one_shuffle_of_the_feeders(spark: Any) -> None:
    sc = spark.sparkContext
    left = sc.parallelize([(k, "l") for k in range(7)], 2)
    right = sc.parallelize([(k, "r") for k in range(7)], 2)
    concatenating = _ConcatenatingUnion(sc)
    shuffled = shuffled_union(concatenating, [left, right], 3, _to_partition)
    assert concatenating.unions == 2
    assert shuffled.getNumPartitions() == 3
    assert _contents(shuffled) == [
        sorted([(k, "l") for k in range(7) if k % 3 == p] + [(k, "r") for k in range(7) if k % 3 == p])
        for p in range(3)
    ]


def test_no_feeder_is_an_error(spark: Any) -> None:
    with pytest.raises(ValueError, match="at least one feeding RDD"):
        shuffled_union(spark.sparkContext, [], 3, _to_partition)

"""Seed audit 000 (pruning) and 002 (adaptive parallelism) on the Spark runner: behaviours the
existing Spark tests do not pin down (partition pruning's key filter on every read path, a source
RDD with fewer partitions than members, keys that hit no partition, a broadcast-only stage)."""

from __future__ import annotations

from typing import Any

import pytest

from jetspark.core import DAG, AdaptiveParallelism, Edge, JobConfig, stable_hash
from jetspark.processors import collect, from_iterable, map
from jetspark.runners.spark import SparkRunner, from_rdd

pytestmark = pytest.mark.spark


def lookup_dag(rdd: Any, keys: set[Any] | None) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", from_rdd(rdd, keys=keys))
    value = dag.new_vertex("value", map(lambda pair: pair))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, value))
    dag.edge(Edge.between(value, sink))
    return dag


def _keys_covering(partitions: int, count: int) -> set[int]:
    """`count` small int keys whose stable_hash partitions cover all of 0..partitions-1."""
    keys: set[int] = set()
    seen: set[int] = set()
    for key in range(10_000):
        p = stable_hash(key) % partitions
        if p not in seen or len(keys) < count:
            keys.add(key)
            seen.add(p)
        if len(seen) == partitions and len(keys) >= count:
            return keys
    raise AssertionError("no keys found")


def test_keys_are_filtered_when_they_hit_every_partition_and_the_rdd_has_one_per_member(spark: Any) -> None:
    """Seed 000 partition pruning / docs: `from_rdd(rdd, keys={...})` 'emits the pairs whose key
    is in keys', also when the keys' partitions are all of the RDD's and the RDD has exactly
    member_count partitions (the runner's 'direct' path, which read the whole RDD unfiltered
    before the audit found it)."""
    pairs = [(n % 50, n) for n in range(500)]
    rdd = spark.sparkContext.parallelize(pairs, 2).partitionBy(2, stable_hash)
    keys = _keys_covering(2, 2)
    assert {stable_hash(k) % 2 for k in keys} == {0, 1}
    job = SparkRunner(spark).run(lookup_dag(rdd, keys), JobConfig(member_count=2), timeout=120)
    got = sorted(job.result("sink"))
    assert got == sorted(p for p in pairs if p[0] in keys), f"{len(got)} pairs, expected {10 * len(keys)}"


def test_keys_are_filtered_when_some_partitions_are_pruned(spark: Any) -> None:
    """The same lookup through the non-direct path (more RDD partitions than members): filtered."""
    pairs = [(n % 50, n) for n in range(500)]
    rdd = spark.sparkContext.parallelize(pairs, 2).partitionBy(5, stable_hash)
    keys = {7}
    job = SparkRunner(spark).run(lookup_dag(rdd, keys), JobConfig(member_count=2), timeout=120)
    assert sorted(job.result("sink")) == sorted(p for p in pairs if p[0] in keys)
    assert job.plan_metrics()["source_partitions_read"] == 1
    assert job.plan_metrics()["source_partitions_pruned"] == 4


def test_keys_with_no_partition_read_nothing_and_deploy_no_member(spark: Any) -> None:
    """An empty key set: no partition read, no processor of the source, an empty result."""
    pairs = [(n % 50, n) for n in range(100)]
    rdd = spark.sparkContext.parallelize(pairs, 2).partitionBy(3, stable_hash)
    job = SparkRunner(spark).run(lookup_dag(rdd, set()), JobConfig(member_count=2), timeout=120)
    assert job.result("sink") == []
    metrics = job.plan_metrics()
    assert metrics["source_partitions_read"] == 0
    assert metrics["source_partitions_pruned"] == 3
    assert metrics["members_deployed"] == 0


def test_an_rdd_with_fewer_partitions_than_members_deploys_only_the_members_that_read(spark: Any) -> None:
    """docs/planning.md: 'Without keys, a member that reads no partition of the RDD (fewer
    partitions than members) gets no processor of the source either.'"""
    rdd = spark.sparkContext.parallelize(range(40), 2)
    dag = DAG()
    source = dag.new_vertex("source", from_rdd(rdd))
    double = dag.new_vertex("double", map(lambda n: 2 * n))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, double))
    dag.edge(Edge.between(double, sink))
    job = SparkRunner(spark).run(dag, JobConfig(member_count=4), timeout=120)
    assert sorted(job.result("sink")) == [2 * n for n in range(40)]
    assert job.plan.vertex_plan("source").members() == [0, 1]
    assert job.plan.vertex_plan("double").members() == [0, 1]
    assert job.plan_metrics()["members_deployed"] == 2
    assert job.plan_metrics()["members_pruned"] == 2
    assert "stage 0 [source, double, sink]: 2 task(s) on Spark" in job.explain()


def test_a_stage_fed_only_by_a_broadcast_edge_gets_every_item_on_every_member(spark: Any) -> None:
    """Seed 002: a broadcast result is one subpartition read by every consumer. Each member of
    the consuming stage receives every item once, whatever the task count decided."""
    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(30)), 1)
    tag = dag.new_vertex("tag", map(lambda n: n), 1)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.between(numbers, tag).broadcast().distributed())
    dag.edge(Edge.between(tag, sink))
    config = JobConfig(
        member_count=4,
        adaptive_parallelism=AdaptiveParallelism(bytes_per_task=64, min_parallelism=1, max_parallelism=4),
    )
    job = SparkRunner(spark).run(dag, config, timeout=120)
    # from_iterable spreads range(30) over its 4 processors; the broadcast copies it to 4 members
    assert sorted(job.result("sink")) == sorted(list(range(30)) * 4)
    decision = job.adaptive_decisions[-1]
    assert not any(decision.sizes) and any(decision.broadcast_sizes)
    covered = [m for first, last in decision.ranges for m in range(first, last + 1)]
    assert covered == list(range(4)), "each member of the stage runs in exactly one task"


def _keys_in_partitions(wanted: set[int], partitions: int) -> set[int]:
    """One small int key per partition in `wanted` (stable_hash % partitions)."""
    keys: dict[int, int] = {}
    for key in range(10_000):
        p = stable_hash(key) % partitions
        if p in wanted and p not in keys:
            keys[p] = key
        if len(keys) == len(wanted):
            return set(keys.values())
    raise AssertionError("no keys found")


def test_keys_in_partitions_0_to_members_minus_1_of_a_bigger_rdd_read_only_those(spark: Any) -> None:
    """Partition pruning: keys in partitions {0, 1} of a 5-partition RDD, 2 members: only those two
    partitions are read and only the keys' pairs are emitted (the 'direct' path read all five,
    unfiltered, before the audit found it)."""
    pairs = [(n % 50, n) for n in range(500)]
    rdd = spark.sparkContext.parallelize(pairs, 2).partitionBy(5, stable_hash)
    keys = _keys_in_partitions({0, 1}, 5)
    job = SparkRunner(spark).run(lookup_dag(rdd, keys), JobConfig(member_count=2), timeout=120)
    assert job.plan_metrics()["source_partitions_read"] == 2
    assert sorted(job.result("sink")) == sorted(p for p in pairs if p[0] in keys)


def test_explain_of_an_adaptive_job_shows_each_stages_actual_task_count(spark: Any) -> None:
    """docs/planning.md: 'job.explain() (on Spark with each stage's task count and, with adaptive
    parallelism, the bytes and ranges decided)'."""
    from tests.spark.test_pruning import task_count

    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(2000)))
    double = dag.new_vertex("double", map(lambda n: 2 * n))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(numbers, double).partitioned(lambda n: n).distributed())
    dag.edge(Edge.between(double, sink))
    settings = AdaptiveParallelism(
        bytes_per_task=1 << 30, min_parallelism=1, max_parallelism=8, source_parallelism=2
    )
    job = SparkRunner(spark).run(dag, JobConfig(member_count=8, adaptive_parallelism=settings), timeout=300)
    (decision,) = job.adaptive_decisions
    assert len(decision.ranges) == 1
    assert task_count(spark, job) == 2 + 1 + 1  # type: ignore[arg-type]  # source on 2, the measuring task, 1 combining task
    text = job.explain()
    assert "stage 0 [numbers]: 2 task(s) on Spark" in text, text
    assert "stage 1 [double, sink]: 1 task(s) on Spark" in text, text

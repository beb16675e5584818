"""Pruning on the Spark runner: fewer tasks, the same results (seed 000)."""

from __future__ import annotations

from typing import Any

import pytest

from jetspark.core import DAG, Edge, JobConfig, stable_hash
from jetspark.processors import collect, from_iterable, map
from jetspark.runners.local import LocalRunner
from jetspark.runners.spark import SparkJob, SparkRunner, from_rdd
from tests.unit.planning.test_pruning import chain, constant_key_dag

pytestmark = pytest.mark.spark


def task_count(spark: Any, job: SparkJob) -> int:
    """Spark tasks the job's Spark jobs ran (skipped stages, already computed, count none)."""
    tracker = spark.sparkContext.statusTracker()
    total = 0
    for job_id in tracker.getJobIdsForGroup(job.group):
        info = tracker.getJobInfo(job_id)
        for stage_id in info.stageIds:
            stage = tracker.getStageInfo(stage_id)
            total += stage.numCompletedTasks if stage is not None else 0
    return total


@pytest.fixture(scope="module")
def keyed(spark: Any) -> Any:
    pairs = [(n % 1000, n) for n in range(5000)]
    rdd = spark.sparkContext.parallelize(pairs, 4).partitionBy(31, stable_hash).cache()
    rdd.count()
    return rdd


def lookup_dag(rdd: Any, keys: set[int] | None) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", from_rdd(rdd, keys=keys))
    value = dag.new_vertex("value", map(lambda pair: pair[1]))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, value))
    dag.edge(Edge.between(value, sink))
    return dag


def test_from_rdd_with_keys_reads_only_their_partitions(spark: Any, keyed: Any) -> None:
    runner = SparkRunner(spark)
    pruned = runner.run(lookup_dag(keyed, {7, 8}), JobConfig(member_count=2), timeout=120)
    assert sorted(pruned.result("sink")) == sorted(n for n in range(5000) if n % 1000 in (7, 8))
    partitions = {stable_hash(7) % 31, stable_hash(8) % 31}
    metrics = pruned.plan_metrics()
    assert metrics["source_partitions_read"] == len(partitions)
    assert metrics["source_partitions_pruned"] == 31 - len(partitions)
    assert metrics["members_deployed"] == len({p % 2 for p in partitions})
    assert f"source 'source' reads {len(partitions)} of 31 partitions" in pruned.explain()
    unpruned = runner.run(lookup_dag(keyed, None), JobConfig(member_count=2), timeout=120)
    assert len(unpruned.result("sink")) == 5000
    # unpruned: 31 source tasks feed the 2 members; pruned: the kept partitions feed one task each
    assert task_count(spark, unpruned) == 31 + 2
    assert task_count(spark, pruned) == len(partitions) + len({p % 2 for p in partitions})


def test_keys_need_a_partitioned_rdd(spark: Any) -> None:
    with pytest.raises(ValueError, match=r"from_rdd\(keys=...\): the RDD has no partitioner"):
        from_rdd(spark.sparkContext.parallelize([(1, 2)]), keys={1})


@pytest.mark.parametrize("make", [lambda: chain([2]), lambda: constant_key_dag()[0]])
def test_a_pruned_job_runs_fewer_tasks_with_the_same_results(spark: Any, make: Any) -> None:
    dag = make()
    local = LocalRunner(member_count=3).run(dag, JobConfig(pruning=False))
    runner = SparkRunner(spark)
    pruned = runner.run(dag, JobConfig(member_count=3), timeout=120)
    unpruned = runner.run(dag, JobConfig(member_count=3, pruning=False), timeout=120)
    assert sorted(pruned.result("sink")) == sorted(unpruned.result("sink")) == sorted(local.result("sink"))
    assert pruned.metrics() == unpruned.metrics() == local.metrics()
    assert task_count(spark, pruned) < task_count(spark, unpruned)


def test_a_stage_fed_by_a_constant_key_edge_runs_one_task(spark: Any) -> None:
    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(100)))
    total = dag.new_vertex("total", map(lambda n: n * 2))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(numbers, total).all_to_one("all").distributed())
    dag.edge(Edge.between(total, sink))
    job = SparkRunner(spark).run(dag, JobConfig(member_count=4), timeout=120)
    assert sorted(job.result("sink")) == [n * 2 for n in range(100)]
    assert "stage 1 [total, sink]: 1 task(s) on Spark" in job.explain()
    assert task_count(spark, job) == 4 + 1

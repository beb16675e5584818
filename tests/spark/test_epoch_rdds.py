"""The RDDs of an epoch (`SparkRunner._build_rdds`, called by the driver before every epoch): every
JVM RDD a build makes is one that the epoch's Spark job runs, and the empty input of a source
stage is made once per job, not once per epoch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, Edge, JobConfig
from jetspark import processors as P
from jetspark.core import ProcessingGuarantee
from jetspark.runners.spark.records import dumps
from jetspark.runners.spark.runner import SparkRunner

pytestmark = pytest.mark.spark


def three_stages() -> DAG:
    """source -> map -> collect, each its own Spark stage (distributed edges)."""
    dag = DAG()
    source = dag.new_vertex("source", P.generator_stream(count=100))
    double = dag.new_vertex("double", P.map(lambda x: 2 * x))
    dag.edge(Edge.between(source, double).distributed())
    dag.edge(Edge.between(double, dag.new_vertex("sink", P.collect())).distributed())
    return dag


def lineage(rdd: Any) -> set[int]:
    """The ids of the JVM RDD and of every RDD it depends on."""
    seen: set[int] = set()
    pending = [rdd._jrdd.rdd()]
    while pending:
        one = pending.pop()
        if one.id() in seen:
            continue
        seen.add(one.id())
        dependencies = one.dependencies()
        pending.extend(dependencies.apply(i).rdd() for i in range(dependencies.size()))
    return seen


def built(spark: Any, job: Any) -> tuple[set[int], set[int]]:
    """Build the next epoch's RDDs: (ids of the JVM RDDs the build made, ids in the lineage of
    the RDD the epoch collects)."""
    context = spark.sparkContext._jsc.sc()
    before = context.newRddId()  # takes an id: the build's RDDs come after it
    final, _ = job._build(dumps(job._spec(None, -1, 1.0)))
    lineage_ids = lineage(final)  # the final RDD's JVM RDD is made here, as collect() would
    after = context.newRddId()
    return set(range(before + 1, after)), lineage_ids


def test_every_jvm_rdd_of_an_epoch_is_run_and_the_empty_source_input_is_made_once(
    spark: Any, tmp_path: Path
) -> None:
    config = JobConfig(
        name="rdds",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=200,
        checkpoint_root=str(tmp_path / "ck"),
    )
    job: Any = SparkRunner(spark, member_count=2).submit(three_stages(), config)
    job.join(180)
    assert sorted(job.result("sink")) == [2 * i for i in range(100)]
    first_made, first_run = built(spark, job)
    second_made, second_run = built(spark, job)
    assert first_made and first_made <= first_run, (
        f"JVM RDDs {sorted(first_made - first_run)} were made but are not in the epoch's lineage"
    )
    assert second_made and second_made <= second_run
    shared = first_run & second_run  # the source stage's empty input, and nothing else
    assert len(shared) == 1 and shared.isdisjoint(second_made), (first_run, second_run)


def test_each_epoch_after_the_first_runs_on_rdds_built_while_the_one_before_ran(
    spark: Any, tmp_path: Path
) -> None:
    """The tasks get each epoch's spec from the Spark job's local property, so the RDDs were
    built ahead (`prebuild`); the output is exact all the same."""
    config = JobConfig(
        name="prebuilt",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=100,
        checkpoint_root=str(tmp_path / "ck"),
    )
    dag = DAG()
    source = dag.new_vertex("source", P.generator_stream(count=3000, items_per_second=3000))
    double = dag.new_vertex("double", P.map(lambda x: 2 * x))
    dag.edge(Edge.between(source, double).distributed())
    dag.edge(Edge.between(double, dag.new_vertex("sink", P.collect())).distributed())
    job: Any = SparkRunner(spark, member_count=2).submit(dag, config)
    job.join(180)
    assert sorted(job.result("sink")) == [2 * i for i in range(3000)]
    runs = job.epochs_committed + job.epochs_aborted + 1  # the last epoch completes the job
    assert runs >= 3, job.epoch_stats()
    assert job._rdds.on_the_spot == 1 and job._rdds.ahead == runs - 1, (job._rdds.ahead, runs)

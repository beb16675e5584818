"""The Spark runner against the local runner: same results, same member arrangement."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.edge import Edge
from jetspark.core.partitioner import default_partitioner
from jetspark.processors import collect, from_iterable
from jetspark.processors import map as map_p
from jetspark.runners.local import JobStatus, LocalRunner
from jetspark.runners.spark import SparkRunner
from tests.counting import CountingDAG
from tests.spark import dags

pytestmark = pytest.mark.spark

TIMEOUT = 120


def run_both(shape: Callable[[], DAG], members: int, spark: Any) -> tuple[Any, Any]:
    config = JobConfig(member_count=members)
    on_spark = SparkRunner(spark).run(shape(), config, timeout=TIMEOUT)
    local = LocalRunner().run(shape(), config, timeout=TIMEOUT)
    return on_spark, local


def without_pid(items: list[Any]) -> Counter[Any]:
    return Counter(item[:3] for item in items)


def test_linear_dag_is_one_stage_and_keeps_members(spark: Any) -> None:
    job, local = run_both(dags.linear, 2, spark)
    assert job.status is JobStatus.COMPLETED
    assert len(job.stages.stages) == 1
    assert without_pid(job.result("sink")) == without_pid(local.result("sink"))
    assert {n for (_, n), *_ in job.result("sink")} == set(range(1000))
    assert job.metrics() == local.metrics()
    assert [list(figures) for figures in job.metrics().values()] == [
        list(figures) for figures in local.metrics().values()
    ], "printed, both runners' metrics read alike: the same figures in the same order"


@pytest.mark.parametrize("members", [1, 3])
def test_partitioned_edge_delivers_each_key_to_its_owner(spark: Any, members: int) -> None:
    job, local = run_both(dags.partitioned, members, spark)
    items = job.result("sink")
    assert without_pid(items) == without_pid(local.result("sink"))
    arrangement = job.plan.arrangement
    for (_, n), member, index, _pid in items:
        partition = default_partitioner(dags.key_of(("n", n)), arrangement.partition_count)
        assert arrangement.global_owner(partition, 2) == index
        assert index // 2 == member < members
    assert job.metrics() == local.metrics()


def test_priorities_hold_across_a_shuffle(spark: Any) -> None:
    job, local = run_both(dags.priorities, 2, spark)
    seen: dict[int, list[int]] = {}
    for ordinal, _item, index in job.result("sink"):
        seen.setdefault(index, []).append(ordinal)
    for ordinals in seen.values():
        # ordinal 1 (priority 1) completely before ordinal 0 (priority 2)
        assert ordinals == sorted(ordinals, reverse=True)
    assert Counter(ordinals_count for ordinals in seen.values() for ordinals_count in ordinals) == Counter(
        {0: 300, 1: 300}
    )
    assert Counter(job.result("sink")) == Counter(local.result("sink"))


def test_watermarks_are_coalesced_over_all_producers_across_a_shuffle(spark: Any) -> None:
    job, local = run_both(dags.watermarks, 2, spark)
    streams: dict[int, list[Any]] = {}
    for kind, value, index in job.result("sink"):  # (0, ("t", ts), index) or ("wm", ts, index)
        streams.setdefault(index, []).append((kind, value if kind == "wm" else value[1]))
    assert set(streams) == {0, 1}
    for stream in streams.values():
        marks = [value for kind, value in stream if kind == "wm"]
        assert marks == sorted(set(marks)) and marks[-1] == 100
        assert all(mark in (10, 20, 30, 40, 100) for mark in marks)
        current = -1
        for kind, value in stream:
            if kind == "wm":
                current = value
            else:
                assert value >= current, f"item {value} arrived after watermark {current}"
    items = Counter(item for item in job.result("sink") if item[0] != "wm")
    assert items == Counter(item for item in local.result("sink") if item[0] != "wm")


def test_a_local_edge_cut_to_break_a_cycle_stays_on_its_member(spark: Any) -> None:
    job, local = run_both(dags.diamond, 2, spark)
    assert [s.vertices for s in job.stages.stages] == [("a",), ("c",), ("b", "sink")]
    items = job.result("sink")

    def normal(item: Any) -> Any:  # (1, (n, member, index, pid), b's index): drop the pid
        return (item[0], item[1][:3], item[2]) if item[0] == 1 else item

    assert Counter(map(normal, items)) == Counter(map(normal, local.result("sink")))
    # the local edge a -> b: items of a's processors on member m reach b's processors on member m
    for ordinal, item, index in items:
        if ordinal == 0:
            assert item[1] % 4 // 2 == index // 2, (item, index)
    assert job.metrics() == local.metrics()


@pytest.mark.parametrize(("count", "error"), [(0, ValueError), (2.5, TypeError), (True, TypeError)])
def test_member_count_is_checked_by_the_spark_runner_as_by_the_job_config(
    count: object, error: type[Exception]
) -> None:
    """No Spark needed: the runner refuses at construction what JobConfig refuses."""
    with pytest.raises(error, match=r"SparkRunner: member_count must be an int >= 1"):
        SparkRunner(member_count=count)  # type: ignore[arg-type]


def test_a_spark_job_validates_its_dag_once_and_runs_from_the_frozen_plan(spark: Any) -> None:
    dag = CountingDAG()
    source = dag.new_vertex("source", from_iterable(range(20)))
    double = dag.new_vertex("double", map_p(lambda n: 2 * n))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, double).distributed()).edge(Edge.between(double, sink))
    job = SparkRunner(spark).run(dag, JobConfig(member_count=2), timeout=TIMEOUT)
    assert sorted(job.result("sink")) == [2 * n for n in range(20)]
    assert dag.validations == 1  # preflight, planning and stages all read the one validated DAG
    assert job.stages is job.plan.stages

"""Adaptive batch parallelism on Spark (seed 002): a stage's task count from the bytes it receives."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from jetspark.core import DAG, AbstractProcessor, Edge, JobConfig, ProcessingGuarantee, default_partitioner
from jetspark.core.config import AdaptiveParallelism, ParallelismDecider
from jetspark.processors import collect, from_iterable
from jetspark.runners.spark import SparkRunner
from tests.spark.test_pruning import task_count

pytestmark = pytest.mark.spark

MEMBERS = 16


class Tag(AbstractProcessor):
    """Emits (item, the member it ran on)."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit((item, self.context.member_index))


def key(n: int) -> int:
    return 0 if n % 4 else n % 64  # three items in four share key 0: one member gets most bytes


def tagged_dag(count: int) -> DAG:
    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(count)))
    tag = dag.new_vertex("tag", Tag)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(numbers, tag).partitioned(key).distributed())
    dag.edge(Edge.between(tag, sink))
    return dag


def owner(n: int) -> int:
    return default_partitioner(key(n), 271) % MEMBERS


@pytest.mark.parametrize("decider", list(ParallelismDecider))
def test_a_stage_after_a_shuffle_runs_on_the_tasks_its_bytes_need(
    spark: Any, decider: ParallelismDecider
) -> None:
    settings = AdaptiveParallelism(
        decider=decider, bytes_per_task=20_000, min_parallelism=1, max_parallelism=8, source_parallelism=2
    )
    job = SparkRunner(spark).run(
        tagged_dag(20_000), JobConfig(member_count=MEMBERS, adaptive_parallelism=settings), timeout=300
    )
    assert sorted(job.result("sink")) == [(n, owner(n)) for n in range(20_000)], (
        "each item on its owner member"
    )
    (decision,) = job.adaptive_decisions
    assert len(decision.sizes) == MEMBERS and sum(decision.sizes) > 20_000
    ranges = list(decision.ranges)
    assert ranges[0][0] == 0 and ranges[-1][1] == MEMBERS - 1
    assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(ranges))
    assert 1 < len(ranges) <= 8
    # the source stage's 2 tasks, the one task that reads the empty partition (so that the shuffle
    # is written and measured), the tag stage's one task per range; nothing runs twice
    assert task_count(spark, job) == 2 + 1 + len(ranges)
    hot = max(range(MEMBERS), key=lambda m: decision.sizes[m])
    if decider is ParallelismDecider.EVENLY_BY_BYTES:
        assert (hot, hot) in ranges, "the skewed member has a task of its own"
    else:
        assert len(ranges) & (len(ranges) - 1) == 0, "a power of 2"


def test_off_by_default_one_task_per_member(spark: Any) -> None:
    job = SparkRunner(spark).run(tagged_dag(1000), JobConfig(member_count=MEMBERS), timeout=300)
    assert job.adaptive_decisions == []
    assert task_count(spark, job) == 2 * MEMBERS
    assert sorted(job.result("sink")) == [(n, owner(n)) for n in range(1000)]


def test_adaptive_parallelism_is_for_batch_jobs(spark: Any, tmp_path: Any) -> None:
    config = JobConfig(
        name="adaptive-epochs",
        processing_guarantee=ProcessingGuarantee.AT_LEAST_ONCE,
        checkpoint_root=str(tmp_path),
        adaptive_parallelism=AdaptiveParallelism(),
    )
    with pytest.raises(ValueError, match="adaptive_parallelism applies to batch jobs"):
        SparkRunner(spark).submit(tagged_dag(10), config)


def test_a_stage_fed_by_two_stages_is_measured_from_both_and_gets_every_item(spark: Any) -> None:
    """Two source stages feed the tag stage: each feeder is measured and shuffled on its own
    (`shuffle_union`), and the decision counts the bytes of both."""
    settings = AdaptiveParallelism(
        bytes_per_task=20_000, min_parallelism=1, max_parallelism=8, source_parallelism=2
    )
    config = JobConfig(member_count=MEMBERS, adaptive_parallelism=settings)
    alone = SparkRunner(spark).run(tagged_dag(10_000), config, timeout=300)
    dag = DAG()
    low = dag.new_vertex("low", from_iterable(range(10_000)))
    high = dag.new_vertex("high", from_iterable(range(10_000, 20_000)))
    tag = dag.new_vertex("tag", Tag)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.from_(low, 0).to(tag, 0).partitioned(key).distributed())
    dag.edge(Edge.from_(high, 0).to(tag, 1).partitioned(key).distributed())
    dag.edge(Edge.between(tag, sink))
    job = SparkRunner(spark).run(dag, config, timeout=300)
    assert sorted(job.result("sink")) == [(n, owner(n)) for n in range(20_000)]
    (decision,) = job.adaptive_decisions
    (single,) = alone.adaptive_decisions
    assert sum(decision.sizes) > 1.5 * sum(single.sizes), "the bytes of both feeders"
    # each source stage's 2 tasks, one task reading the empty partition of both shuffles, the
    # tag stage's one task per range: nothing runs twice
    assert task_count(spark, job) == 2 + 2 + 1 + len(decision.ranges)

"""The quiescence check and the per-vertex watermarks on the Spark runner: a stage task that can
never move again fails the job with the dump, and the job metrics carry each vertex's watermarks."""

from __future__ import annotations

from typing import Any

import pytest

from jetspark.core import DAG, AbstractProcessor, Edge, JobConfig, Watermark
from jetspark.core.errors import JobFailedError
from jetspark.processors import collect, from_iterable
from jetspark.runners.spark import SparkRunner

pytestmark = pytest.mark.spark


class NeverCompletes(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return True

    def complete(self) -> bool:
        return False


class Forward(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)


class WithWatermarks(AbstractProcessor):
    """Processor 0 emits 1, wm 10, 2, wm 20; every other one only wm 20 (so each edge has one)."""

    def init_processor(self, context: Any) -> None:
        first = context.global_processor_index == 0
        self.items: list[Any] = [1, Watermark(10), 2, Watermark(20)] if first else [Watermark(20)]

    def complete(self) -> bool:
        while self.items:
            if not self.try_emit(self.items[0]):
                return False
            self.items.pop(0)
        return True


def across_a_shuffle(middle: Any, source: Any) -> DAG:
    dag = DAG()
    src = dag.new_vertex("source", source, 1)
    mid = dag.new_vertex("middle", middle, 1)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.between(src, mid).distributed().partitioned(str)).edge(Edge.between(mid, sink))
    return dag


def test_a_stuck_stage_task_fails_the_job_with_the_dump(spark: Any) -> None:
    config = JobConfig(name="stuck", member_count=2, quiescence_timeout_seconds=0.5)
    with pytest.raises(JobFailedError) as raised:
        SparkRunner(spark).submit(across_a_shuffle(NeverCompletes, from_iterable(range(20))), config).join(
            180
        )
    message = str(raised.value)
    assert "QuiescenceError" in message or "nothing in progress for 0.5 s" in message
    assert "vertex 'middle' processor #" in message and "every input ended, not completed" in message


def test_job_metrics_carry_each_vertex_watermarks_across_members(spark: Any) -> None:
    config = JobConfig(name="watermarks", member_count=2)
    job = SparkRunner(spark).submit(across_a_shuffle(Forward, WithWatermarks), config).join(180)
    assert sorted(job.result("sink")) == [1, 2]
    metrics = job.metrics()
    assert metrics["source"]["output_watermark"] == 20
    assert metrics["middle"]["upstream_watermark"] == 20
    assert metrics["middle"]["input_watermark"] == 20
    assert metrics["sink"]["input_watermark"] == 20
    assert metrics["middle"]["queued"] == metrics["middle"]["inbox"] == metrics["middle"]["outbox"] == 0

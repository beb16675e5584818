"""Seed 004 audit (Beam Prism's per-stage watermarks and quiescence check), on the local runner:
behaviours docs/quiescence.md promises that no other test pins down.

- the upstream watermark is the lowest of the producers' output watermarks, idle inputs left out;
- a watermark the processor refuses moves `upstream_watermark` but not `input_watermark`;
- a vertex's watermark figure is absent until every one of its processors has one;
- the default timeout, the documented message, the time a stuck job takes to fail;
- stuck processors the check must catch: a non-cooperative one, and one whose `complete_edge()`
  never returns True after its last input ended.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from jetspark.core import DAG, AbstractProcessor, Edge, JobConfig, Watermark
from jetspark.core.errors import JobFailedError, QuiescenceError
from jetspark.core.watermark import IDLE_MESSAGE
from jetspark.processors import collect, from_iterable
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner
from tests.waiting import wait_until


class EmitsThenWaits(AbstractProcessor):
    """A streaming source: emits `items` (watermarks included) once, then waits for data forever."""

    waits_for_data = True

    def __init__(self, items: list[Any]) -> None:
        self.items = list(items)

    def complete(self) -> bool:
        while self.items:
            if not self.try_emit(self.items[0]):
                return False
            self.items.pop(0)
        return False


class TakesWatermarksUpTo(AbstractProcessor):
    """Forwards items; accepts watermarks up to `limit`, refuses any later one forever."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if watermark.timestamp > self.limit:
            return False
        return self.try_emit(watermark)


PATIENT = JobConfig(name="wm-audit", quiescence_timeout_seconds=None)


def two_sources(first: list[Any], second: list[Any]) -> DAG:
    dag = DAG()
    a = dag.new_vertex("a", lambda: EmitsThenWaits(first), 1)
    b = dag.new_vertex("b", lambda: EmitsThenWaits(second), 1)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.between(a, sink)).edge(Edge.from_(b).to(sink, 1))
    return dag


def test_upstream_watermark_is_the_lowest_of_the_producers_output_watermarks() -> None:
    """Seed 004: "Upstream Watermark: The minimum output watermark of all stages that provide
    input to this stage"."""
    job = LocalRunner(1).submit(two_sources(["x", Watermark(30)], ["y", Watermark(10)]), PATIENT)
    try:
        wait_until(
            lambda: (
                job.metrics()["a"].get("output_watermark") == 30
                and job.metrics()["b"].get("output_watermark") == 10
            ),
            "both sources to emit their watermark",
        )
        wait_until(lambda: "input_watermark" in job.metrics()["sink"], "the sink to take a watermark")
        sink = job.metrics()["sink"]
        assert sink["upstream_watermark"] == 10
        assert sink["input_watermark"] == 10
        assert "output_watermark" not in sink  # docs/quiescence.md: "a sink no `output_watermark`"
        assert job.status is JobStatus.RUNNING
    finally:
        job.cancel()


def test_an_idle_input_is_left_out_of_the_upstream_watermark() -> None:
    """docs/quiescence.md: "the lowest of its producers' latest, idle inputs left out"."""
    job = LocalRunner(1).submit(two_sources(["x", Watermark(30)], ["y", IDLE_MESSAGE]), PATIENT)
    try:
        wait_until(lambda: job.metrics()["a"].get("output_watermark") == 30, "a's watermark")
        wait_until(lambda: "upstream_watermark" in job.metrics()["sink"], "the sink's upstream watermark")
        assert job.metrics()["sink"]["upstream_watermark"] == 30
        wait_until(lambda: job.metrics()["sink"].get("input_watermark") == 30, "the sink to take 30")
    finally:
        job.cancel()


def test_a_refused_watermark_moves_upstream_but_not_input_watermark() -> None:
    """docs/quiescence.md: "A watermark that does not move while `upstream_watermark` does points
    at the processor (it holds it back, or refuses it)"."""
    dag = DAG()
    src = dag.new_vertex("source", lambda: EmitsThenWaits([1, Watermark(10), 2, Watermark(20)]), 1)
    mid = dag.new_vertex("holder", lambda: TakesWatermarksUpTo(10), 1)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.between(src, mid)).edge(Edge.between(mid, sink))
    job = LocalRunner(1).submit(dag, PATIENT)
    try:
        wait_until(lambda: job.metrics()["holder"].get("upstream_watermark") == 20, "upstream 20")
        wait_until(lambda: job.metrics()["sink"].get("input_watermark") == 10, "the sink to take 10")
        holder = job.metrics()["holder"]
        assert holder["input_watermark"] == 10
        assert holder["output_watermark"] == 10
        assert job.metrics()["sink"]["upstream_watermark"] == 10
    finally:
        job.cancel()


def test_a_watermark_figure_is_absent_until_every_processor_of_the_vertex_has_one() -> None:
    """docs/quiescence.md: "A watermark figure is the lowest over the vertex's processors, and is
    absent until every one of them has one"; then it is the lowest of them."""

    class PerProcessor(EmitsThenWaits):
        def init_processor(self, context: Any) -> None:
            self.items = [Watermark(50)] if context.global_processor_index == 0 else []

    dag = DAG()
    src = dag.new_vertex("source", lambda: PerProcessor([]), 2)
    mid = dag.new_vertex("mid", lambda: TakesWatermarksUpTo(10**9), 2)
    dag.edge(Edge.between(src, mid).isolated())
    job = LocalRunner(1).submit(dag, PATIENT)
    try:
        wait_until(lambda: _mid_took_one(job), "mid processor #0 to take watermark 50")
        metrics = job.metrics()
        assert "output_watermark" not in metrics["source"]  # processor 1 emitted none
        assert "input_watermark" not in metrics["mid"]  # processor 1 of mid has none
        assert "upstream_watermark" not in metrics["mid"]
    finally:
        job.cancel()


def _mid_took_one(job: Any) -> bool:
    tasklets = [t for t in job._tasklets if t.context.vertex_name == "mid"]
    return any(t.input_watermark == 50 for t in tasklets)


class NeverCompletes(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return True

    def complete(self) -> bool:
        return False


def stuck_pipeline(middle: Any) -> DAG:
    dag = DAG()
    src = dag.new_vertex("source", from_iterable(range(10)), 1)
    mid = dag.new_vertex("stuck", middle, 1)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.between(src, mid)).edge(Edge.between(mid, sink))
    return dag


def test_the_default_timeout_is_sixty_seconds() -> None:
    assert JobConfig().quiescence_timeout_seconds == 60


def test_the_failure_is_a_job_failure_with_the_documented_message() -> None:
    """The header and the per-processor line of docs/quiescence.md's example, word for word."""
    assert issubclass(QuiescenceError, JobFailedError)
    with pytest.raises(QuiescenceError) as raised:
        LocalRunner(1).run(
            stuck_pipeline(NeverCompletes), JobConfig(name="stuck", quiescence_timeout_seconds=0.3)
        )
    message = str(raised.value)
    assert message.startswith(
        "nothing in progress for 0.3 s and nothing can make progress, yet items are pending or a "
        "processor with all its input has not completed; vertex 'stuck' processor #0 holds them up; "
        "the job would hang. Processors not done:\n"
    )
    assert raised.value.vertex == "stuck"
    assert (
        "vertex 'stuck' processor #0: state=complete watermarks upstream=None input=None output=None; "
        "pending: queued=0 inbox=0 outbox=0; every input ended, not completed"
    ) in message


def test_a_stuck_job_fails_within_the_timeout_plus_about_a_second() -> None:
    """docs/quiescence.md: "A batch job that gets stuck therefore fails within the timeout (plus
    up to one second between checks)". The slack is for a machine whose two cores are busy (the
    check runs on a thread of its own); it is still below the 30 s the existing test allows."""
    started = time.monotonic()
    with pytest.raises(QuiescenceError):
        LocalRunner(1).run(
            stuck_pipeline(NeverCompletes), JobConfig(name="stuck", quiescence_timeout_seconds=0.5)
        )
    assert time.monotonic() - started < 0.5 + 1 + 15


class NonCooperativeRefuser(AbstractProcessor):
    def is_cooperative(self) -> bool:
        return False

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return False


def test_a_stuck_non_cooperative_processor_fails_the_job_too() -> None:
    """Only a call that is running counts as progress in the making; a non-cooperative processor
    whose calls return at once without taking anything is stuck like a cooperative one."""
    job = LocalRunner(1).submit(
        stuck_pipeline(NonCooperativeRefuser), JobConfig(name="stuck", quiescence_timeout_seconds=0.3)
    )
    try:
        with pytest.raises(QuiescenceError, match=r"vertex 'stuck' processor #0"):
            job.join(60)
    finally:
        if not job.ended:
            job.cancel()


class CompleteEdgeNeverTrue(AbstractProcessor):
    """Takes every item, then refuses to finish its (only) edge: complete_edge() returns False."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return True

    def complete_edge(self, ordinal: int) -> bool:
        return False


def test_a_processor_stuck_in_complete_edge_fails_the_job() -> None:
    """docs/quiescence.md: something is pending when "a processor that has received the end of
    every input edge and still does not complete"; seed 004: a pipeline that cannot make progress
    fails rather than hangs."""
    job = LocalRunner(1).submit(
        stuck_pipeline(CompleteEdgeNeverTrue), JobConfig(name="stuck", quiescence_timeout_seconds=0.3)
    )
    try:
        with pytest.raises(QuiescenceError, match=r"vertex 'stuck' processor #0"):
            job.join(60)  # 0.3 s timeout + 1 s between checks, with ample slack
    finally:
        if not job.ended:
            job.cancel()

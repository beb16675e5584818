"""The quiescence check (seed 004) on the local runner, and the per-vertex watermarks and pending
counts in the job metrics: a job that can never move again fails with a dump instead of hanging,
and a slow job that still moves, or a source waiting for data, is left alone."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from jetspark.core import DAG, AbstractProcessor, Edge, JobConfig, Watermark
from jetspark.core.errors import QuiescenceError
from jetspark.processors import collect, from_iterable
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner
from tests.waiting import wait_until

QUICK = JobConfig(name="stuck", quiescence_timeout_seconds=0.3)


class NeverCompletes(AbstractProcessor):
    """Takes every item, then never finishes: complete() returns False forever."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return True

    def complete(self) -> bool:
        return False


class RefusesEverything(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return False


class HoldsWatermarks(AbstractProcessor):
    """Takes items but never a watermark: the watermark stays pending before it."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return False


class WithWatermarks(AbstractProcessor):
    """Emits 1, wm 10, 2, wm 20, then completes."""

    def init_processor(self, context: Any) -> None:
        self.items = [1, Watermark(10), 2, Watermark(20)] if context.global_processor_index == 0 else []

    def complete(self) -> bool:
        while self.items:
            if not self.try_emit(self.items[0]):
                return False
            self.items.pop(0)
        return True


class SlowSource(AbstractProcessor):
    """A source that waits `pause` seconds between items, with nothing pending meanwhile."""

    def __init__(self, count: int, pause: float) -> None:
        self.left = count
        self.pause = pause
        self.next_at = 0.0

    def complete(self) -> bool:
        now = time.monotonic()
        if self.left and now >= self.next_at:
            if not self.try_emit(self.left):
                return False
            self.left -= 1
            self.next_at = now + self.pause
        return self.left == 0


class SleepsInEveryCall(AbstractProcessor):
    """Non-cooperative: each item takes `pause` seconds inside the call."""

    def __init__(self, pause: float) -> None:
        self.pause = pause

    def is_cooperative(self) -> bool:
        return False

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        time.sleep(self.pause)
        return self.try_emit(item)


def pipeline(middle: Any, source: Any = None, middle_parallelism: int = 1) -> DAG:
    dag = DAG()
    src = dag.new_vertex("source", source or from_iterable(range(10)), 1)
    mid = dag.new_vertex("stuck", middle, middle_parallelism)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.between(src, mid)).edge(Edge.between(mid, sink))
    return dag


def test_a_processor_with_all_its_input_that_never_completes_fails_the_job_with_a_dump() -> None:
    started = time.monotonic()
    with pytest.raises(QuiescenceError) as raised:
        LocalRunner().run(pipeline(NeverCompletes), QUICK)
    assert time.monotonic() - started < 30
    message = str(raised.value)
    assert "nothing in progress for 0.3 s" in message
    assert "vertex 'stuck' processor #0: state=complete" in message
    assert "every input ended, not completed" in message
    assert raised.value.vertex == "stuck"


def test_items_nobody_takes_fail_the_job_naming_where_they_wait() -> None:
    with pytest.raises(QuiescenceError) as raised:
        LocalRunner().run(pipeline(RefusesEverything), QUICK)
    message = str(raised.value)
    stuck_line = next(line for line in message.splitlines() if line.strip().startswith("vertex 'stuck'"))
    assert "inbox=" in stuck_line and "inbox=0 " not in stuck_line
    assert "vertex 'stuck' processor #0 holds them up" in message.splitlines()[0]
    assert raised.value.vertex == "stuck"


def test_a_watermark_the_processor_never_takes_is_pending() -> None:
    with pytest.raises(QuiescenceError, match=r"vertex 'stuck' processor #0: .*watermarks not taken=1"):
        LocalRunner().run(pipeline(HoldsWatermarks, source=WithWatermarks), QUICK)


def test_a_slow_source_with_nothing_pending_is_not_stuck() -> None:
    job = LocalRunner().run(pipeline(_Forward, source=lambda: SlowSource(3, pause=0.5)), QUICK)
    assert sorted(job.result("sink")) == [1, 2, 3]


def test_a_long_non_cooperative_call_is_progress_in_the_making() -> None:
    job = LocalRunner().run(pipeline(lambda: SleepsInEveryCall(0.5), source=from_iterable(range(3))), QUICK)
    assert sorted(job.result("sink")) == [0, 1, 2]


def test_the_check_can_be_turned_off() -> None:
    job = LocalRunner().submit(
        pipeline(NeverCompletes), JobConfig(name="patient", quiescence_timeout_seconds=None)
    )
    try:
        wait_until(lambda: job._execution is not None, "the execution to start")
        assert job._execution is not None
        assert job._execution._quiescence_timeout is None  # not the 60 s default: no check at all
        time.sleep(0.8)
        assert job.status is JobStatus.RUNNING
    finally:
        job.cancel()


@pytest.mark.parametrize("bad", [0, -1, "1", True])
def test_a_bad_timeout_is_refused_naming_the_option(bad: Any) -> None:
    with pytest.raises(ValueError, match="quiescence_timeout_seconds"):
        JobConfig(quiescence_timeout_seconds=bad)


class _Forward(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)


def test_metrics_show_each_vertex_watermarks_and_pending_counts() -> None:
    job = LocalRunner().run(
        pipeline(_Forward, source=WithWatermarks, middle_parallelism=2), JobConfig(name="wm")
    )
    metrics = job.metrics()
    assert metrics["source"]["output_watermark"] == 20
    assert "upstream_watermark" not in metrics["source"]  # a source has no input
    for vertex in ("stuck", "sink"):
        assert metrics[vertex]["upstream_watermark"] == 20
        assert metrics[vertex]["input_watermark"] == 20
    assert metrics["stuck"]["output_watermark"] == 20
    assert all(metrics[v]["queued"] == metrics[v]["inbox"] == metrics[v]["outbox"] == 0 for v in metrics)


def test_pending_counts_show_while_the_job_runs() -> None:
    job = LocalRunner().submit(
        pipeline(RefusesEverything), JobConfig(name="waiting", quiescence_timeout_seconds=None)
    )
    try:
        wait_until(
            lambda: job.metrics()["stuck"]["inbox"] + job.metrics()["stuck"]["queued"] == 10,
            "10 pending items",
        )
        assert "input_watermark" not in job.metrics()["stuck"]
    finally:
        job.cancel()


class QuietSource(AbstractProcessor):
    """A bounded source with a bug: complete() returns False forever, emitting nothing."""

    def complete(self) -> bool:
        return False


class WaitingSource(QuietSource):
    """A streaming source that waits for data: it says so."""

    waits_for_data = True


def warnings_naming(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and text in r.getMessage()]


def test_a_source_that_never_emits_nor_completes_is_named_in_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Nothing is pending, so the job is not failed (a streaming source waiting for data looks the
    same), but the user learns which source the job waits for; a source that declares
    `waits_for_data` is not named."""
    caplog.set_level(logging.WARNING, logger="jetspark.engine")
    dag = DAG()
    quiet = dag.new_vertex("quiet", QuietSource)
    waiting = dag.new_vertex("waiting", WaitingSource)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(quiet, sink)).edge(Edge.from_(waiting).to(sink, 1))
    job = LocalRunner().submit(dag, QUICK)
    try:
        wait_until(lambda: warnings_naming(caplog, "vertex 'quiet'"), "a warning naming the quiet source")
        [message] = warnings_naming(caplog, "vertex 'quiet'")
        assert "a source that has neither emitted nor completed for 0.3 s" in message
        assert "QuietSource.complete() must return True once it emitted everything" in message
        assert not warnings_naming(caplog, "vertex 'waiting'")  # the same check skipped it
        assert job.status is JobStatus.RUNNING
        metrics = job.metrics()
        assert metrics["quiet"]["stall_warnings"] == 1  # the warning's counter in the metrics
        assert "stall_warnings" not in metrics["waiting"]
    finally:
        job.cancel()
    assert len(warnings_naming(caplog, "vertex 'quiet'")) == 1


class BlocksUntilReleased(AbstractProcessor):
    """Non-cooperative: the first item blocks inside the call until the test releases it."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def is_cooperative(self) -> bool:
        return False

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.release.wait()
        return self.try_emit(item)


def test_a_non_cooperative_call_that_runs_past_the_timeout_is_named_in_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="jetspark.engine")
    release = threading.Event()
    job = LocalRunner().submit(pipeline(lambda: BlocksUntilReleased(release)), QUICK)
    try:
        wait_until(lambda: warnings_naming(caplog, "vertex 'stuck'"), "a warning naming the long call")
        [message] = warnings_naming(caplog, "vertex 'stuck'")
        assert "one call of this non-cooperative processor has run for" in message
        assert job.metrics()["stuck"]["stall_warnings"] == 1
    finally:
        release.set()
    job.join(30)
    assert sorted(job.result("sink")) == list(range(10))


class SpinsUntilReleased(AbstractProcessor):
    """Cooperative, and wrong: its first complete() call loops until the test releases it."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def complete(self) -> bool:
        while not self.release.is_set():
            pass
        return True


def test_a_cooperative_call_that_does_not_return_is_named_with_its_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The loop's own thread is stuck inside the call, so only the watch thread can see it."""
    caplog.set_level(logging.WARNING, logger="jetspark.engine")
    release = threading.Event()
    dag = DAG()
    dag.edge(
        Edge.between(
            dag.new_vertex("spins", lambda: SpinsUntilReleased(release)), dag.new_vertex("sink", collect())
        )
    )
    job = LocalRunner().submit(dag, QUICK)
    try:
        wait_until(lambda: warnings_naming(caplog, "vertex 'spins'"), "a warning naming the stuck call")
        [message] = warnings_naming(caplog, "vertex 'spins'")
        assert "a call of this cooperative processor has not returned for" in message
        assert "test_quiescence.py:" in message and "in complete" in message
    finally:
        release.set()
    job.join(30)
    assert job.metrics()["spins"]["stall_warnings"] == 1

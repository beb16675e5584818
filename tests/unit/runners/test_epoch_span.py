"""An epoch's sources run the whole interval while they have a backlog; once they caught up, the
interval less what the last epochs took beyond their span (`epoch_span`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark import DAG, JobConfig
from jetspark import processors as P
from jetspark.planning.pipeline import build_plan
from jetspark.runners.spark import epoch_task
from jetspark.runners.spark.epoch_span import (
    CAUGHT_UP_IDLE_SHARE,
    MIN_SPAN_SHARE,
    SWITCH,
    SpanPolicy,
    caught_up,
)
from jetspark.runners.spark.epoch_task import EpochSpec, EpochTask
from jetspark.runners.spark.records import DriverReports, SnapshotFilesRecord


def test_the_first_epoch_runs_the_whole_interval() -> None:
    assert SpanPolicy(1.0).next_span() == 1.0


def test_caught_up_sources_run_the_interval_less_the_median_rest_of_the_last_three_epochs() -> None:
    spans = SpanPolicy(1.0)
    spans.committed(1.0, 1.5, caught_up=True)  # rest 0.5
    assert spans.next_span() == pytest.approx(0.5)
    spans.committed(0.5, 0.8, caught_up=True)  # rest 0.3
    spans.committed(0.6, 5.6, caught_up=True)  # rest 5.0: one slow epoch
    assert spans.next_span() == pytest.approx(0.5), "the median of 0.5, 0.3 and 5.0"
    spans.committed(0.5, 0.7, caught_up=True)  # rest 0.2; the 0.5 is forgotten
    assert spans.next_span() == pytest.approx(0.7), "the median of 0.3, 5.0 and 0.2"


def test_sources_with_a_backlog_run_the_whole_interval_and_a_shorter_span_when_they_catch_up() -> None:
    spans = SpanPolicy(1.0)
    spans.committed(1.0, 1.5, caught_up=False)
    assert spans.next_span() == 1.0, "a shorter span would make fewer items per epoch"
    spans.committed(1.0, 1.5, caught_up=True)
    assert spans.next_span() == pytest.approx(0.5)
    spans.committed(0.5, 1.0, caught_up=False)
    assert spans.next_span() == 1.0


def test_within_the_interval_a_backlog_span_is_the_median_of_the_spans_that_would_have_fit() -> None:
    spans = SpanPolicy(1.0, within_interval=True)
    assert spans.next_span() == 1.0, "nothing measured yet"
    spans.committed(1.0, 2.0, caught_up=False)  # would have fit with a span of 0.5
    assert spans.next_span() == pytest.approx(0.5)
    spans.committed(0.5, 1.25, caught_up=False)  # 0.4
    spans.committed(0.4, 0.5, caught_up=False)  # 0.8
    assert spans.next_span() == pytest.approx(0.5), "the median of 0.5, 0.4 and 0.8"
    spans.committed(0.5, 0.5, caught_up=False)  # 1.0; the 0.5 is forgotten
    assert spans.next_span() == pytest.approx(0.8), "the median of 0.4, 0.8 and 1.0"
    spans.committed(0.8, 0.4, caught_up=False)  # 2.0: never more than the interval
    assert spans.next_span() == 1.0


def test_within_the_interval_caught_up_sources_still_run_the_interval_less_the_rest() -> None:
    spans = SpanPolicy(1.0, within_interval=True)
    spans.committed(1.0, 1.5, caught_up=True)
    assert spans.next_span() == pytest.approx(0.5)


@pytest.mark.parametrize("fixed", [0.05, 0.3, 0.6])
@pytest.mark.parametrize("per_span", [0.2, 1.0, 2.5])
def test_within_the_interval_a_backlog_converges_on_epochs_as_long_as_the_interval(
    fixed: float, per_span: float
) -> None:
    """An epoch whose rest is a fixed cost plus a share of its span (its later stages process
    what the span made) lasts the interval after a few epochs, whatever the share, unless that
    takes a span below the least one (then it lasts what the least span takes)."""
    interval = 1.0
    fitting = max((interval - fixed) / (1 + per_span), interval * MIN_SPAN_SHARE)
    expected = fitting + fixed + per_span * fitting
    spans = SpanPolicy(interval, within_interval=True)
    durations = []
    for _ in range(12):
        span = spans.next_span()
        duration = span + fixed + per_span * span
        durations.append(duration)
        spans.committed(span, duration, caught_up=False)
    assert durations[0] == pytest.approx(1.0 + fixed + per_span), "the first epoch runs the interval"
    assert durations[-1] == pytest.approx(expected, rel=0.02)
    assert expected == pytest.approx(interval) or (fixed, per_span) == (0.6, 2.5)
    assert durations[-1] == pytest.approx(durations[-2], rel=0.02), "and stays there"


def test_an_epoch_whose_fixed_cost_exceeds_the_interval_leaves_the_sources_their_least_span() -> None:
    spans = SpanPolicy(0.25, within_interval=True)
    for _ in range(6):
        span = spans.next_span()
        spans.committed(span, span + 0.4, caught_up=False)
    assert spans.next_span() == pytest.approx(0.25 * MIN_SPAN_SHARE)


def test_a_rest_longer_than_the_interval_leaves_caught_up_sources_a_share_of_it() -> None:
    spans = SpanPolicy(0.5)
    spans.committed(0.5, 3.0, caught_up=True)
    assert spans.next_span() == pytest.approx(0.5 * MIN_SPAN_SHARE)


def test_an_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="must be positive, not 0"):
        SpanPolicy(0)


def test_sources_caught_up_only_when_every_task_measured_sat_idle_long_enough() -> None:
    assert not caught_up(None), "nothing measured: assume a backlog"
    assert caught_up(CAUGHT_UP_IDLE_SHARE)
    assert not caught_up(CAUGHT_UP_IDLE_SHARE - 0.01)


@given(
    interval=st.floats(0.01, 100),
    epochs=st.lists(st.tuples(st.floats(0, 100), st.floats(0, 1000), st.booleans()), max_size=10),
)
def test_the_span_stays_within_its_bounds(interval: float, epochs: list[tuple[float, float, bool]]) -> None:
    spans = SpanPolicy(interval)
    within = SpanPolicy(interval, within_interval=True)
    for span, duration, idle in epochs:
        spans.committed(span, duration, idle)
        within.committed(span, duration, idle)
        assert interval * MIN_SPAN_SHARE <= spans.next_span() <= interval
        assert interval * MIN_SPAN_SHARE <= within.next_span() <= interval
        if not idle:
            assert spans.next_span() == interval


def test_the_driver_takes_the_least_idle_share_of_the_stages_asked_for() -> None:
    records = [
        (0, SnapshotFilesRecord(-1, 0, 0, (), (), 0.9)),
        (1, SnapshotFilesRecord(-1, 0, 1, (), (), 0.4)),
        (0, SnapshotFilesRecord(-1, 1, 0, (), (), 0.0)),  # a downstream stage: waits for its input
        (1, SnapshotFilesRecord(-1, 2, 1, (), ())),  # sent by a task that measured nothing
    ]
    reports = DriverReports.of(records, [])
    assert reports.least_idle_share([0]) == 0.4
    assert reports.least_idle_share([0, 1]) == 0.0
    assert reports.least_idle_share([2]) is None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


def sources_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, span: float) -> tuple[EpochTask, Clock]:
    """A task of a sources' stage, its clock in the test's hands, its snapshot context a stand-in
    (this measures the loop's rounds, nothing else)."""
    dag = DAG()
    dag.new_vertex("source", P.generator_stream(count=10), 1)
    plan = build_plan(dag, JobConfig(member_count=1), 1, job_id="job-1")
    clock = Clock()
    monkeypatch.setattr(epoch_task, "time", clock)
    task = EpochTask(EpochSpec(str(tmp_path), "job", 0, None, -1, span), plan, ["source"], 0, 1, None)
    task.context = SimpleNamespace(active_tasklets=0)  # type: ignore[assignment]
    return task, clock


def run_rounds(task: EpochTask, clock: Clock, until: float, step: float, progress: bool) -> None:
    """Rounds of the engine's loop up to `until`: tick, then (for a round without progress) idle."""
    while clock.now < until - 1e-9:
        clock.now += step
        task.on_tick()
        if not progress:
            task.on_idle()


def test_a_task_whose_sources_always_made_progress_was_never_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, clock = sources_task(tmp_path, monkeypatch, span=1.0)
    assert task.idle_share == -1.0, "its span has not begun"
    task.on_tick()
    run_rounds(task, clock, 101.0, 0.01, progress=True)
    assert task.idle_share == 0.0
    assert task.report(-1, 0).idle_share == 0.0


def test_a_task_idle_for_the_second_half_of_its_span_reports_about_half(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, clock = sources_task(tmp_path, monkeypatch, span=1.0)
    task.on_tick()
    run_rounds(task, clock, 100.5, 0.01, progress=True)
    run_rounds(task, clock, 101.5, 0.01, progress=False)  # the span ends at 101.0
    assert task.idle_share == pytest.approx(0.5, abs=0.03), "idle after the span's end does not count"
    assert caught_up(task.idle_share)


def test_idle_rounds_between_busy_ones_count_only_from_the_second_in_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone round without progress is the loop going round, not time spent waiting."""
    task, clock = sources_task(tmp_path, monkeypatch, span=1.0)
    task.on_tick()
    for _ in range(50):
        run_rounds(task, clock, clock.now + 0.01, 0.01, progress=True)
        run_rounds(task, clock, clock.now + 0.01, 0.01, progress=False)
    assert task.idle_share == 0.0
    assert not caught_up(task.idle_share)


def test_rounds_without_progress_while_a_processor_holds_items_are_a_backlog_not_idleness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that holds its input (a slow sink, a back-pressured edge) keeps the sources busy
    for the next epoch: a shorter span would only move fewer items per epoch."""
    task, clock = sources_task(tmp_path, monkeypatch, span=1.0)
    holding = SimpleNamespace(is_done=False, streams=[], pending_count=lambda: 3)
    task.tasklets = [holding]  # type: ignore[list-item]
    task.on_tick()
    run_rounds(task, clock, 100.5, 0.01, progress=False)
    holding.pending_count = lambda: 0  # drained: now the member waits for its sources
    run_rounds(task, clock, 101.0, 0.01, progress=False)
    assert task.idle_share == pytest.approx(0.5, abs=0.03)


def test_the_switch_keeps_every_span_at_the_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SWITCH, "interval")
    spans = SpanPolicy(1.0)
    spans.committed(1.0, 1.5, caught_up=True)
    assert spans.next_span() == 1.0


def test_an_epoch_with_a_task_that_reported_no_snapshot_is_never_committed() -> None:
    """Every stage runs one task per member, and each reports its snapshot files (or that its
    processors completed). A task that ended without one would leave its processors' state out
    of the committed snapshot: the driver names it and aborts the epoch instead."""
    from jetspark.runners.spark.epochs import EpochJob

    stages = SimpleNamespace(stages=[SimpleNamespace(index=0), SimpleNamespace(index=1)])
    job = SimpleNamespace(plan=SimpleNamespace(stages=stages), member_count=2)
    every = [(m, SnapshotFilesRecord(-1, s, m, (), ())) for s in (0, 1) for m in (0, 1)]
    assert EpochJob._unreported(job, DriverReports.of(every, [])) == []  # type: ignore[arg-type]
    assert EpochJob._unreported(job, DriverReports.of(every[:3], [])) == [(1, 1)]  # type: ignore[arg-type]


def test_the_engine_loop_is_told_when_the_span_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A quiet source's loop sleeps 10 ms at a time; told the span's end, it wakes then, so the
    epoch's terminal snapshot starts on time."""
    task, _clock = sources_task(tmp_path, monkeypatch, span=2.5)  # at 100.0
    task.engine = SimpleNamespace(wake_at=None)  # type: ignore[assignment]
    task.on_tick()
    assert task.engine.wake_at == pytest.approx(102.5)

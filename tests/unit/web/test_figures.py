"""What the job page makes of raw figures: sampled rates and back-pressure shares, watermarks as
times, processors' own counters, failures, epochs, bounded Spark links, and the SVG charts."""

from __future__ import annotations

import re
from typing import Any

import pytest

from jetspark.core.errors import JobFailedError
from jetspark.runners.job import EpochStats, JobFailure, JobHandle, JobStatus
from jetspark.runners.spark.epoch_stats import EpochLedger
from jetspark.runners.spark.records import DriverReports
from jetspark.web import figures
from jetspark.web.charts import duration_chart, rate_chart
from jetspark.web.history import History


def test_rates_and_backpressure_come_from_the_last_two_samples() -> None:
    history = History()
    history.add(100.0, {"v": {"received": 0, "emitted": 0, "backpressured_ms": 0}})
    assert history.rates({"v": 2}) == {}  # one sample: nothing to compare yet
    history.add(102.0, {"v": {"received": 400, "emitted": 100, "backpressured_ms": 1000}})
    rates = history.rates({"v": 2})["v"]
    # 2 processors over 2 s: 4 s of processor time, 1 s of it back-pressured
    assert (rates.rate_in, rates.rate_out, rates.backpressure) == (200.0, 50.0, 0.25)
    history.add(103.0, {"v": {"received": 400, "emitted": 100, "backpressured_ms": 9000}})
    assert history.rates({"v": 2})["v"].backpressure == 1.0  # capped: read times are not exact
    assert history.series("v") == ([102.0, 103.0], [200.0, 0.0], [50.0, 0.0])


def test_a_history_keeps_the_last_minutes_only() -> None:
    history = History()
    for second in range(1000):
        history.add(float(second), {"v": {"received": second}})
    assert len(history.samples) == 301 and history.samples[0].at == 699.0


@pytest.mark.parametrize(
    ("share", "level"),
    [(None, "none"), (0.0, "ok"), (0.099, "ok"), (0.1, "low"), (0.49, "low"), (0.5, "high")],
)
def test_backpressure_levels(share: float | None, level: str) -> None:
    assert figures.backpressure_level(share) == level


def test_a_watermark_in_milliseconds_since_1970_reads_as_a_time_with_its_lag() -> None:
    shown = figures.watermark(1_700_000_000_250, now=1_700_000_012.0)
    assert shown["watermark_time"] == shown["watermark_text"] == "2023-11-14 22:13:20.250"
    assert shown["watermark_lag"] == 11.8
    assert figures.watermark(4990, now=1_700_000_012.0) == {
        "watermark": 4990,
        "watermark_time": None,
        "watermark_lag": None,
        "watermark_text": 4990,  # not a time: the number itself
    }


def test_custom_metrics_are_the_figures_the_engine_does_not_make() -> None:
    found = {"received": 1, "emitted": 2, "backpressured_ms": 3, "queued": 0, "input_watermark": 9}
    assert figures.custom_metrics({**found, "late_items_dropped": 4, "a_count": 1}) == {
        "a_count": 1,
        "late_items_dropped": 4,
    }
    assert figures.custom_metrics(None) == {}


class Handle(JobHandle):
    """A job handle with the figures a test gives it (epochs: as an EpochJob keeps them)."""

    def __init__(self, epochs: EpochStats | None = None, **attributes: Any) -> None:
        super().__init__()
        self.name = "job"
        self._epochs = epochs
        for name, value in attributes.items():
            setattr(self, name, value)

    def epoch_stats(self) -> EpochStats | None:
        return self._epochs


def epoch_stats(
    committed: int = 0, aborted: int = 0, last_abort: str | None = None, causes: Any = ()
) -> EpochStats:
    return EpochStats(committed, aborted, last_abort, tuple(causes), None, None)


def raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:
        return caught


def test_exceptions_newest_first_with_tracebacks_and_abort_causes() -> None:
    restart = raised(JobFailedError("vertex 'v': flaky"))
    final = raised(ValueError("broken"))
    job = Handle(
        epoch_stats(last_abort="task 3 lost", causes=[{"epoch": 4, "time": 20.0, "cause": "task 3 lost"}]),
        error=final,
        status=JobStatus.FAILED,
    )
    job.failures.append(JobFailure(10.0, "restart 1", restart))
    job._finished.set()
    job._finished.set_at = 30.0
    listed = figures.exceptions(job)
    assert [e["what"] for e in listed] == ["job failed", "epoch 4 aborted", "restart 1"]
    assert listed[0]["message"] == "ValueError: broken" and "raise error" in listed[0]["traceback"]
    assert listed[1]["message"] == "task 3 lost" and listed[1]["traceback"] == ""
    assert listed[2]["traceback"].rstrip().endswith("JobFailedError: vertex 'v': flaky")


def test_without_abort_causes_the_last_abort_is_listed() -> None:
    job = Handle(epoch_stats(aborted=3, last_abort="a task failed"))
    (entry,) = figures.exceptions(job)
    assert entry["what"] == "epoch aborted (the last of 3)" and entry["message"] == "a task failed"


def test_epochs_take_their_durations_from_consecutive_commits() -> None:
    snapshots = [{"id": 7, "created": 130.0}, {"id": 6, "created": 100.5}, {"id": 5, "created": 100.0}]
    job = Handle(epoch_stats(committed=8, aborted=1, last_abort="lost"))
    shown = figures.epochs(job, snapshots)
    assert shown is not None
    assert [(e["epoch"], e["duration_s"]) for e in shown["list"]] == [(7, 29.5), (6, 0.5), (5, None)]
    assert (shown["committed"], shown["aborted"], shown["last_duration_s"]) == (8, 1, 29.5)
    assert figures.epochs(Handle(), snapshots) is None  # not a job in epochs


def test_epochs_of_a_job_that_keeps_per_epoch_figures_list_them_running_first() -> None:
    clock = [100.0]
    stats = EpochLedger(["numbers"], ["sink"], clock=lambda: clock[0], wall=lambda: clock[0])
    reports = DriverReports(["numbers", "sink"])
    reports.metrics["numbers"]["emitted"] = 40
    reports.metrics["sink"].update(received=40, bytes_written=300)
    reports.snapshot_files = [{"size": 80, "entries": 3}]
    stats.started(0)
    clock[0] = 102.0
    with stats.commit(0, reports):
        clock[0] = 102.5
    stats.started(1)
    stats.aborted(1, "task lost")
    stats.started(1)
    clock[0] = 104.0
    job = Handle(EpochStats(1, 1, "task lost", (), None, None, tuple(stats.epochs())))
    shown = figures.epochs(job, [])
    assert shown is not None
    assert [(e["epoch"], e["outcome"]) for e in shown["list"]] == [
        (1, "running"),
        (1, "aborted"),
        (0, "committed"),
    ]
    running, aborted, committed = shown["list"]
    assert shown["running"] == "epoch 1, 1.5 s" and running["duration_s"] == 1.5
    assert aborted["cause"] == "task lost" and running["cause"] == ""
    assert (committed["items_in"], committed["items_out"], committed["sink_bytes"]) == (40, 40, 300)
    assert (committed["state_bytes"], committed["state_entries"], committed["commit_ms"]) == (80, 3, 500.0)
    assert shown["last_duration_s"] == 2.5  # the committed epoch's: start to end of commit
    assert "vertices" not in committed


def test_spark_links_are_bounded_to_the_newest() -> None:
    links = [(f"Spark job {i}", f"http://ui/jobs/job/?id={i}") for i in range(25)]
    kept, left_out = figures.bounded_links(links)
    assert left_out == 15 and [k["label"] for k in kept] == [f"Spark job {i}" for i in range(15, 25)]


def test_a_rate_chart_draws_both_series_within_its_box() -> None:
    svg = rate_chart("<v>", [90.0, 95.0, 100.0], [10.0, 20.0, 40.0], [0.0, 5.0, 10.0], now=100.0, span=300.0)
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and "&lt;v&gt;" in svg
    for series in ("in", "out"):
        found = re.search(rf'<polyline class="{series}" points="([^"]*)"', svg)
        assert found is not None
        points = [tuple(map(float, p.split(","))) for p in found.group(1).split()]
        assert len(points) == 3 and all(0 <= x <= 300 and 0 <= y <= 110 for x, y in points)
        assert points[-1][0] == 292.0  # now, at the right edge
    assert ">44<" in svg  # the top of the axis: 10 % over the peak
    assert "no samples yet" in rate_chart("v", [], [], [], now=1.0, span=300.0)


def test_a_duration_chart_draws_a_bar_per_duration() -> None:
    svg = duration_chart("epoch duration", ["epoch 1", "epoch 2"], [2.0, 4.0])
    assert svg.count('<rect class="bar"') == 2 and "epoch 2: 4 s" in svg
    assert "0.55 ms" in duration_chart("snapshot duration", ["snapshot 0"], [0.0005])

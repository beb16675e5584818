"""Per-epoch figures of a job in epochs (`runners.spark.epoch_stats`), without Spark: what an epoch
that commits, completes or aborts records, and that the running epoch's live counts are added to
the committed epochs' totals exactly once."""

from __future__ import annotations

from typing import Any

from jetspark import DAG, Edge
from jetspark.processors import collect, from_iterable
from jetspark.processors import map as map_p
from jetspark.runners.spark.epoch_stats import EpochLedger
from jetspark.runners.spark.live import LiveMetrics, LiveReporter
from jetspark.runners.spark.records import DriverReports
from tests.waiting import wait_until

VERTICES = ("numbers", "square", "sink")


def dag() -> DAG:
    built = DAG()
    numbers = built.new_vertex("numbers", from_iterable(range(3)))
    square = built.new_vertex("square", map_p(lambda x: x * x))
    built.edge(Edge.between(numbers, square))
    built.edge(Edge.between(square, built.new_vertex("sink", collect())))
    return built


def outcome(items: int, backpressured: int = 0, sink_bytes: int | None = None) -> DriverReports:
    """An epoch's reports: `items` through every vertex, two snapshot files."""
    reports = DriverReports(VERTICES)
    reports.metrics["numbers"].update(emitted=items, backpressured_ms=backpressured)
    reports.metrics["square"].update(received=items, emitted=items)
    reports.metrics["sink"].update(received=items)
    if sink_bytes is not None:
        reports.metrics["sink"]["bytes_written"] = sink_bytes
    reports.snapshot_files = [{"size": 100, "entries": 2}, {"size": 50, "entries": 1}]
    return reports


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_sources_and_sinks_come_from_the_dag() -> None:
    stats = EpochLedger.of_dag(dag())
    assert stats.sources == ("numbers",) and stats.sinks == ("sink",)


def test_a_source_feeding_two_edges_counts_each_item_in_once() -> None:
    built = dag()
    built.edge(Edge.from_(built.get_vertex("numbers"), 1).to(built.new_vertex("copy", collect())))
    stats = EpochLedger.of_dag(built)
    assert stats.fan_out == {"numbers": 2} and sorted(stats.sinks) == ["copy", "sink"]
    reports = DriverReports([*VERTICES, "copy"])
    reports.metrics["numbers"]["emitted"] = 60  # 30 items, each to both edges
    reports.metrics["sink"]["received"] = reports.metrics["copy"]["received"] = 30
    stats.started(0)
    with stats.commit(0, reports):
        pass
    (epoch,) = stats.epochs()
    assert (epoch["items_in"], epoch["items_out"]) == (30, 60)  # two sinks received 30 each


def test_a_committed_epoch_records_items_state_sink_bytes_and_its_commit_time() -> None:
    clock = Clock()
    stats = EpochLedger(["numbers"], ["sink"], clock=clock, wall=clock)
    stats.started(4)
    clock.now = 2.5
    with stats.commit(4, outcome(30, backpressured=7, sink_bytes=1234)):
        clock.now = 2.75  # the driver's commit takes 250 ms
    (epoch,) = stats.epochs()
    assert epoch["epoch"] == 4 and epoch["outcome"] == "committed"
    assert (epoch["started"], epoch["ended"], epoch["duration_s"]) == (0.0, 2.75, 2.75)
    assert epoch["commit_ms"] == 250.0
    assert (epoch["items_in"], epoch["items_out"]) == (30, 30)
    assert (epoch["state_bytes"], epoch["state_entries"], epoch["state_files"]) == (150, 3, 2)
    assert epoch["sink_bytes"] == 1234
    assert epoch["vertices"]["numbers"] == {"received": 0, "emitted": 30, "backpressured_ms": 7}
    assert stats.running() is None
    assert stats.counts()["sink"] == {"received": 30, "emitted": 0, "backpressured_ms": 0}


def test_a_commit_that_raises_does_not_count_and_the_abort_names_its_cause() -> None:
    stats = EpochLedger(["numbers"], ["sink"])
    stats.started(1)
    try:
        with stats.commit(1, outcome(10)):
            raise OSError("disk full")
    except OSError:
        stats.aborted(1, "committing its snapshot failed on the driver: OSError: disk full")
    (epoch,) = stats.epochs()
    assert epoch["outcome"] == "aborted" and "disk full" in epoch["cause"]
    assert epoch["sink_bytes"] is None and epoch["items_in"] is None  # nothing of it counted
    assert stats.counts() == {}


def test_an_aborted_epochs_figures_are_shown_but_not_added_to_the_totals() -> None:
    stats = EpochLedger(["numbers"], ["sink"])
    stats.started(0)
    with stats.commit(0, outcome(5)):
        pass
    stats.started(1)
    stats.aborted(1, "task 3 lost", outcome(99))
    stats.started(1)
    stats.completed(1, outcome(2))
    listed = stats.epochs()
    assert [(e["epoch"], e["outcome"]) for e in listed] == [
        (1, "completed"),
        (1, "aborted"),
        (0, "committed"),
    ]
    assert listed[1]["items_in"] == 99 and listed[1]["cause"] == "task 3 lost"
    assert listed[0]["sink_bytes"] is None  # no sink here counts bytes
    assert stats.counts()["numbers"]["emitted"] == 7  # 5 + 2: the aborted 99 do not count


def test_an_epoch_stopped_on_request_is_listed_as_aborted_when_the_next_starts() -> None:
    stats = EpochLedger(["numbers"], ["sink"])
    stats.started(3)
    stats.started(3, commit_only=True)  # a suspend: restore once more and stop; no epoch of its own
    assert [(e["epoch"], e["outcome"]) for e in stats.epochs()] == [(3, "aborted")]
    assert "asked to cancel, suspend or restart" in stats.epochs()[0]["cause"]
    assert stats.running() is None


def test_the_running_epochs_live_counts_are_added_once_and_dropped_when_it_ends() -> None:
    live = LiveMetrics("127.0.0.1")
    stats = EpochLedger(["numbers"], ["sink"], live)
    try:
        stats.started(0)
        with stats.commit(0, outcome(10)):
            pass
        stats.started(1)
        task = LiveReporter(live.address, stage=0, member=0, attempt=5, epoch=1)
        late = LiveReporter(live.address, stage=0, member=1, attempt=4, epoch=0)  # epoch 0's, late
        late.send({"numbers": {"emitted": 1000}})
        task.send({"numbers": {"emitted": 4, "backpressured_ms": 9}, "sink": {"received": 3}})
        wait_until(lambda: stats.counts()["sink"]["received"] == 13, "the running epoch's report")
        assert stats.counts()["numbers"] == {"received": 0, "emitted": 14, "backpressured_ms": 9}
        running: Any = stats.running()
        assert running["epoch"] == 1 and running["outcome"] == "running"
        assert (running["items_in"], running["items_out"]) == (4, 3)
        newest = stats.epochs()[0]  # read once: its duration grows between two reads
        assert newest == running | {"duration_s": newest["duration_s"]}
        with stats.commit(1, outcome(4)):
            pass
        task.send({"numbers": {"emitted": 4}})  # epoch 1's last report, after its commit: ignored
        marker = LiveReporter(live.address, stage=0, member=0, attempt=9, epoch=2)
        stats.started(2)
        marker.send({"sink": {"received": 1}})
        wait_until(lambda: stats.counts()["sink"]["received"] == 15, "epoch 2's report")
        assert stats.counts()["numbers"]["emitted"] == 14  # 10 + 4 committed, none twice
        for reporter in (task, late, marker):
            reporter.close()
    finally:
        stats.close()
    assert stats.running() is None

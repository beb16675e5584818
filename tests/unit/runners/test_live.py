"""Live counts of a running Spark job (`runners.spark.live`), without Spark: what the driver sums
from the tasks' datagrams, which ones it ignores, and that a retried task replaces its first try."""

from __future__ import annotations

import json
import socket

from jetspark.runners.spark.live import LiveMetrics, LiveReporter
from tests.waiting import wait_until


def test_the_driver_sums_the_latest_report_of_each_member_and_ignores_the_rest() -> None:
    live = LiveMetrics("127.0.0.1")
    try:
        first = LiveReporter(live.address, stage=0, member=0, attempt=1)
        second = LiveReporter(live.address, stage=0, member=1, attempt=2)
        first.send({"numbers": {"received": 0, "emitted": 100}})
        second.send({"numbers": {"received": 0, "emitted": 50}})
        wait_until(
            lambda: live.figures() == {"numbers": {"received": 0, "emitted": 150, "backpressured_ms": 0}},
            "two members",
        )
        first.send({"numbers": {"received": 0, "emitted": 300}})  # a later report replaces the earlier
        wait_until(lambda: live.figures()["numbers"]["emitted"] == 350, "the newer report")
        retry = LiveReporter(live.address, stage=0, member=0, attempt=7)  # a retry of member 0's task
        retry.send({"numbers": {"received": 0, "emitted": 10}})
        wait_until(lambda: live.figures()["numbers"]["emitted"] == 60, "the retry's report")
        first.send({"numbers": {"received": 0, "emitted": 999}})  # the first try, late: ignored
        host, port, _token = live.address
        stray = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        forged = {"t": "guess", "s": 0, "m": 0, "a": 99, "v": {"numbers": [0, 10**9]}}
        stray.sendto(json.dumps(forged).encode(), (host, port))
        stray.sendto(b"\x80not json", (host, port))
        stray.sendto(json.dumps({"t": live.address[2], "s": "x"}).encode(), (host, port))
        stray.close()
        marker = LiveReporter(live.address, stage=1, member=0, attempt=1)
        marker.send({"sink": {"received": 5, "emitted": 0}})  # sent after the rest: all were read
        wait_until(lambda: "sink" in live.figures(), "the marker")
        assert live.figures() == {
            "numbers": {"received": 0, "emitted": 60, "backpressured_ms": 0},
            "sink": {"received": 5, "emitted": 0, "backpressured_ms": 0},
        }
        live.reset()
        assert live.figures() == {}
        for reporter in (first, second, retry, marker):
            reporter.close()
    finally:
        live.close()


def test_a_reporter_sends_at_most_once_per_interval() -> None:
    live = LiveMetrics("127.0.0.1")
    calls = []

    def counts() -> dict[str, dict[str, int]]:
        calls.append(1)
        return {"v": {"received": len(calls), "emitted": 0}}

    try:
        reporter = LiveReporter(live.address, stage=0, member=0, attempt=1)
        for _ in range(1000):
            reporter.tick(counts, interval=60)
        assert len(calls) == 1  # the counts are not even read between reports
        wait_until(
            lambda: live.figures() == {"v": {"received": 1, "emitted": 0, "backpressured_ms": 0}},
            "one report",
        )
        reporter.close()
    finally:
        live.close()


def test_back_pressure_travels_and_only_the_followed_epochs_reports_count() -> None:
    live = LiveMetrics("127.0.0.1")
    try:
        batch = LiveReporter(live.address, stage=0, member=0, attempt=1)  # no epoch: a batch job's
        live.follow(3)
        old = LiveReporter(live.address, stage=0, member=0, attempt=1, epoch=2)
        running = LiveReporter(live.address, stage=0, member=1, attempt=2, epoch=3)
        batch.send({"numbers": {"emitted": 500}})
        old.send({"numbers": {"emitted": 700}})
        running.send({"numbers": {"emitted": 40, "backpressured_ms": 250}})
        wait_until(lambda: "numbers" in live.figures(), "epoch 3's report")
        assert live.figures() == {"numbers": {"received": 0, "emitted": 40, "backpressured_ms": 250}}
        live.pause()  # the epoch ended: its late reports are dropped
        running.send({"numbers": {"emitted": 41}})
        live.follow(4)
        marker = LiveReporter(live.address, stage=1, member=0, attempt=3, epoch=4)
        marker.send({"sink": {"received": 1}})
        wait_until(lambda: "sink" in live.figures(), "epoch 4's report")
        assert "numbers" not in live.figures()
        for reporter in (batch, old, running, marker):
            reporter.close()
    finally:
        live.close()

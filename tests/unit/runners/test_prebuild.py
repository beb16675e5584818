"""The next epoch's RDDs are built while the current epoch runs (`prebuild.Prebuilt`)."""

from __future__ import annotations

import threading

import pytest

from jetspark.runners.spark.prebuild import Prebuilt
from tests.waiting import wait_until


class Builds:
    """A build that counts its calls, records its thread, and fails while told to."""

    def __init__(self) -> None:
        self.calls = 0
        self.threads: list[str] = []
        self.failing = 0
        self.release = threading.Event()
        self.release.set()

    def __call__(self) -> int:
        self.release.wait(30)
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        if self.failing:
            self.failing -= 1
            raise OSError(f"build {self.calls} failed")
        return self.calls


def test_without_a_build_ahead_take_builds_on_the_spot() -> None:
    builds = Builds()
    prebuilt = Prebuilt(builds, "job")
    assert prebuilt.take() == 1
    assert builds.threads == [threading.current_thread().name]
    assert (prebuilt.ahead, prebuilt.on_the_spot) == (0, 1)


def test_a_build_started_ahead_is_handed_over_once_and_not_built_again() -> None:
    builds = Builds()
    builds.release.clear()  # the background build waits until the test lets it go
    prebuilt = Prebuilt(builds, "job")
    prebuilt.start_next()
    prebuilt.start_next()  # one build ahead at most
    builds.release.set()
    assert prebuilt.take() == 1
    assert builds.calls == 1 and builds.threads == ["jetspark-prebuild-job"]
    assert (prebuilt.ahead, prebuilt.on_the_spot) == (1, 0)
    assert prebuilt.take() == 2, "nothing ahead any more: a new build"
    assert (prebuilt.ahead, prebuilt.on_the_spot) == (1, 1)


def test_a_background_build_that_failed_is_built_again_where_it_is_needed() -> None:
    builds = Builds()
    builds.failing = 1
    prebuilt = Prebuilt(builds, "job")
    prebuilt.start_next()
    assert prebuilt.take() == 2
    assert builds.threads == ["jetspark-prebuild-job", threading.current_thread().name]


def test_a_build_that_fails_on_the_spot_raises_its_error() -> None:
    builds = Builds()
    builds.failing = 2
    prebuilt = Prebuilt(builds, "job")
    prebuilt.start_next()
    with pytest.raises(OSError, match="build 2 failed"):
        prebuilt.take()


def test_a_background_build_that_does_not_finish_in_time_is_left_and_built_on_the_spot() -> None:
    """A stuck build never holds the epochs up: after the wait, `take` builds on the spot, and the
    stuck build's late result is handed to nobody."""
    gate = threading.Event()
    calls: list[str] = []

    def build() -> str:
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            gate.wait(30)  # the background build is stuck until the test lets it go
            return "stale"
        return f"fresh{len(calls)}"

    prebuilt = Prebuilt(build, "job", wait=0.01)
    prebuilt.start_next()
    wait_until(lambda: len(calls) == 1, "the background build to start")
    assert prebuilt.take() == "fresh2"
    assert (prebuilt.ahead, prebuilt.on_the_spot) == (0, 1)
    gate.set()
    wait_until(
        lambda: not any(t.name == "jetspark-prebuild-job" for t in threading.enumerate()),
        "the stuck build to end",
    )
    assert prebuilt.take() == "fresh3", "the stuck build's late result went nowhere"


def test_a_delayed_build_starts_at_once_when_take_asks_for_it() -> None:
    """`start_next(delay)` keeps the build off the driver while the epoch's job is submitted; a
    `take` before the delay is up does not wait for it (here an hour: a missed hurry would make
    `take` give up after its one-minute wait and build on the spot)."""
    builds = Builds()
    prebuilt = Prebuilt(builds, "job", wait=60)
    prebuilt.start_next(delay=3600)
    assert prebuilt.take() == 1
    assert builds.threads == ["jetspark-prebuild-job"]
    assert (prebuilt.ahead, prebuilt.on_the_spot) == (1, 0)


def test_a_delayed_build_runs_when_its_delay_is_up_without_a_take() -> None:
    builds = Builds()
    prebuilt = Prebuilt(builds, "job")
    prebuilt.start_next(delay=0.01)
    wait_until(lambda: builds.calls == 1, what="the delayed build ran")
    assert builds.threads == ["jetspark-prebuild-job"]

"""A long call that only waited for a CPU is told from one that blocked (`testing._cpu_wait`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jetspark.testing._cpu_wait import CpuWait

HAS_SCHEDSTAT = Path(f"/proc/self/task/{os.getpid()}/schedstat").exists()
needs_schedstat = pytest.mark.skipif(not HAS_SCHEDSTAT, reason="no per-thread schedstat (not Linux)")


def measured(call: object) -> float:
    meter = CpuWait()
    start = time.perf_counter()
    meter.before_call(start)
    call()  # type: ignore[operator]
    end = time.perf_counter()
    return meter.blocked_seconds(end - start, end)


def spin(seconds: float) -> None:
    """Run on the CPU until the thread itself has used `seconds` of it."""
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass


@pytest.fixture
def one_busy_cpu() -> Iterator[None]:
    """This process and a spinning child share one CPU: a runnable thread waits for it half the
    time, as on a CI runner whose cores are busy."""
    before = os.sched_getaffinity(0)
    cpu = min(before)
    os.sched_setaffinity(0, {cpu})
    child = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"]
    )
    try:
        yield
    finally:
        child.kill()
        child.wait()
        os.sched_setaffinity(0, before)


@needs_schedstat
def test_a_sleep_is_blocked_time() -> None:
    assert measured(lambda: time.sleep(0.2)) >= 0.15


@needs_schedstat
@pytest.mark.usefixtures("one_busy_cpu")
def test_a_computation_that_waited_for_a_shared_cpu_is_not_blocked_time() -> None:
    start = time.perf_counter()
    blocked = measured(lambda: spin(0.2))
    wall = time.perf_counter() - start
    assert wall > 0.3  # it did wait: the CPU was shared with the spinning child
    assert blocked < 0.1, (blocked, wall)


def test_without_schedstat_every_second_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("jetspark.testing._cpu_wait._read", lambda now: (now, -1, -1))
    assert measured(lambda: spin(0.05)) >= 0.05

"""The loop's back-off when no tasklet makes progress: Jet's spin, yield, then sleeps doubling up
to 1 ms; after a quarter second of that, 10 ms sleeps (a quiet stream's cost)."""

from __future__ import annotations

import pytest

from jetspark.engine import execution
from jetspark.engine.execution import IdleStrategy


class FakeClock:
    """`time.sleep` and `time.monotonic` of the module, without waiting: a sleep moves the clock."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(execution.time, "sleep", fake.sleep)
    monkeypatch.setattr(execution.time, "monotonic", fake.monotonic)
    return fake


def idle_for(strategy: IdleStrategy, clock: FakeClock, seconds: float) -> None:
    start = clock.now
    while clock.now - start < seconds:
        strategy.idle()


def test_ten_spins_then_ten_yields_then_sleeps_doubling_to_the_maximum(clock: FakeClock) -> None:
    strategy = IdleStrategy(min_sleep=25e-6, max_sleep=1e-3)
    for _ in range(10):
        strategy.idle()
    assert clock.sleeps == []
    for _ in range(10):
        strategy.idle()
    assert clock.sleeps == [0] * 10
    for _ in range(8):
        strategy.idle()
    assert clock.sleeps[10:] == pytest.approx([25e-6, 50e-6, 100e-6, 200e-6, 400e-6, 800e-6, 1e-3, 1e-3])


def test_after_the_deep_delay_at_the_maximum_sleeps_grow_to_the_deep_sleep(clock: FakeClock) -> None:
    strategy = IdleStrategy(max_sleep=1e-3, deep_after=0.25, deep_sleep=10e-3)
    idle_for(strategy, clock, 0.2)
    assert max(clock.sleeps) == pytest.approx(1e-3), "a fifth of a second of quiet: Jet's back-off"
    idle_for(strategy, clock, 0.1)
    assert clock.sleeps[-1] == pytest.approx(10e-3)
    idle_for(strategy, clock, 1.0)
    assert max(clock.sleeps) == pytest.approx(10e-3), "never longer than the deep sleep"
    assert all(s == pytest.approx(10e-3) for s in clock.sleeps[-80:]), "a quiet loop wakes 100 times a second"


def test_progress_starts_the_back_off_over_from_spinning(clock: FakeClock) -> None:
    strategy = IdleStrategy(max_sleep=1e-3, deep_after=0.25, deep_sleep=10e-3)
    idle_for(strategy, clock, 1.0)
    assert clock.sleeps[-1] == pytest.approx(10e-3)
    strategy.reset()
    clock.sleeps.clear()
    for _ in range(21):
        strategy.idle()
    assert clock.sleeps == [0] * 10 + [pytest.approx(25e-6)]
    idle_for(strategy, clock, 0.2)
    assert max(clock.sleeps) == pytest.approx(1e-3), "the deep delay counts from the new quiet"


def test_a_deep_sleep_below_the_maximum_keeps_the_maximum(clock: FakeClock) -> None:
    strategy = IdleStrategy(max_sleep=5e-3, deep_after=0.0, deep_sleep=1e-3)
    idle_for(strategy, clock, 1.0)
    assert max(clock.sleeps) == pytest.approx(5e-3)


def test_a_deep_sleep_ends_by_the_time_the_loop_is_due_to_act(clock: FakeClock) -> None:
    """A quiet source's span ends at a known time: the sleep before it is cut short to end then,
    so that the epoch's snapshot starts on time (its fixed cost)."""
    strategy = IdleStrategy(max_sleep=1e-3, deep_after=0.25, deep_sleep=10e-3)
    idle_for(strategy, clock, 0.5)
    assert clock.sleeps[-1] == pytest.approx(10e-3)
    due = clock.now + 0.004
    strategy.idle(wake_at=due)
    assert clock.now == pytest.approx(due)
    strategy.idle(wake_at=due)
    assert clock.sleeps[-1] == 0.0, "past the time: no sleep"
    strategy.idle(wake_at=None)
    assert clock.sleeps[-1] == pytest.approx(10e-3)


def test_sleeps_up_to_the_maximum_are_not_cut(clock: FakeClock) -> None:
    strategy = IdleStrategy(max_sleep=1e-3, deep_after=0.25, deep_sleep=10e-3)
    for _ in range(30):
        strategy.idle(wake_at=clock.now)
    assert clock.sleeps[-1] == pytest.approx(1e-3), "Jet's back-off as it was"


def test_closes_still_running_share_one_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed execution waits for off-thread `close()` calls with one deadline for all: the
    second tasklet gets what the first left of it, not a fresh wait (hanging closes must not add up)."""
    timeouts: list[float] = []

    class Hanging:
        name = "vertex 'v' processor #0"

        def wait_for_close(self, timeout: float | None = None) -> None:
            assert timeout is not None
            timeouts.append(timeout)
            fake_now[0] += timeout  # the wait used all of it

        def closing_under_way(self) -> bool:
            return True

    fake_now = [100.0]
    monkeypatch.setattr(execution.time, "monotonic", lambda: fake_now[0])
    run = execution.Execution.__new__(execution.Execution)
    run.tasklets = [Hanging(), Hanging()]  # type: ignore[list-item]
    run._await_closes_under_way()
    assert timeouts == [execution.CLOSE_WAIT_SECONDS, 0.0]

"""Ordered run ids (`jetspark.core.runs`): a later run of an epoch, and any run of a later epoch,
is newer; anything that is not an ordered id is never newer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark.core.runs import is_newer_run, is_ordered, ordered_run_id


def test_a_run_made_later_for_the_same_epoch_is_newer() -> None:
    first = ordered_run_id(7)
    second = ordered_run_id(7)
    assert is_newer_run(second, first)
    assert not is_newer_run(first, second)
    assert not is_newer_run(first, first)


def test_a_later_run_is_newer_when_the_wall_clock_steps_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """NTP may set the clock back between two runs of an epoch in one driver: the later run must
    still sort after the earlier, or a late task of the aborted run would roll back the rerun's
    transactions."""
    clock = iter([2_000_000_000_000_000_000, 1_000_000_000_000_000_000, 1_000_000_000_000_000_000])
    monkeypatch.setattr("jetspark.core.runs.time.time_ns", lambda: next(clock))
    first, second, third = ordered_run_id(3), ordered_run_id(3), ordered_run_id(3)
    assert is_newer_run(second, first) and is_newer_run(third, second)


@given(st.integers(0, 2**32 - 2), st.integers(1, 1000))
def test_any_run_of_a_later_epoch_is_newer_whatever_the_clock(epoch: int, later: int) -> None:
    later_epoch = min(epoch + later, 2**32 - 1)
    newer = ordered_run_id(later_epoch)
    # a run of the earlier epoch made with a clock far ahead (the highest time there is)
    older = f"{epoch:08x}{'f' * 16}0000"
    assert is_ordered(newer) and is_ordered(older)
    assert is_newer_run(newer, older)


def test_hashes_and_other_ids_are_never_newer() -> None:
    run = ordered_run_id(3)
    for other in ("", "3f2a9c0d11aa", "exec-1", run.upper(), run + "0"):
        assert not is_ordered(other)
        assert not is_newer_run(other, run)
        assert not is_newer_run(run, other)

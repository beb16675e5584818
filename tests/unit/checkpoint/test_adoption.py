"""`snapshot_io.adopters`: the entries of processors that completed in an earlier epoch go to live ones."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jetspark.runners.snapshot_io import adopters


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1)))))
def test_every_completed_processor_has_one_live_adopter_while_any_is_live(case: tuple[int, set[int]]) -> None:
    total, done = case
    chosen = adopters("v", total, [("v", i) for i in done] + [("other", 0)])
    if len(done) == total:
        assert chosen == {}  # the whole vertex completed: nobody restores anything
        return
    assert set(chosen) == done
    assert all(adopter not in done and 0 <= adopter < total for adopter in chosen.values())
    assert chosen == adopters(
        "v", total, [("v", i) for i in sorted(done, reverse=True)]
    )  # same in every task

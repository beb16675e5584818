"""An epoch's sources run the interval less what the last epochs took beyond their span."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark.runners.spark.epoch_span import MIN_SPAN_SHARE, SpanPolicy


def test_the_first_epoch_runs_the_whole_interval() -> None:
    assert SpanPolicy(1.0).next_span() == 1.0


def test_the_span_is_the_interval_less_the_median_rest_of_the_last_three_epochs() -> None:
    spans = SpanPolicy(1.0)
    spans.committed(1.0, 1.5)  # rest 0.5
    assert spans.next_span() == pytest.approx(0.5)
    spans.committed(0.5, 0.8)  # rest 0.3
    spans.committed(0.6, 5.6)  # rest 5.0: one slow epoch
    assert spans.next_span() == pytest.approx(0.5), "the median of 0.5, 0.3 and 5.0"
    spans.committed(0.5, 0.7)  # rest 0.2; the 0.5 is forgotten
    assert spans.next_span() == pytest.approx(0.7), "the median of 0.3, 5.0 and 0.2"


def test_a_rest_longer_than_the_interval_leaves_the_sources_a_share_of_it() -> None:
    spans = SpanPolicy(0.5)
    spans.committed(0.5, 3.0)
    assert spans.next_span() == pytest.approx(0.5 * MIN_SPAN_SHARE)


def test_an_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="must be positive, not 0"):
        SpanPolicy(0)


@given(
    interval=st.floats(0.01, 100),
    epochs=st.lists(st.tuples(st.floats(0, 100), st.floats(0, 1000)), max_size=10),
)
def test_the_span_stays_within_its_bounds(interval: float, epochs: list[tuple[float, float]]) -> None:
    spans = SpanPolicy(interval)
    for span, duration in epochs:
        spans.committed(span, duration)
        assert interval * MIN_SPAN_SHARE <= spans.next_span() <= interval

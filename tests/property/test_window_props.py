"""Window processors against plain-Python references, on random event streams with watermarks.

Each example runs the processor through the test kit in all its modes (snapshots, restores,
restores into other processor counts), so a property failing names the mode that broke it.
The references: a sliding window's result per (window, key) is the count of the on-time items
in it, an item being late when a window holding it was already emitted (Jet's rule); a session
is a maximal run of a key's on-time items with gaps below the session gap, an item being late
when its timestamp is below the last watermark.
"""

from __future__ import annotations

import operator
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark import processors as P
from jetspark.core import Watermark
from jetspark.processors import WindowPolicy
from jetspark.testing import verify_processor
from tests.unit.processors.windowing import late_flags, results_counter, session_counts, window_counts

ts_of = operator.itemgetter(0)
key_of = operator.itemgetter(1)


@st.composite
def streams(draw: Any) -> list[Any]:
    """Events `(timestamp, key)` in any order, with rising watermarks among them."""
    events = draw(st.lists(st.tuples(st.integers(0, 60), st.sampled_from("abc")), max_size=25))
    stream: list[Any] = []
    wm = -10
    for event in events:
        if draw(st.booleans()) and draw(st.booleans()):
            wm += draw(st.integers(1, 15))
            stream.append(Watermark(wm))
        stream.append(event)
    return stream


policies = st.builds(
    lambda slide, factor, offset: WindowPolicy.sliding(slide * factor, slide, offset),
    st.integers(1, 8),
    st.integers(1, 4),
    st.integers(0, 7),
)


@settings(max_examples=60, deadline=None)
@given(streams(), policies)
def test_sliding_windows_count_the_on_time_items_of_each_window(
    stream: list[Any], policy: WindowPolicy
) -> None:
    events = [x for x in stream if not isinstance(x, Watermark)]
    late = late_flags(policy, stream, ts_of)
    expected = window_counts(policy, [e for e, is_late in zip(events, late) if not is_late])

    def check(mode: str, outputs: list[list[Any]]) -> None:
        assert results_counter(outputs[0]) == expected, mode
        assert_results_before_their_watermark(mode, outputs[0])

    (
        verify_processor(P.aggregate_to_sliding_window(key_of, ts_of, policy, P.counting()))
        .input(stream)
        .partitioned_input(key_of)
        .disable_logging()
        .assert_output(1, check)
    )


@settings(max_examples=30, deadline=None)
@given(streams(), policies)
def test_two_stages_give_what_one_stage_gives(stream: list[Any], policy: WindowPolicy) -> None:
    """Stage 1's frames, fed to stage 2 with the same watermarks, give the single stage's windows."""
    events = [x for x in stream if not isinstance(x, Watermark)]
    frames_stream: list[Any] = []
    frames = verify_processor(P.accumulate_by_frame(key_of, ts_of, policy, P.counting()))
    frames.input(stream).disable_snapshots().disable_logging().assert_output(
        1, lambda mode, outputs: frames_stream.__setitem__(slice(None), outputs[0])
    )
    late = late_flags(policy, stream, ts_of)
    expected = window_counts(policy, [e for e, is_late in zip(events, late) if not is_late])

    def check(mode: str, outputs: list[list[Any]]) -> None:
        assert results_counter(outputs[0]) == expected, mode

    (
        verify_processor(P.combine_to_sliding_window(policy, P.counting()))
        .input(frames_stream)
        .partitioned_input(P.frame_entry_key)
        .disable_logging()
        .assert_output(1, check)
    )


def assert_results_before_their_watermark(mode: str, output: list[Any]) -> None:
    """A result goes out before the watermark that closes its window (or session) does."""
    highest = None
    for item in output:
        if isinstance(item, Watermark):
            highest = item.timestamp
        elif highest is not None:
            assert item.end > highest, f"{item} after Watermark({highest}) in {mode}"


def sessions_of(stream: list[Any], gap: int) -> Counter[tuple[int, int, str, int]]:
    """The sessions of the items not behind the last watermark before them."""
    wm = None
    on_time: list[tuple[int, str]] = []
    for item in stream:
        if isinstance(item, Watermark):
            wm = item.timestamp
        elif wm is None or item[0] >= wm:
            on_time.append(item)
    return session_counts(on_time, gap)


@settings(max_examples=30, deadline=None)
@given(streams(), st.integers(1, 12))
def test_session_windows_are_the_runs_of_on_time_items(stream: list[Any], gap: int) -> None:
    expected = sessions_of(stream, gap)

    def check(mode: str, outputs: list[list[Any]]) -> None:
        assert results_counter(outputs[0]) == expected, mode
        assert_results_before_their_watermark(mode, outputs[0])

    (
        verify_processor(P.aggregate_to_session_window(key_of, ts_of, gap, P.counting()))
        .input(stream)
        .partitioned_input(key_of)
        .disable_logging()
        .assert_output(1, check)
    )


def stamped(timestamps: list[int], lag: int, frame: int) -> list[Any]:
    """Each item, after a watermark whenever `floor_frame(top - lag)` rises (Jet's throttling;
    the watermark goes before the item that raised it, as Jet's `InsertWatermarksP` emits it)."""
    out: list[Any] = []
    top = last = None
    for t in timestamps:
        top = t if top is None else max(top, t)
        wm = (top - lag) - (top - lag) % frame
        if last is None or wm > last:
            out.append(Watermark(wm))
            last = wm
        out.append((t, "k"))
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-30, 60), max_size=30), st.integers(0, 5), st.integers(1, 7))
def test_insert_watermarks_emits_each_rise_of_the_throttled_watermark(
    timestamps: list[int], lag: int, frame: int
) -> None:
    (
        verify_processor(P.insert_watermarks(ts_of, allowed_lag=lag, throttling_frame_size=frame))
        .input([(t, "k") for t in timestamps])
        .disable_redistribution()
        .disable_logging()
        .expect_output(stamped(timestamps, lag, frame))
    )

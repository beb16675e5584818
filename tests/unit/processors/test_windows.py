"""Sliding, tumbling and session windows: each stage verified with the kit (snapshots, restores
into other processor counts included), and the two-stage window end to end on the local runner
against a plain-Python reference, late items counted in the metrics."""

from __future__ import annotations

import operator
import random
from collections import Counter
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, Watermark
from jetspark.processors import FrameEntry, WindowPolicy, WindowResult
from jetspark.runners.local import LocalRunner
from jetspark.testing import verify_processor
from tests.unit.processors.windowing import QuietSource, late_flags, results_counter, window_counts
from tests.waiting import wait_until

ts_of = operator.itemgetter(0)
key_of = operator.itemgetter(1)

SLIDING = WindowPolicy.sliding(10, 5)
TUMBLING = WindowPolicy.tumbling(10)
STREAM = [(1, "a"), (3, "b"), (7, "a"), Watermark(8), (12, "a"), Watermark(15), (2, "a"), (16, "b")]


def test_policy_frames_and_bad_sizes() -> None:
    assert SLIDING.frame_end(0) == 5 and SLIDING.frame_end(4) == 5 and SLIDING.frame_end(5) == 10
    assert SLIDING.frame_end(-1) == 0 and SLIDING.floor_frame(-1) == -5
    assert WindowPolicy.sliding(10, 5, offset=2).frame_end(1) == 2
    with pytest.raises(ValueError, match="multiple of the slide"):
        WindowPolicy.sliding(10, 4)
    with pytest.raises(ValueError, match="must be > 0"):
        WindowPolicy.tumbling(0)


def test_sliding_window_single_stage_in_every_mode() -> None:
    expected = [
        WindowResult(-5, 5, "a", 1),
        WindowResult(-5, 5, "b", 1),
        Watermark(8),
        WindowResult(0, 10, "a", 2),
        WindowResult(0, 10, "b", 1),
        WindowResult(5, 15, "a", 2),
        Watermark(15),
        # (2, "a") is late: the windows ending at 5 and 10 are out. Dropped.
        WindowResult(10, 20, "a", 1),
        WindowResult(10, 20, "b", 1),
        WindowResult(15, 25, "b", 1),
    ]
    (
        verify_processor(P.aggregate_to_sliding_window(key_of, ts_of, SLIDING, P.counting()))
        .input(STREAM)
        .partitioned_input(key_of)
        .expect_output(expected)
    )


def test_stage_one_emits_frames_when_the_watermark_passes_them() -> None:
    expected = [
        FrameEntry(5, "a", 1),
        FrameEntry(5, "b", 1),
        Watermark(8),
        FrameEntry(10, "a", 1),
        FrameEntry(15, "a", 1),
        Watermark(15),
        FrameEntry(20, "b", 1),
    ]
    (
        verify_processor(P.accumulate_by_frame(key_of, ts_of, SLIDING, P.counting()))
        .input(STREAM)
        .expect_output(expected)
    )


def test_stage_two_combines_frames_of_several_stage_one_processors() -> None:
    entries = [
        FrameEntry(5, "a", 2),
        FrameEntry(5, "a", 3),
        FrameEntry(10, "a", 1),
        Watermark(10),
        FrameEntry(15, "a", 4),
        FrameEntry(5, "a", 100),  # late: windows ending at 5 and 10 are out
    ]
    expected = [
        WindowResult(-5, 5, "a", 5),
        WindowResult(0, 10, "a", 6),
        Watermark(10),
        WindowResult(5, 15, "a", 5),
        WindowResult(10, 20, "a", 4),
    ]
    (
        verify_processor(P.combine_to_sliding_window(SLIDING, P.counting()))
        .input(entries)
        .partitioned_input(P.frame_entry_key)
        .expect_output(expected)
    )


def test_tumbling_window_with_a_mutable_accumulator() -> None:
    events = [(1, "a"), (4, "a"), (11, "a"), (12, "b"), Watermark(20), (25, "a")]
    expected = [
        WindowResult(0, 10, "a", [(1, "a"), (4, "a")]),
        WindowResult(10, 20, "a", [(11, "a")]),
        WindowResult(10, 20, "b", [(12, "b")]),
        Watermark(20),
        WindowResult(20, 30, "a", [(25, "a")]),
    ]
    (
        verify_processor(P.aggregate_to_sliding_window(key_of, ts_of, TUMBLING, P.to_list()))
        .input(events)
        .partitioned_input(key_of)
        .expect_output(expected)
    )


def test_sliding_window_does_not_share_mutable_frames_between_windows() -> None:
    events = [(1, "a"), (6, "a"), (11, "a")]
    expected = {
        (-5, 5): [(1, "a")],
        (0, 10): [(1, "a"), (6, "a")],
        (5, 15): [(6, "a"), (11, "a")],
        (10, 20): [(11, "a")],
    }

    def check(mode: str, outputs: list[list[Any]]) -> None:
        got = {(r.start, r.end): r.value for r in outputs[0]}
        assert got == expected, mode

    verify_processor(P.aggregate_to_sliding_window(key_of, ts_of, SLIDING, P.to_list())).input(
        events
    ).partitioned_input(key_of).assert_output(1, check)


def test_early_results_show_a_window_before_it_closes() -> None:
    dag = DAG()
    source = dag.new_vertex("source", lambda: QuietSource([(1, "a"), (2, "a"), (14, "b")]), 1)
    windows = dag.new_vertex(
        "windows", P.aggregate_to_sliding_window(key_of, ts_of, TUMBLING, P.counting(), 5), 1
    )
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(source, windows))
    dag.edge(Edge.between(windows, sink))
    job = LocalRunner(1).submit(dag, JobConfig())
    try:
        wanted = {WindowResult(0, 10, "a", 2, True), WindowResult(10, 20, "b", 1, True)}
        wait_until(lambda: wanted <= set(job.result("sink")), "early results of both windows")
        assert all(r.early for r in job.result("sink")), "no window closed: no watermark came"
    finally:
        job.cancel()


def test_window_aggregate_with_early_results_is_one_stage_and_gives_the_same_final_results() -> None:
    events = sorted((t * 7 % 90, "abc"[t % 3]) for t in range(90))
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(events), 1)
    windows = P.window_aggregate(
        dag, "w", source, key_of, ts_of, SLIDING, P.counting(), early_results_millis=1
    )
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(windows, sink))
    assert [v.name for v in dag] == ["source", "w", "sink"]
    job = LocalRunner(2).run(dag, JobConfig(), timeout=60)
    assert results_counter(job.result("sink")) == window_counts(SLIDING, events)


def test_session_windows_merge_and_close_with_the_watermark() -> None:
    events = [
        (1, "a"),
        (4, "a"),  # [1, 9)
        (20, "a"),  # a new session [20, 25)
        (3, "b"),
        Watermark(9),
        (2, "a"),  # late
        (23, "a"),  # extends [20, 28)
        (11, "b"),  # [11, 16): the gap after 3 is too long
    ]
    expected = [
        WindowResult(3, 8, "b", 1),  # closed sessions go out by their end
        WindowResult(1, 9, "a", 2),
        Watermark(9),
        WindowResult(11, 16, "b", 1),
        WindowResult(20, 28, "a", 2),
    ]
    (
        verify_processor(P.aggregate_to_session_window(key_of, ts_of, 5, P.counting()))
        .input(events)
        .partitioned_input(key_of)
        .expect_output(expected)
    )


def test_session_window_bridging_item_merges_two_sessions() -> None:
    events = [
        (1, "a"),
        (9, "a"),
        (5, "a"),
        (14, "a"),
    ]  # [1,6), [9,14) bridged by [5,10); [14,19) only touches
    verify_processor(P.aggregate_to_session_window(key_of, ts_of, 5, P.summing(ts_of))).input(
        events
    ).partitioned_input(key_of).expect_output([WindowResult(1, 14, "a", 15), WindowResult(14, 19, "a", 14)])


def test_bad_window_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="gap must be > 0"):
        P.aggregate_to_session_window(key_of, ts_of, 0, P.counting())
    with pytest.raises(ValueError, match="early_results_millis"):
        P.combine_to_sliding_window(SLIDING, P.counting(), early_results_millis=-1)


# ---- end to end -------------------------------------------------------------------------------


def window_dag(events: list[tuple[int, str]], policy: WindowPolicy, lag: int, lp: int) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(events), local_parallelism=lp)
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of, allowed_lag=lag), local_parallelism=lp)
    dag.edge(Edge.between(source, stamps).isolated())
    windows = P.window_aggregate(dag, "windows", stamps, key_of, ts_of, policy, P.counting())
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(windows, sink))
    return dag


@pytest.mark.parametrize("policy", [SLIDING, TUMBLING, WindowPolicy.sliding(12, 3, offset=1)], ids=str)
@pytest.mark.parametrize(("members", "lp", "batch"), [(1, 1, 1024), (3, 2, 1024), (2, 2, 1)])
def test_two_stage_window_end_to_end_gives_the_reference_result(
    policy: WindowPolicy, members: int, lp: int, batch: int
) -> None:
    rng = random.Random(7)
    events = sorted((rng.randrange(0, 200), rng.choice("abcde")) for _ in range(400))
    job = LocalRunner(members, batch_size=batch).run(
        window_dag(events, policy, 0, lp), JobConfig(), timeout=60
    )
    assert results_counter(job.result("sink")) == window_counts(policy, events)
    assert job.metrics()["windows-frames"]["late_items_dropped"] == 0


@pytest.mark.parametrize(
    ("stage_one", "stage_two"),
    [
        (WindowPolicy.sliding(8, 2), WindowPolicy.sliding(8, 4)),
        (WindowPolicy.tumbling(1), WindowPolicy.tumbling(6)),
        (WindowPolicy.sliding(9, 3, offset=1), WindowPolicy.sliding(18, 6, offset=4)),
    ],
    ids=str,
)
def test_a_stage_two_on_a_coarser_grid_than_stage_one_loses_no_item(
    stage_one: WindowPolicy, stage_two: WindowPolicy
) -> None:
    """Stage 1's frames land on stage 2's grid (the next frame end at or above theirs): each
    stage-1 frame lies inside one stage-2 frame here, so the result is stage 2's exact windows."""
    rng = random.Random(5)
    events = sorted((rng.randrange(0, 120), rng.choice("ab")) for _ in range(200))
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(events), 1)
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of), 1)
    dag.edge(Edge.between(source, stamps).isolated())
    frames = dag.new_vertex("frames", P.accumulate_by_frame(key_of, ts_of, stage_one, P.counting()))
    windows = dag.new_vertex("windows", P.combine_to_sliding_window(stage_two, P.counting()))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(stamps, frames))
    dag.edge(Edge.between(frames, windows).partitioned(P.frame_entry_key).distributed())
    dag.edge(Edge.between(windows, sink))
    job = LocalRunner(2).run(dag, JobConfig(), timeout=60)
    assert results_counter(job.result("sink")) == window_counts(stage_two, events)
    assert job.metrics()["windows"]["late_items_dropped"] == 0


def test_late_items_are_dropped_and_counted_end_to_end() -> None:
    rng = random.Random(11)
    events = [(rng.randrange(0, 300), rng.choice("abc")) for _ in range(300)]
    lag = 20
    # what stage 1 sees: each item, after the watermark the generator inserts before it
    stream: list[Any] = []
    top = None
    for event in events:
        top = event[0] if top is None else max(top, event[0])
        stream.append(Watermark(top - lag))
        stream.append(event)
    stream = [x for i, x in enumerate(stream) if not (isinstance(x, Watermark) and _repeats(stream, i))]
    late = late_flags(SLIDING, stream, ts_of)
    on_time = [e for e, is_late in zip(events, late) if not is_late]
    assert 0 < late.count(True) < len(events)
    job = LocalRunner(1).run(window_dag(events, SLIDING, lag, 1), JobConfig(), timeout=60)
    assert results_counter(job.result("sink")) == window_counts(SLIDING, on_time)
    assert job.metrics()["windows-frames"]["late_items_dropped"] == late.count(True)
    assert job.metrics()["windows"]["late_items_dropped"] == 0


def _repeats(stream: list[Any], index: int) -> bool:
    """Whether the watermark at `index` is not above every watermark before it (not emitted)."""
    current = stream[index].timestamp
    return any(isinstance(x, Watermark) and x.timestamp >= current for x in stream[:index])


def test_results_counter_reads_only_final_results() -> None:
    items = [WindowResult(0, 10, "a", 1), WindowResult(0, 10, "a", 1, True), Watermark(3)]
    assert results_counter(items) == Counter([(0, 10, "a", 1)])

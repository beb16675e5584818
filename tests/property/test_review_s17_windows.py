"""Review s17: windows and event time against brute-force oracles written from Jet's sources.

The oracles (a few lines each, at the top) replay Jet's processors literally:

- `jet_sliding`: `SlidingWindowP` -- an item's frame is `higherFrameTs(t)`; it is late when its
  frame end is below `nextWinToEmit`; a watermark `wm` emits every window ending at or before `wm`
  (from `min(bottom frame, floorFrameTs(wm))` the first time, else from `nextWinToEmit`), then
  sets `nextWinToEmit = higherFrameTs(wm)`; `complete()` flushes every window holding data.
- `jet_sessions`: `SessionWindowP` -- late when `t < currentWatermark`; `[t, t + gap)` merges with
  the sessions it overlaps strictly (touching ones stay apart, `resolveAcc`); jetspark emits a
  session when the watermark reaches its end (its documented rule; Jet's `headMap(wm)` waits for a
  watermark above the end -- the same results, since no on-time item can touch a session ending
  at or below the watermark).
- `stamped`: `insert_watermarks` (Jet's `EventTimeMapper` with a limiting lag and throttling):
  the watermark `floor_throttle(top - lag)` goes out before the item that raised it.
- `JetCoalescer`: `WatermarkCoalescer.StandardImpl`, its pending idle marker handed out at once.

Properties: exact results and emission segments (which results come out between which
watermarks) through the test kit, which also snapshots and restores at every point and into
other processor counts; the local runner with several stage processors and members (one source
for exact lateness; several sources when no item is behind its own source's lag, and bounds when
some are; two input ordinals; back-pressure with batch sizes 1 and 3); a restart from a periodic
snapshot; suspend and resume into another member count; frames restored under another window
policy; early results; stage 1 alone in every mode of the kit; Jet's `EventTimeMapper`
(partitions, idle timeout, throttling) against `EventTimeMapper` and `insert_watermarks`; the
coalescer against Jet's. One divergence found: the strict xfail
`test_coalescer_forwards_the_top_watermark_when_the_last_input_ends`.
"""

from __future__ import annotations

import copy
import functools
import operator
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from jetspark import DAG, Edge, JobConfig
from jetspark import processors as P
from jetspark.core import Watermark
from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.config import ProcessingGuarantee
from jetspark.core.watermark import IDLE_MESSAGE, BroadcastKey
from jetspark.engine.coalescer import WatermarkCoalescer
from jetspark.processors import WindowPolicy
from jetspark.runners.local import LocalRunner
from jetspark.testing import verify_processor
from jetspark.testing._verify import driven_harness

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, print_blob=True)
LOCAL_SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, print_blob=True)

ts_of = operator.itemgetter(0)
key_of = operator.itemgetter(1)
val_of = operator.itemgetter(2)

# ---- oracles ---------------------------------------------------------------------------------

#: name -> (aggregate operation factory, what its result is for the window's items, normalised)
OPS: dict[str, tuple[Callable[[], P.AggregateOperation], Callable[[list[Any]], Any]]] = {
    "counting": (P.counting, len),
    "summing": (lambda: P.summing(val_of), lambda items: sum(val_of(i) for i in items)),
    "averaging": (
        lambda: P.averaging(val_of),
        lambda items: sum(val_of(i) for i in items) / len(items),
    ),
    "to_list": (P.to_list, lambda items: tuple(sorted(items))),
}


def normalise(op: str, value: Any) -> Any:
    return tuple(sorted(value)) if op == "to_list" else value


def floor_frame(policy: WindowPolicy, t: int) -> int:
    return t - (t - policy.frame_offset) % policy.frame_size


def higher_frame(policy: WindowPolicy, t: int) -> int:
    return floor_frame(policy, t) + policy.frame_size


def jet_sliding(policy: WindowPolicy, stream: Sequence[Any], finish: Callable[[list[Any]], Any]) -> tuple:
    """Jet's SlidingWindowP on `stream` (items and watermarks, as one processor sees them):
    (segments, late flags). `segments[i]` is the Counter of `(start, end, key, value)` emitted
    before the i-th watermark (the last one: at `complete()`)."""
    frames: dict[int, dict[Any, list[Any]]] = defaultdict(lambda: defaultdict(list))
    next_win: int | None = None
    late: list[bool] = []
    segments: list[Counter] = []

    def windows(first: int, last: int) -> Counter:
        out: Counter = Counter()
        for end in range(first, last + 1, policy.frame_size):
            per_key: dict[Any, list[Any]] = defaultdict(list)
            for frame_end, by_key in frames.items():
                if end - policy.window_size < frame_end <= end:
                    for key, items in by_key.items():
                        per_key[key] += items
            for key, items in per_key.items():
                out[(end - policy.window_size, end, key, finish(items))] += 1
        return out

    for item in stream:
        if isinstance(item, Watermark):
            wm = item.timestamp
            if next_win is not None:
                segments.append(windows(next_win, wm))
            elif frames:
                segments.append(windows(min(min(frames), floor_frame(policy, wm)), wm))
            else:
                segments.append(Counter())
            next_win = higher_frame(policy, wm)
            continue
        frame_end = higher_frame(policy, ts_of(item))
        is_late = next_win is not None and frame_end < next_win
        late.append(is_late)
        if not is_late:
            frames[frame_end][key_of(item)].append(item)
    if frames:
        first = next_win if next_win is not None else min(frames)
        segments.append(windows(first, max(frames) + policy.window_size - policy.frame_size))
    else:
        segments.append(Counter())
    return segments, late


def jet_sessions(gap: int, stream: Sequence[Any], finish: Callable[[list[Any]], Any]) -> tuple:
    """SessionWindowP on `stream`: (segments, late flags), as `jet_sliding`; a session goes out
    at the first watermark at or above its end (jetspark's documented rule, see the docstring)."""
    sessions: dict[Any, list[list[Any]]] = defaultdict(list)  # key -> [start, end, items]
    wm: int | None = None
    late: list[bool] = []
    segments: list[Counter] = []

    def close(limit: int | None) -> Counter:
        out: Counter = Counter()
        for key, held in sessions.items():
            for s in [s for s in held if limit is None or s[1] <= limit]:
                held.remove(s)
                out[(s[0], s[1], key, finish(s[2]))] += 1
        return out

    for item in stream:
        if isinstance(item, Watermark):
            segments.append(close(item.timestamp))
            wm = item.timestamp
            continue
        t = ts_of(item)
        late.append(wm is not None and t < wm)
        if late[-1]:
            continue
        merged = [t, t + gap, [item]]
        kept = []
        for s in sessions[key_of(item)]:
            if s[0] < merged[1] and merged[0] < s[1]:  # strict overlap (Jet's resolveAcc)
                merged = [min(s[0], merged[0]), max(s[1], merged[1]), s[2] + merged[2]]
            else:
                kept.append(s)
        sessions[key_of(item)] = [*kept, merged]
    segments.append(close(None))
    return segments, late


def stamped(items: Sequence[Any], lag: int, frame: int, offset: int = 0) -> list[Any]:
    """`insert_watermarks(ts_of, lag, throttling_frame_size=frame, ..._offset=offset)` on one
    processor: each rise of `floor(top - lag)` goes out right before the item that raised it."""
    out: list[Any] = []
    top: int | None = None
    last: int | None = None
    for item in items:
        top = ts_of(item) if top is None else max(top, ts_of(item))
        wm = (top - lag) - (top - lag - offset) % frame
        if last is None or wm > last:
            out.append(Watermark(wm))
            last = wm
        out.append(item)
    return out


def segments_of(output: Sequence[Any], op: str) -> list[Counter]:
    """The results of `output` between its watermarks (the last segment: after the last one)."""
    segments: list[Counter] = [Counter()]
    for item in output:
        if isinstance(item, Watermark):
            segments.append(Counter())
        else:
            assert not item.early
            segments[-1][(item.start, item.end, item.key, normalise(op, item.value))] += 1
    return segments


def total(segments: Sequence[Counter]) -> Counter:
    out: Counter = Counter()
    for segment in segments:
        out.update(segment)
    return out


# ---- strategies ------------------------------------------------------------------------------

keys = st.sampled_from("abc")


@st.composite
def raw_streams(draw: Any, max_size: int = 25) -> list[Any]:
    """Events `(t, key, value)` in any order, with rising watermarks among them."""
    events = draw(
        st.lists(st.tuples(st.integers(-20, 60), keys, st.integers(-5, 9)), min_size=2, max_size=max_size)
    )
    stream: list[Any] = []
    wm = -30
    for event in events:
        if draw(st.integers(0, 3)) == 0:
            wm += draw(st.integers(1, 15))
            stream.append(Watermark(wm))
        stream.append(event)
    if draw(st.booleans()):
        stream.append(Watermark(wm + draw(st.integers(1, 40))))
    return stream


#: events `(t, key, value)` in any order (the local runner's tests)
event_lists = st.lists(st.tuples(st.integers(-20, 80), keys, st.integers(-5, 9)), min_size=3, max_size=30)

policies = st.builds(
    lambda slide, factor, offset: WindowPolicy.sliding(slide * factor, slide, offset),
    st.integers(1, 7),
    st.integers(1, 4),
    st.integers(0, 6),
)


@st.composite
def bounded_disorder(draw: Any, lag: int, max_size: int = 30) -> list[Any]:
    """Events each at most `lag` behind the highest before it (on time under any interleaving
    of their sources: a source's own watermark never passes one of its items)."""
    events: list[Any] = []
    top = draw(st.integers(-10, 10))
    for _ in range(draw(st.integers(3, max_size))):
        if draw(st.booleans()):
            top += draw(st.integers(0, 12))
            t = top
        else:
            t = top - draw(st.integers(0, lag))
        events.append((t, draw(keys), draw(st.integers(-5, 9))))
    return events


# ---- the test kit: exact results and emission segments ---------------------------------------


def check_segments(mode: str, output: list[Any], op: str, expected: list[Counter]) -> None:
    got = segments_of(output, op)
    if "alternating" in mode:
        # several processors' outputs merged: only the results as a whole are comparable
        assert total(got) == total(expected), mode
    else:
        assert got == expected, mode
    ends: dict[Any, int] = {}
    for item in output:  # per key, windows go out by rising end, none twice
        if not isinstance(item, Watermark) and "alternating" not in mode:
            assert item.end > ends.get(item.key, float("-inf")), (mode, item)
            ends[item.key] = item.end


@SETTINGS
@given(raw_streams(), policies, st.sampled_from(sorted(OPS)))
def test_sliding_window_results_and_segments_match_jet(
    stream: list[Any], policy: WindowPolicy, op: str
) -> None:
    """Which results come out between which watermarks is Jet's, in every mode of the kit (the
    results as a whole where several processors' outputs are merged), by rising window end per
    key; with counting, summing, averaging and to_list (mutable accumulators: a restored or
    shared one must not leak into another window)."""
    make_op, finish = OPS[op]
    expected, _ = jet_sliding(policy, stream, finish)

    def check(mode: str, outputs: list[list[Any]]) -> None:
        check_segments(mode, outputs[0], op, expected)

    (
        verify_processor(P.aggregate_to_sliding_window(key_of, ts_of, policy, make_op()))
        .input(stream)
        .partitioned_input(key_of)
        .disable_logging()
        .assert_output(1, check)
    )


@SETTINGS
@given(raw_streams(), policies, st.sampled_from(sorted(OPS)), st.integers(1, 3))
def test_two_stages_with_several_frame_processors_match_jet(
    stream: list[Any], policy: WindowPolicy, op: str, stage1_count: int
) -> None:
    """Stage 1 split over `stage1_count` processors (items dealt round-robin, each sees every
    watermark), their frame entries merged into stage 2 with the coalesced watermark (the
    minimum: all equal here)."""
    make_op, finish = OPS[op]
    _, late = jet_sliding(policy, stream, finish)
    events = [x for x in stream if not isinstance(x, Watermark)]
    on_time = [e for e, is_late in zip(events, late) if not is_late]
    expected = total(jet_sliding(policy, on_time, finish)[0])
    outputs: list[list[Any]] = []
    for index in range(stage1_count):
        share: list[Any] = []
        seen = 0
        for item in stream:
            if isinstance(item, Watermark):
                share.append(item)
            else:
                if seen % stage1_count == index:
                    share.append(item)
                seen += 1
        runs: list[list[Any]] = []  # one per mode of the kit: all equal (no snapshots)
        (
            verify_processor(P.accumulate_by_frame(key_of, ts_of, policy, make_op()))
            .input(share)
            .disable_snapshots()
            .disable_logging()
            .assert_output(1, lambda mode, out, runs=runs: runs.append(list(out[0])))
        )
        outputs.append(runs[0])
    # interleave: each processor's entries up to a watermark, then the watermark once
    merged: list[Any] = []
    pieces = [split_at_watermarks(out) for out in outputs]
    for segment in range(max(len(p) for p in pieces)):
        for p in pieces:
            if segment < len(p):
                merged += p[segment][0]
        marks = {p[segment][1] for p in pieces if segment < len(p) and p[segment][1] is not None}
        assert len(marks) <= 1
        merged += list(marks)

    def check(mode: str, outs: list[list[Any]]) -> None:
        assert total(segments_of(outs[0], op)) == expected, mode

    (
        verify_processor(P.combine_to_sliding_window(policy, make_op()))
        .input(merged)
        .partitioned_input(P.frame_entry_key)
        .disable_logging()
        .assert_output(1, check)
    )


def split_at_watermarks(output: list[Any]) -> list[tuple[list[Any], Watermark | None]]:
    pieces: list[tuple[list[Any], Watermark | None]] = []
    current: list[Any] = []
    for item in output:
        if isinstance(item, Watermark):
            pieces.append((current, item))
            current = []
        else:
            current.append(item)
    pieces.append((current, None))
    return pieces


@SETTINGS
@given(raw_streams(), st.integers(1, 12), st.sampled_from(sorted(OPS)))
def test_session_window_results_and_segments_match_jet(stream: list[Any], gap: int, op: str) -> None:
    make_op, finish = OPS[op]
    expected, _ = jet_sessions(gap, stream, finish)

    def check(mode: str, outputs: list[list[Any]]) -> None:
        got = segments_of(outputs[0], op)
        if "alternating" in mode:
            assert total(got) == total(expected), mode
        else:
            assert got == expected, mode

    (
        verify_processor(P.aggregate_to_session_window(key_of, ts_of, gap, make_op()))
        .input(stream)
        .partitioned_input(key_of)
        .disable_logging()
        .assert_output(1, check)
    )


@SETTINGS
@given(
    st.lists(st.tuples(st.integers(-30, 60), keys, st.integers(0, 3)), max_size=30),
    st.integers(0, 8),
    st.integers(1, 7),
    st.integers(0, 6),
)
def test_insert_watermarks_with_offset_match_jets_mapper(
    items: list[Any], lag: int, frame: int, offset: int
) -> None:
    offset %= frame
    (
        verify_processor(
            P.insert_watermarks(
                ts_of, allowed_lag=lag, throttling_frame_size=frame, throttling_frame_offset=offset
            )
        )
        .input(items)
        .disable_redistribution()
        .disable_logging()
        .expect_output(stamped(items, lag, frame, offset))
    )


# ---- the local runner ------------------------------------------------------------------------


def late_total(job: Any, vertices: Sequence[str]) -> int:
    metrics = job.metrics()
    return sum(metrics[v].get("late_items_dropped", 0) for v in vertices)


def window_dag(
    events: list[Any],
    *,
    sources: int,
    lag: int,
    throttle: int,
    stage: Callable[[DAG, Any], tuple[Any, list[str]]],
) -> tuple[DAG, list[str]]:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(events), sources)
    stamps = dag.new_vertex(
        "stamps", P.insert_watermarks(ts_of, allowed_lag=lag, throttling_frame_size=throttle), sources
    )
    dag.edge(Edge.between(source, stamps).isolated())
    last, late_vertices = stage(dag, stamps)
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(last, sink).all_to_one().distributed())
    return dag, late_vertices


def sliding_stage(policy: WindowPolicy, op: str, two_stage: bool, parallelism: int) -> Callable:
    def build(dag: DAG, upstream: Any) -> tuple[Any, list[str]]:
        make_op = OPS[op][0]
        if two_stage:
            last = P.window_aggregate(dag, "win", upstream, key_of, ts_of, policy, make_op())
            dag.get_vertex("win-frames").local_parallelism = parallelism
            last.local_parallelism = parallelism
            return last, ["win-frames", "win"]
        last = dag.new_vertex(
            "win", P.aggregate_to_sliding_window(key_of, ts_of, policy, make_op()), parallelism
        )
        dag.edge(Edge.between(upstream, last).partitioned(key_of).distributed())
        return last, ["win"]

    return build


def session_stage(gap: int, op: str, parallelism: int) -> Callable:
    def build(dag: DAG, upstream: Any) -> tuple[Any, list[str]]:
        last = dag.new_vertex(
            "win", P.aggregate_to_session_window(key_of, ts_of, gap, OPS[op][0]()), parallelism
        )
        dag.edge(Edge.between(upstream, last).partitioned(key_of).distributed())
        return last, ["win"]

    return build


def assert_per_key_order(results: list[Any]) -> None:
    """One sink processor behind an all-to-one edge: a key's results come from one window
    processor over one queue, so they arrive by rising window end, none twice."""
    ends: dict[Any, int] = {}
    for r in results:
        assert r.end > ends.get(r.key, float("-inf")), r
        ends[r.key] = r.end


#: the local runner's batch size: 1 and 3 make every queue and outbox fill up (back-pressure)
batch_sizes = st.sampled_from([1, 3, 1024])


def run_local(dag: DAG, members: int, batch_size: int = 1024) -> Any:
    return LocalRunner(members, batch_size=batch_size).run(dag, JobConfig(member_count=members), timeout=60)


@LOCAL_SETTINGS
@given(
    event_lists,
    policies,
    st.sampled_from(sorted(OPS)),
    st.booleans(),
    st.integers(1, 3),
    st.integers(0, 10),
    st.integers(1, 8),
    batch_sizes,
)
def test_local_one_source_windows_and_late_items_match_jet(
    events: list[Any],
    policy: WindowPolicy,
    op: str,
    two_stage: bool,
    parallelism: int,
    lag: int,
    throttle: int,
    batch_size: int,
) -> None:
    """One source processor: every window processor sees the generator's watermarks in order
    with its items, so which items are late is exactly Jet's rule on the stamped stream."""
    finish = OPS[op][1]
    stream = stamped(events, lag, throttle)
    _, late = jet_sliding(policy, stream, finish)
    expected = total(jet_sliding(policy, [e for e, x in zip(events, late) if not x], finish)[0])
    dag, late_vertices = window_dag(
        events,
        sources=1,
        lag=lag,
        throttle=throttle,
        stage=sliding_stage(policy, op, two_stage, parallelism),
    )
    job = run_local(dag, 1, batch_size)
    results = job.result("sink")
    assert Counter((r.start, r.end, r.key, normalise(op, r.value)) for r in results) == expected
    assert late_total(job, late_vertices) == sum(late)
    assert_per_key_order(results)


@LOCAL_SETTINGS
@given(
    st.integers(0, 8).flatmap(lambda lag: st.tuples(st.just(lag), bounded_disorder(lag))),
    policies,
    st.sampled_from(["counting", "to_list"]),
    st.booleans(),
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 2),
    batch_sizes,
)
def test_local_several_sources_within_their_lag_lose_nothing(
    lag_events: tuple[int, list[Any]],
    policy: WindowPolicy,
    op: str,
    two_stage: bool,
    members: int,
    parallelism: int,
    sources: int,
    batch_size: int,
) -> None:
    """Several members, several source processors (from_iterable deals the events), watermarks
    coalesced across them: no event is behind its own source's watermark, so none may be late
    and every window holds all its events, exactly once."""
    lag, events = lag_events
    finish = OPS[op][1]
    expected = total(jet_sliding(policy, events, finish)[0])
    dag, late_vertices = window_dag(
        events,
        sources=sources,
        lag=lag,
        throttle=policy.frame_size,
        stage=sliding_stage(policy, op, two_stage, parallelism),
    )
    job = run_local(dag, members, batch_size)
    results = job.result("sink")
    assert Counter((r.start, r.end, r.key, normalise(op, r.value)) for r in results) == expected
    assert late_total(job, late_vertices) == 0
    assert_per_key_order(results)


@LOCAL_SETTINGS
@given(
    st.integers(0, 8).flatmap(lambda lag: st.tuples(st.just(lag), bounded_disorder(lag))),
    st.integers(1, 12),
    st.sampled_from(["counting", "to_list"]),
    st.integers(1, 3),
    st.integers(1, 3),
)
def test_local_sessions_several_sources_within_their_lag(
    lag_events: tuple[int, list[Any]], gap: int, op: str, members: int, parallelism: int
) -> None:
    lag, events = lag_events
    finish = OPS[op][1]
    expected = total(jet_sessions(gap, events, finish)[0])
    dag, late_vertices = window_dag(
        events, sources=1, lag=lag, throttle=1, stage=session_stage(gap, op, parallelism)
    )
    job = run_local(dag, members)
    results = job.result("sink")
    assert Counter((r.start, r.end, r.key, normalise(op, r.value)) for r in results) == expected
    assert late_total(job, late_vertices) == 0
    assert_per_key_order(results)


@LOCAL_SETTINGS
@given(
    event_lists,
    st.integers(1, 12),
    st.integers(1, 3),
    st.integers(0, 10),
)
def test_local_sessions_one_source_late_items_match_jet(
    events: list[Any], gap: int, parallelism: int, lag: int
) -> None:
    stream = stamped(events, lag, 1)
    _, late = jet_sessions(gap, stream, len)
    expected = total(jet_sessions(gap, [e for e, x in zip(events, late) if not x], len)[0])
    dag, late_vertices = window_dag(
        events, sources=1, lag=lag, throttle=1, stage=session_stage(gap, "counting", parallelism)
    )
    job = run_local(dag, 1)
    results = job.result("sink")
    assert Counter((r.start, r.end, r.key, r.value) for r in results) == expected
    assert late_total(job, late_vertices) == sum(late)
    assert_per_key_order(results)


@LOCAL_SETTINGS
@given(
    event_lists,
    policies,
    st.booleans(),
    st.integers(1, 3),
    st.integers(0, 6),
)
def test_local_several_sources_with_late_items_stay_within_bounds(
    events: list[Any], policy: WindowPolicy, two_stage: bool, members: int, lag: int
) -> None:
    """Several sources and events beyond the lag: which ones are late depends on how the sources
    interleave, but (Jet's rules) an event on time at its own source is never late downstream
    (the coalesced watermark is at most its source's), no event is partially counted, and every
    dropped one is counted: each window's count lies between its events on time at their own
    source and all its events, and the counts add up to the events not dropped."""
    sources = 2
    stage_count = 2
    per_source = [events[g :: sources * members] for g in range(sources * members)]
    own_on_time: list[Any] = []
    for share in per_source:
        _, late = jet_sliding(policy, stamped(share, lag, 1), len)
        own_on_time += [e for e, x in zip(share, late) if not x]
    low = total(jet_sliding(policy, own_on_time, len)[0])
    high = total(jet_sliding(policy, events, len)[0])
    dag, late_vertices = window_dag(
        events,
        sources=sources,
        lag=lag,
        throttle=1,
        stage=sliding_stage(policy, "counting", two_stage, stage_count),
    )
    job = run_local(dag, members)
    results = job.result("sink")
    got = {(r.start, r.end, r.key): r.value for r in results}
    assert len(got) == len(results)  # no window twice
    bound_low = {(s, e, k): n for (s, e, k, n) in low}
    bound_high = {(s, e, k): n for (s, e, k, n) in high}
    for window, n in got.items():
        assert bound_low.get(window, 0) <= n <= bound_high[window], window
    for window, n in bound_low.items():
        assert got.get(window, 0) >= n, window
    dropped = late_total(job, late_vertices)
    per_item_windows = policy.window_size // policy.frame_size
    assert sum(got.values()) == (len(events) - dropped) * per_item_windows
    assert_per_key_order(results)


# ---- suspend and resume into another member count --------------------------------------------

_GATE: dict[str, Any] = {}


class GatedSource(AbstractProcessor):
    """Processor 0 emits `items[:hold]`, waits for the gate, then the rest; snapshot: position."""

    def __init__(self, items: list[Any], hold: int) -> None:
        self.items = items
        self.hold = hold
        self.position = 0

    def complete(self) -> bool:
        if self.context.global_processor_index != 0:
            return True
        while self.position < len(self.items):
            if self.position >= self.hold and not _GATE["open"].is_set():
                _GATE["held"].set()
                return False
            if not self.try_emit(self.items[self.position]):
                return False
            self.position += 1
        return True

    def save_to_snapshot(self) -> bool:
        if self.context.global_processor_index != 0:
            return True
        return self.try_emit_to_snapshot(BroadcastKey("position"), self.position)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.position = max(self.position, value)


@settings(max_examples=25, deadline=None, derandomize=True, print_blob=True)
@given(
    event_lists,
    st.data(),
    policies,
    st.sampled_from([None, 12]),
    st.integers(0, 10),
    st.integers(1, 3),
    st.integers(1, 3),
)
def test_suspend_and_resume_into_another_member_count_changes_nothing(
    events: list[Any],
    data: Any,
    policy: WindowPolicy,
    gap: int | None,
    lag: int,
    first_members: int,
    then_members: int,
) -> None:
    if first_members > 1 or then_members > 1:
        # a member whose source processor has nothing holds the coalesced watermark back until
        # its input ends, so which items are late depends on timing: keep every item on time
        events = data.draw(bounded_disorder(lag, max_size=25))
    hold = data.draw(st.integers(0, len(events)))
    stream = stamped(events, lag, 1)
    if gap is None:
        _, late = jet_sliding(policy, stream, len)
        expected = total(jet_sliding(policy, [e for e, x in zip(events, late) if not x], len)[0])
        stage = sliding_stage(policy, "counting", data.draw(st.booleans()), 2)
    else:
        _, late = jet_sessions(gap, stream, len)
        expected = total(jet_sessions(gap, [e for e, x in zip(events, late) if not x], len)[0])
        stage = session_stage(gap, "counting", 2)
    _GATE["open"] = threading.Event()
    _GATE["held"] = threading.Event()
    dag = DAG()
    source = dag.new_vertex("source", lambda: GatedSource(events, hold), 1)
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of, allowed_lag=lag), 1)
    dag.edge(Edge.between(source, stamps).isolated())
    last, late_vertices = stage(dag, stamps)
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(last, sink).all_to_one().distributed())
    config = JobConfig(
        member_count=first_members,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=3_600_000,
    )
    job = LocalRunner(first_members).submit(dag, config)
    try:
        if hold < len(events):
            assert _GATE["held"].wait(30)
            job.suspend(timeout=30)
            _GATE["open"].set()
            job = job.resume(member_count=then_members)
        _GATE["open"].set()
        job.join(60)
    finally:
        _GATE["open"].set()
    results = job.result("sink")
    assert Counter((r.start, r.end, r.key, r.value) for r in results) == expected
    del late_vertices  # the late counters of the suspended execution are not carried over


# ---- the coalescer against Jet's ---------------------------------------------------------------


class JetCoalescer:
    """WatermarkCoalescer.StandardImpl (queueCount >= 2), its pending idle marker handed out
    right after the watermark (as jetspark documents)."""

    MAX = float("inf")

    def __init__(self, n: int) -> None:
        self.wms = [float("-inf")] * n
        self.idle = [False] * n
        self.last = float("-inf")
        self.top = float("-inf")
        self.all_idle = False

    def done(self, q: int) -> list[Any]:
        self.wms[q] = self.MAX
        return self.check()

    def event(self, q: int) -> None:
        if self.idle[q]:
            self.idle[q] = False
            self.all_idle = False

    def wm(self, q: int, value: Any) -> list[Any]:
        if value is IDLE_MESSAGE:
            self.idle[q] = True
            return self.check()
        self.idle[q] = False
        self.all_idle = False
        self.wms[q] = value
        self.top = max(self.top, value)
        return self.check()

    def check(self) -> list[Any]:
        if self.all_idle:
            return []
        not_done = sum(1 for w in self.wms if w < self.MAX)
        live = [w for w, i in zip(self.wms, self.idle) if not i and w < self.MAX]
        if not live:
            self.all_idle = True
            if self.top > self.last:
                self.last = self.top
                return [Watermark(self.top)] + ([IDLE_MESSAGE] if not_done else [])
            return [IDLE_MESSAGE] if not_done else []
        low = min(live)
        if low > self.last:
            self.last = low
            return [Watermark(low)]
        return []


def play_coalescers(n: int, script: list[tuple[str, int, int]], skip_all_done: bool) -> None:
    mine = WatermarkCoalescer(n)
    jet = JetCoalescer(n)
    done: set[int] = set()
    level = [0] * n
    for kind, q, step in script:
        if q in done:
            continue
        if kind == "wm":
            level[q] += step
            got, want = mine.observe(q, Watermark(level[q])), jet.wm(q, level[q])
        elif kind == "idle":
            got, want = mine.observe(q, IDLE_MESSAGE), jet.wm(q, IDLE_MESSAGE)
        elif kind == "item":
            mine.observe_item(q)
            jet.event(q)
            continue
        else:
            done.add(q)
            got, want = mine.queue_done(q), jet.done(q)
            if skip_all_done and len(done) == n:
                continue  # the known divergence (see the xfail below)
        assert got == want, (kind, q, level)


coalescer_scripts = st.integers(2, 4).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(
            st.tuples(
                st.sampled_from(["wm", "wm", "idle", "item", "done"]),
                st.integers(0, n - 1),
                st.integers(1, 5),
            ),
            max_size=40,
        ),
    )
)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(coalescer_scripts)
def test_coalescer_matches_jets_standard_impl(case: tuple[int, list[Any]]) -> None:
    """Every step, jetspark's coalescer forwards what Jet's does (idle marker at once), except
    when the last input ends (the xfail below); so its output rises, and is the minimum over
    the inputs neither idle nor done whenever one of them is live, as Jet's."""
    play_coalescers(case[0], case[1], skip_all_done=True)


def test_coalescer_forwards_the_top_watermark_when_the_last_input_ends() -> None:
    play_coalescers(2, [("wm", 0, 5), ("wm", 1, 10), ("done", 1, 0), ("done", 0, 0)], skip_all_done=False)


# ---- explicit examples -----------------------------------------------------------------------


@example(stream=[(0, "a", 1), Watermark(5), (5, "a", 1)], gap=5)
@given(raw_streams(max_size=6), st.integers(1, 6))
@settings(max_examples=30, deadline=None, derandomize=True)
def test_touching_sessions_stay_apart_as_in_jets_resolve_acc(stream: list[Any], gap: int) -> None:
    """`[0, 5)` and an item at 5: Jet's `resolveAcc` skips a session with `end <= timestamp`,
    so they stay two sessions whatever the order of the watermark (same as jetspark)."""
    assume(any(not isinstance(x, Watermark) for x in stream))
    expected = total(jet_sessions(gap, stream, len)[0])

    def check(mode: str, outputs: list[list[Any]]) -> None:
        results = [x for x in outputs[0] if not isinstance(x, Watermark)]
        assert Counter((r.start, r.end, r.key, r.value) for r in results) == expected, mode

    (
        verify_processor(P.aggregate_to_session_window(key_of, ts_of, gap, P.counting()))
        .input(stream)
        .partitioned_input(key_of)
        .disable_logging()
        .assert_output(1, check)
    )


# ---- more: two input ordinals, Jet's event-time mapper, early results --------------------------


@LOCAL_SETTINGS
@given(
    st.integers(0, 8).flatmap(lambda lag: st.tuples(st.just(lag), bounded_disorder(lag))),
    st.one_of(policies, st.integers(1, 12)),
    st.integers(1, 3),
    st.integers(1, 3),
    batch_sizes,
)
def test_local_window_with_two_input_ordinals_coalesces_both(
    lag_events: tuple[int, list[Any]],
    policy_or_gap: WindowPolicy | int,
    members: int,
    parallelism: int,
    batch_size: int,
) -> None:
    """Two sources, each with its generator, into one window vertex on ordinals 0 and 1: the
    watermark is coalesced across the two edges (and their queues); no event is behind its own
    source's watermark, so none is late and the windows hold every event exactly once."""
    lag, events = lag_events
    halves = [events[0::2], events[1::2]]
    if isinstance(policy_or_gap, WindowPolicy):
        expected = total(jet_sliding(policy_or_gap, events, len)[0])
        supplier = P.aggregate_to_sliding_window(key_of, ts_of, policy_or_gap, P.counting())
    else:
        expected = total(jet_sessions(policy_or_gap, events, len)[0])
        supplier = P.aggregate_to_session_window(key_of, ts_of, policy_or_gap, P.counting())
    dag = DAG()
    window = dag.new_vertex("win", supplier, parallelism)
    for ordinal, half in enumerate(halves):
        source = dag.new_vertex(f"source{ordinal}", P.from_iterable(half), 1)
        stamps = dag.new_vertex(f"stamps{ordinal}", P.insert_watermarks(ts_of, allowed_lag=lag), 1)
        dag.edge(Edge.between(source, stamps).isolated())
        dag.edge(Edge.from_(stamps).to(window, ordinal).partitioned(key_of).distributed())
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(window, sink).all_to_one().distributed())
    job = run_local(dag, members, batch_size)
    results = job.result("sink")
    assert Counter((r.start, r.end, r.key, r.value) for r in results) == expected
    assert late_total(job, ["win"]) == 0
    assert_per_key_order(results)


class JetMapper:
    """EventTimeMapper with `limitingLag` and throttling, times in whole seconds (Jet's nanos)."""

    def __init__(self, n: int, lag: int, idle_s: int | None, frame: int, offset: int) -> None:
        self.tops: list[Any] = [None] * n
        self.wms = [float("-inf")] * n
        self.idle_s = idle_s
        self.mark_idle_at = [0 + (idle_s or 0)] * n
        self.lag, self.frame, self.offset = lag, frame, offset
        self.last = float("-inf")
        self.top_observed = float("-inf")
        self.all_idle = False

    def event(self, now: int, p: int, t: int) -> list[Any]:
        self.tops[p] = t if self.tops[p] is None else max(self.tops[p], t)
        self.mark_idle_at[p] = now + (self.idle_s or 0)
        self.all_idle = False
        return self.no_event(now, t)

    def no_event(self, now: int, cap: float = float("inf")) -> list[Any]:
        low = float("inf")
        for i, top in enumerate(self.tops):
            if self.idle_s is not None and self.mark_idle_at[i] <= now:
                continue
            current = float("-inf") if top is None else top - self.lag
            self.wms[i] = max(self.wms[i], min(current, cap))
            self.top_observed = max(self.top_observed, self.wms[i])
            low = min(low, self.wms[i])
        out: list[Any] = []
        if low == float("inf"):
            if self.all_idle:
                return []
            low = self.top_observed
            self.all_idle = True
        else:
            self.all_idle = False
        if low > self.last:
            new = low - (low - self.offset) % self.frame
            if new > self.last:
                out.append(Watermark(int(new)))
                self.last = new
        if self.all_idle:
            out.append(IDLE_MESSAGE)
        return out


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    st.integers(1, 3).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(
                st.tuples(
                    st.integers(0, 3), st.one_of(st.none(), st.integers(0, n - 1)), st.integers(-10, 40)
                ),
                min_size=1,
                max_size=30,
            ),
        )
    ),
    st.integers(0, 6),
    st.one_of(st.none(), st.integers(1, 4)),
    st.integers(1, 5),
    st.integers(0, 4),
)
def test_event_time_mapper_matches_jets(
    case: tuple[int, list[Any]], lag: int, idle_s: int | None, frame: int, offset: int
) -> None:
    """Per source partition tops, idle timeout, throttling: what goes out after each event and
    on each idle check is what Jet's EventTimeMapper emits (its idle marker, which Jet appends
    right after the top watermark, comes from jetspark's next call)."""
    n, script = case
    offset %= frame
    policy = P.EventTimePolicy(
        timestamp_fn=ts_of,
        allowed_lag=lag,
        idle_timeout_millis=None if idle_s is None else idle_s * 1000,
        throttling_frame_size=frame,
        throttling_frame_offset=offset,
    )
    mine = P.EventTimeMapper(policy, n, now=0.0)
    jet = JetMapper(n, lag, idle_s, frame, offset)
    now = 0
    for advance, partition, t in script:
        now += advance
        if partition is None:  # an idle check: the engine calls try_process with no item
            got = []
            while (wm := mine.watermark(float(now))) is not None:
                got.append(wm)
            want = jet.no_event(now)
        else:
            mine.observe(partition, t, float(now))
            wm = mine.watermark(float(now))
            got = [] if wm is None else [wm]
            want = jet.event(now, partition, t)
        assert got == want, (now, partition, t)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(raw_streams(), policies)
def test_early_results_never_follow_the_final_result_and_final_results_match_jet(
    stream: list[Any], policy: WindowPolicy
) -> None:
    """With early results every millisecond (how many come out depends on the clock): the final
    results are Jet's, an early result of a window never comes after its final one nor after a
    watermark that closed it, and an early count is at most the final one."""
    expected, _ = jet_sliding(policy, stream, len)

    def check(mode: str, outputs: list[list[Any]]) -> None:
        finals = [x for x in outputs[0] if not isinstance(x, Watermark) and not x.early]
        assert Counter((r.start, r.end, r.key, r.value) for r in finals) == total(expected), mode
        final_of = {(r.end, r.key): r.value for r in finals}
        emitted: set[Any] = set()
        wm = float("-inf")
        for x in outputs[0]:
            if isinstance(x, Watermark):
                wm = max(wm, x.timestamp)
            elif x.early:
                assert (x.end, x.key) not in emitted, (mode, x)
                assert x.end > wm, (mode, x)
                assert x.value <= final_of.get((x.end, x.key), 0), (mode, x)
            else:
                emitted.add((x.end, x.key))

    (
        verify_processor(
            P.aggregate_to_sliding_window(key_of, ts_of, policy, P.counting(), early_results_millis=1)
        )
        .input(stream)
        .partitioned_input(key_of)
        .disable_logging()
        .assert_output(1, check)
    )


@SETTINGS
@given(raw_streams(), policies, st.sampled_from(sorted(OPS)))
def test_stage_one_frames_survive_snapshots_and_restores(
    stream: list[Any], policy: WindowPolicy, op: str
) -> None:
    """Stage 1 in every mode of the kit (snapshots, restores into 1 to 3 processors): its frame
    entries, combined per (frame, key), are Jet's frames of the on-time items (a frame may come
    out in parts from several processors after a restore into more)."""
    make_op, finish = OPS[op]
    frames_policy = policy.frames_policy()
    expected, _ = jet_sliding(frames_policy, stream, finish)
    want = Counter({(end, key, value): n for (_, end, key, value), n in total(expected).items()})

    def check(mode: str, outputs: list[list[Any]]) -> None:
        aggregate = make_op()
        accs: dict[Any, Any] = {}
        for entry in outputs[0]:
            if isinstance(entry, Watermark):
                continue
            part = copy.deepcopy(entry.acc)
            where = (entry.frame_end, entry.key)
            accs[where] = part if where not in accs else aggregate.combine(accs[where], part)
        got = Counter((end, key, normalise(op, aggregate.finish(acc))) for (end, key), acc in accs.items())
        assert got == want, mode

    (
        verify_processor(P.accumulate_by_frame(key_of, ts_of, policy, make_op()))
        .input(stream)
        .disable_logging()
        .assert_output(1, check)
    )


@SETTINGS
@given(
    st.integers(1, 3).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(-30, 60), keys, st.integers(0, 5)), min_size=1, max_size=30),
        )
    ),
    st.integers(0, 6),
    st.integers(1, 5),
)
def test_insert_watermarks_per_partition_match_jets_mapper(
    case: tuple[int, list[Any]], lag: int, frame: int
) -> None:
    """`partition_fn` (no idle timeout): the output is Jet's, watermark before the item that
    raised it, also after a snapshot and restore at every point."""
    n, items = case
    jet = JetMapper(n, lag, None, frame, 0)
    expected: list[Any] = []
    for item in items:
        expected += jet.event(0, val_of(item) % n, ts_of(item))
        expected.append(item)
    (
        verify_processor(
            P.insert_watermarks(
                ts_of,
                allowed_lag=lag,
                throttling_frame_size=frame,
                partition_fn=functools.partial(partition_of, n),
                partition_count=n,
            )
        )
        .input(items)
        .disable_redistribution()
        .disable_logging()
        .expect_output(expected)
    )


def partition_of(n: int, item: Any) -> int:
    return val_of(item) % n


_FAILURES: dict[str, int] = {}


class FailOnce(AbstractProcessor):
    """Passes everything on; raises RestartableError once, at its `_FAILURES["at"]`-th item."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not self.try_emit(item):
            return False
        _FAILURES["seen"] += 1
        if _FAILURES["seen"] == _FAILURES["at"]:
            from jetspark.core.errors import RestartableError

            raise RestartableError("review s17: fail once")
        return True


@settings(max_examples=25, deadline=None, derandomize=True, print_blob=True)
@given(event_lists, st.data(), st.one_of(policies, st.integers(1, 12)), st.integers(0, 10), st.booleans())
def test_restart_from_a_periodic_snapshot_gives_the_same_windows(
    events: list[Any], data: Any, policy_or_gap: WindowPolicy | int, lag: int, two_stage: bool
) -> None:
    """A failure after some results went out: the job restarts from its last periodic snapshot
    (taken back to back). The collecting sink is at-least-once, so a result may come twice, but
    never with another value, and none is missing."""
    stream = stamped(events, lag, 1)
    if isinstance(policy_or_gap, WindowPolicy):
        _, late = jet_sliding(policy_or_gap, stream, len)
        on_time = [e for e, x in zip(events, late) if not x]
        expected = total(jet_sliding(policy_or_gap, on_time, len)[0])
        stage = sliding_stage(policy_or_gap, "counting", two_stage, 2)
    else:
        _, late = jet_sessions(policy_or_gap, stream, len)
        on_time = [e for e, x in zip(events, late) if not x]
        expected = total(jet_sessions(policy_or_gap, on_time, len)[0])
        stage = session_stage(policy_or_gap, "counting", 2)
    _FAILURES["seen"] = 0
    _FAILURES["at"] = data.draw(st.integers(1, max(1, sum(expected.values()))))
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(events), 1)
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of, allowed_lag=lag), 1)
    dag.edge(Edge.between(source, stamps).isolated())
    last, _ = stage(dag, stamps)
    fail = dag.new_vertex("fail", FailOnce, 1)
    dag.edge(Edge.between(last, fail).all_to_one())
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(fail, sink))
    config = JobConfig(
        member_count=1,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=0,
    )
    job = LocalRunner(1).run(dag, config, timeout=60)
    results = job.result("sink")
    values: dict[Any, set[Any]] = defaultdict(set)
    for r in results:
        values[(r.start, r.end, r.key)].add(r.value)
    assert all(len(v) == 1 for v in values.values()), values
    assert {(s, e, k, v.pop()) for (s, e, k), v in values.items()} == set(expected)


@SETTINGS
@given(
    raw_streams(),
    st.integers(1, 8).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1))),
    policies,
)
def test_frames_restored_under_another_policy_count_every_item_once(
    stream: list[Any], tumbling: tuple[int, int], new_policy: WindowPolicy
) -> None:
    """Saved under tumbling windows, restored under another policy (slide, size or offset; as
    after a job update): the frames still to be emitted land on the new grid's next frame end
    (Jet's `higherFrameTs(ts - 1)`), so each of their items is counted once per window of the new
    policy (`size / slide` times), none lost, none twice (the docs' "every value emitted once")."""
    old_policy = WindowPolicy.tumbling(*tumbling)
    _, late = jet_sliding(old_policy, stream, len)
    on_time = late.count(False)
    saved = driven_harness(P.aggregate_to_sliding_window(key_of, ts_of, old_policy, P.counting()))
    for item in stream:
        if isinstance(item, Watermark):
            saved.feed_watermark(0, item)
        else:
            saved.feed(0, [item])
    saved.snapshot(restore=False)
    entries = list(saved._entries)  # the kit keeps the last snapshot's entries here
    before = sum(r.value for r in saved.outputs[0] if not isinstance(r, Watermark))
    saved.close(None)
    restored = driven_harness(P.aggregate_to_sliding_window(key_of, ts_of, new_policy, P.counting()))
    restored.restore(entries)
    restored.end_input(0)
    restored.complete()
    restored.close(None)
    after = [r for r in restored.outputs[0] if not isinstance(r, Watermark)]
    for r in after:
        assert r.end == new_policy.align_frame_end(r.end) and r.end - r.start == new_policy.window_size
    per_item = new_policy.window_size // new_policy.frame_size
    assert sum(r.value for r in after) == (on_time - before) * per_item

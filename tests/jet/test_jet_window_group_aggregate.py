"""Jet's `WindowGroupAggregateTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: a
stream stage aggregated per window and grouping key.

The same setting as `test_jet_window_aggregate.py` (whose helpers this module uses): each Jet
pipeline is the DAG Jet plans from it, on the local runner with 2 members and local
parallelism 2. Jet's fixture `newSourceStage()` flat-maps each timestamped item `i` to the
entries `("a", i)` and `("b", i)` (here `P.flat_map` on a local edge, which passes the
watermarks on) and groups them by the entry's key; Jet's `window(wDef).aggregate(SUMMING)` is
`window_aggregate` keyed by `entry_key` with `summing(value)`, and
`aggregate_to_session_window` for a session window. Jet's `KeyedWindowResult(start, end, key,
result)` is `WindowResult`. Each test is named after the Jet case it ports.

Differences:
- Early results: as in `test_jet_window_aggregate.py` (the source emits one item per call, no
  rate, and stays an idle stream; the test waits on a condition, then cancels the job).
- `slidingWindow_cascadingAggregations`: Jet's window results carry their timestamp apart from
  the item (`winEnd - 1`), and `.map(KeyedWindowResult::result)` keeps it; jetspark's items have
  no separate timestamp, so the second window reads it from the `WindowResult` itself
  (`end - 1`) and maps it to its value inside its aggregate operation (Jet's `mapping`).

Skipped:
- `when_noTimestamps_then_error`, `windowDefinition`: Pipeline API checks. A window over a
  stream without watermarks is no error in jetspark: its windows are emitted at the end.
- `sessionWindow_withEarlyResults`: `aggregate_to_session_window` offers no early results.
- `aggregate2_*`, `aggregate3_*`, `aggregateBuilder_*`: co-aggregation of several stages has no
  counterpart (jetspark's `AggregateOperation` takes one input).
"""

from __future__ import annotations

from typing import Any

from jetspark import DAG, Edge, ProcessorSupplier, Vertex
from jetspark import processors as P
from jetspark.processors import WindowResult
from tests.jet import test_jet_window_aggregate as shared
from tests.jet.test_jet_window_aggregate import (
    EARLY_RESULTS_PERIOD,
    ITEM_COUNT,
    PICK_ANY,
    RecordingSink,
    cancel,
    constant_key,
    formatted,
    identity,
    round_up,
    run,
    session_window_sums,
    sliding_window_sums,
    stream_stage_from_list,
    submit_stream,
)
from tests.jet.test_jet_window_aggregate import (
    _fresh_recorder as _fresh_recorder,
)


def entry_key(entry: tuple[str, Any]) -> str:
    return entry[0]


def entry_value(entry: tuple[str, Any]) -> Any:
    return entry[1]


def a_and_b(i: int) -> list[tuple[str, int]]:
    return [("a", i), ("b", i)]


#: Jet's `summingLong(Entry::getValue)`.
SUMMING = P.summing(entry_value)


def new_source_stage(dag: DAG, items: list[int], early_results: bool = False) -> Vertex:
    """Jet's `WindowTestFixture.newSourceStage()` (without the grouping key, given to the window)."""
    stamps = stream_stage_from_list(dag, items, early_results)
    entries = dag.new_vertex("flatMap", P.flat_map(a_and_b))
    dag.edge(Edge.between(stamps, entries))
    return entries


def mock_results(sums: dict[int, int]) -> list[str]:
    """Jet's `MOCK_FORMAT_FN`: each window's sum, for key "a" and key "b"."""
    return sorted(f"({at:04d} {key}: {total:04d})" for at, total in sums.items() for key in "ab")


def end_key_value(result: WindowResult) -> str:
    """Jet's `KWR_WIN_END_FORMAT_FN`."""
    return f"({result.end:04d} {result.key}: {result.value:04d})"


def start_key_value(result: WindowResult) -> str:
    """Jet's `KWR_WIN_START_FORMAT_FN`."""
    return f"({result.start:04d} {result.key}: {result.value:04d})"


def last_per_end_and_key(results: list[WindowResult]) -> list[WindowResult]:
    """Jet's distinct key `TS_ENTRY_DISTINCT_FN`, `(end, key)`: the last result of each."""
    return list({(result.end, result.key): result for result in results}.values())


def keyed_windowed_sum(items: list[int], policy: P.WindowPolicy, early_results_millis: int = 0) -> DAG:
    dag = DAG()
    entries = new_source_stage(dag, items, early_results_millis > 0)
    windows = P.window_aggregate(
        dag,
        "window",
        entries,
        entry_key,
        entry_value_ts,
        policy,
        SUMMING,
        early_results_millis=early_results_millis,
    )
    sink = ProcessorSupplier.of(RecordingSink) if early_results_millis else P.collect()
    dag.edge(Edge.between(windows, dag.new_vertex("sink", sink)))
    return dag


def entry_value_ts(entry: tuple[str, int]) -> int:
    """The timestamp of a flat-mapped entry: its value (Jet: the timestamp of the item it came from)."""
    return entry[1]


def test_WindowGroupAggregateTest__distinct() -> None:
    item_count = round_up(ITEM_COUNT, 2)
    win_size = item_count // 2
    dag = DAG()
    stamps = stream_stage_from_list(dag, list(range(item_count)))
    windows = P.window_aggregate(
        dag, "distinct", stamps, lambda i: i // 2, identity, P.WindowPolicy.tumbling(win_size), PICK_ANY
    )
    dag.edge(Edge.between(windows, dag.new_vertex("sink", P.collect())))
    expected = sorted({f"({round_up(i + 1, win_size):04d}, {i // 2:04d})" for i in range(item_count)})
    assert formatted(run(dag), lambda r: f"({r.end:04d}, {r.value // 2:04d})") == expected


def test_WindowGroupAggregateTest__tumblingWindow() -> None:
    items = list(range(ITEM_COUNT))
    dag = keyed_windowed_sum(items, P.WindowPolicy.tumbling(4))
    assert formatted(run(dag), end_key_value) == mock_results(sliding_window_sums(4, 4, items))


def test_WindowGroupAggregateTest__slidingWindow() -> None:
    items = list(range(ITEM_COUNT))
    dag = keyed_windowed_sum(items, P.WindowPolicy.sliding(4, 2))
    assert formatted(run(dag), end_key_value) == mock_results(sliding_window_sums(4, 2, items))


def assert_early_results_converge(policy: P.WindowPolicy, window_size: int, slide: int) -> None:
    items = list(range(ITEM_COUNT))
    dag = keyed_windowed_sum(items, policy, EARLY_RESULTS_PERIOD)
    expected = mock_results(sliding_window_sums(window_size, slide, items))
    job = submit_stream(dag)
    try:
        shared.RECORDER.wait_for(
            lambda got: formatted(last_per_end_and_key(got), end_key_value) == expected,
            "the early results of every window and key",
        )
    finally:
        cancel(job)


def test_WindowGroupAggregateTest__tumblingWindow_withEarlyResults() -> None:
    assert_early_results_converge(P.WindowPolicy.tumbling(4), 4, 4)


def test_WindowGroupAggregateTest__slidingWindow_withEarlyResults() -> None:
    assert_early_results_converge(P.WindowPolicy.sliding(4, 2), 4, 2)


def _new_list() -> list[Any]:
    return []


def _append_value(acc: list[Any], entry: tuple[str, str]) -> list[Any]:
    acc.append(entry[1])
    return acc


def _append_result(acc: list[Any], result: WindowResult) -> list[Any]:
    acc.append(result.value)
    return acc


def _extend(acc: list[Any], other: list[Any]) -> list[Any]:
    acc.extend(other)
    return acc


#: Jet's `mapping(Entry::getValue, toList())`.
VALUES_TO_LIST = P.AggregateOperation(
    create=_new_list, accumulate=_append_value, combine=_extend, export=list
)
#: Jet's `.map(KeyedWindowResult::result)` then `toList()`.
RESULTS_TO_LIST = P.AggregateOperation(
    create=_new_list, accumulate=_append_result, combine=_extend, export=list
)


def prefixed_a_and_b(i: int) -> list[tuple[str, str]]:
    return [("a", f"a{i}"), ("b", f"b{i}")]


def index_of_entry(entry: tuple[str, str]) -> int:
    return int(entry[1][1:])


def result_timestamp(result: WindowResult) -> int:
    """Jet's timestamp of a window result: its end - 1."""
    return result.end - 1


def format_ts_item(timestamp: int, l1: list[str], l2: list[str]) -> str:
    return f"{timestamp:04d}: [{l1}, {l2}]"


def format_lists(result: WindowResult) -> str:
    list_of_lists = sorted(result.value, key=lambda values: values[0])
    return format_ts_item(result.end, list_of_lists[0], list_of_lists[1])


def test_WindowGroupAggregateTest__slidingWindow_cascadingAggregations() -> None:
    dag = DAG()
    stamps = stream_stage_from_list(dag, [0, 1, 2])
    entries = dag.new_vertex("flatMap", P.flat_map(prefixed_a_and_b))
    dag.edge(Edge.between(stamps, entries))
    first = P.window_aggregate(
        dag, "window1", entries, entry_key, index_of_entry, P.WindowPolicy.sliding(2, 1), VALUES_TO_LIST
    )
    second = P.window_aggregate(
        dag, "window2", first, constant_key, result_timestamp, P.WindowPolicy.tumbling(1), RESULTS_TO_LIST
    )
    formatting = dag.new_vertex("format", P.map(format_lists))
    dag.edge(Edge.between(second, formatting))
    dag.edge(Edge.between(formatting, dag.new_vertex("sink", P.collect())))
    assert sorted(run(dag)) == [
        format_ts_item(1, ["a0"], ["b0"]),
        format_ts_item(2, ["a0", "a1"], ["b0", "b1"]),
        format_ts_item(3, ["a1", "a2"], ["b1", "b2"]),
        format_ts_item(4, ["a2"], ["b2"]),
    ]


def test_WindowGroupAggregateTest__sessionWindow() -> None:
    session_length = 4
    session_timeout = 2
    items = [
        ts + (ts // session_length) * session_timeout
        for ts in range(ITEM_COUNT // session_length * session_length)
    ]
    dag = DAG()
    entries = new_source_stage(dag, items)
    sessions = dag.new_vertex(
        "session", P.aggregate_to_session_window(entry_key, entry_value_ts, session_timeout, SUMMING)
    )
    dag.edge(Edge.between(entries, sessions).partitioned(entry_key).distributed())
    dag.edge(Edge.between(sessions, dag.new_vertex("sink", P.collect())))
    expected = session_window_sums(session_timeout, session_length + session_timeout, items)
    assert formatted(run(dag), start_key_value) == mock_results(expected)

"""Jet's `WindowAggregateTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: a
stream stage aggregated per window, without a grouping key.

jetspark has no Pipeline API; each Jet pipeline is the DAG Jet plans from it, on the local runner
with 2 members and local parallelism 2 (Jet's `PipelineTestSupport` cluster). Jet's
`streamStageFromList(input)` (`TestSources.items(input)`, one processor in the cluster, then
`addTimestamps(i -> i, 0)`) is `from_iterable` and `insert_watermarks(i -> i)` on one processor
(`FirstMemberOnly`); the source completes after the last item, so the windows still open are
emitted at the end, as in Jet. Jet's `window(wDef).aggregate(op)` (no key) is `window_aggregate`
(`aggregate_to_session_window` for a session window) with a constant key; its `WindowResult`
carries that key, which the checks ignore (Jet's non-keyed `WindowResult` has none). Jet's
`windowed.distinct()` is a window aggregation keyed by the item that emits the key
(`PICK_ANY`, Jet's `pickAny()`). Jet's expected results come from its `SlidingWindowSimulator` and
`SessionWindowSimulator`, ported below as `sliding_window_sums` and `session_window_sums`; the
results are compared as Jet's `streamToString` does (formatted, sorted; with early results only
the last result per window end is kept).

Differences:
- Early results: Jet's `streamStageFromList(input, EARLY_RESULTS_PERIOD)` emits an item every
  100 us and then stays idle forever; its watermark lags by `2 * itemCount` so no window closes.
  Here the source emits one item per `complete()` call (no rate: the test must not depend on
  time), then stays an idle stream until the job is cancelled; the test waits on a condition the
  sink notifies (Jet's `assertTrueEventually`), then cancels the job. Jet's
  `when_tumblingWinWithEarlyResults_then_emitRepeatedly` waits for 10 early results of a window
  holding one item; here the same, each checked to be Jet's `WindowResult(0, 10, 1, early=true)`.

Skipped:
- `when_setWindowDefinition_then_windowDefinitionReturnsIt`: a Pipeline API getter.
- `sessionWindow_withEarlyResults`, `when_sessionWinWithEarlyResults_then_emitRepeatedly`:
  `aggregate_to_session_window` offers no early results.
- `aggregate2_*`, `aggregate3_*`, `aggregateBuilder_*`: co-aggregation of several stages has no
  counterpart (jetspark's `AggregateOperation` takes one input).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobCancelledError, JobConfig, ProcessorSupplier, Vertex
from jetspark import processors as P
from jetspark.core.suppliers import FirstMemberOnly
from jetspark.processors import WindowResult
from jetspark.runners.local import LocalJob, LocalRunner

MEMBER_COUNT = 2
LOCAL_PARALLELISM = 2
ITEM_COUNT = 1024
EARLY_RESULTS_PERIOD = 200
TIMEOUT = 60
CONFIG = JobConfig(default_local_parallelism=LOCAL_PARALLELISM)


def identity(item: Any) -> Any:
    return item


def constant_key(_item: Any) -> str:
    return "ALL"


def round_up(value: int, unit: int) -> int:
    return (value + unit - 1) // unit * unit


# -- Jet's expected-result simulators -------------------------------------------------------------


def sliding_window_sums(window_size: int, slide: int, items: Iterable[int]) -> dict[int, int]:
    """Jet's `SlidingWindowSimulator`: window end -> sum of the items (each its own timestamp)."""
    sums: dict[int, int] = {}
    for item in items:
        frame_start = item - item % slide
        for end in range(frame_start + slide, frame_start + window_size + 1, slide):
            sums[end] = sums.get(end, 0) + item
    return sums


def session_window_sums(timeout: int, expected_size: int, items: list[int]) -> dict[int, int]:
    """Jet's `SessionWindowSimulator`: session start -> sum; the last session left out unless
    it is complete (its last item is where a session of `expected_size` ends)."""
    sums: dict[int, int] = {}
    previous: int | None = None
    last_start = 0
    for item in items:
        if previous is None or item > previous + timeout:
            last_start = item
        sums[last_start] = sums.get(last_start, 0) + item
        previous = item
    if previous is not None and previous % expected_size != expected_size - timeout - 1:
        del sums[last_start]
    return sums


def formatted(results: Iterable[Any], format_fn: Callable[[Any], str]) -> list[str]:
    """Jet's `streamToString` without a distinct key: formatted and sorted."""
    return sorted(format_fn(result) for result in results)


def last_per_end(results: Iterable[WindowResult]) -> list[WindowResult]:
    """Jet's `streamToString(..., WindowResult::end)`: the last result per window end."""
    return list({result.end: result for result in results}.values())


def last_per_end_and_key(results: Iterable[WindowResult]) -> list[WindowResult]:
    return list({(result.end, result.key): result for result in results}.values())


def end_and_value(result: WindowResult) -> str:
    return f"({result.end:04d}, {result.value:04d})"


def start_and_value(result: WindowResult) -> str:
    return f"({result.start:04d}, {result.value:04d})"


def sums_as_strings(sums: dict[int, int]) -> list[str]:
    return sorted(f"({at:04d}, {total:04d})" for at, total in sums.items())


# -- sources and sinks ------------------------------------------------------------------------------


class Recorder:
    """What the streaming jobs' sink received, with a condition it notifies."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.changed = threading.Condition()

    def add(self, items: list[Any]) -> None:
        with self.changed:
            self.items.extend(items)
            self.changed.notify_all()

    def wait_for(self, predicate: Callable[[list[Any]], bool], what: str) -> list[Any]:
        """Jet's `assertTrueEventually`: wait until `predicate(items)`, fail after `TIMEOUT`."""
        with self.changed:
            ok = self.changed.wait_for(lambda: predicate(self.items), TIMEOUT)
            assert ok, f"timed out waiting for {what}; got {len(self.items)} items: {self.items[-10:]}"
            return list(self.items)


RECORDER = Recorder()


@pytest.fixture(autouse=True)
def _fresh_recorder() -> None:
    global RECORDER
    RECORDER = Recorder()


class RecordingSink(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        RECORDER.add([item])
        return True


class IdleAfterItemsP(AbstractProcessor):
    """Jet's early-results source: emits the items, one per `complete()` call, then stays an
    idle stream (Jet: "it remains idle forever") until the job is cancelled."""

    waits_for_data = True

    def __init__(self, items: list[int]) -> None:
        self.items = list(items)
        self.position = 0

    def complete(self) -> bool:
        if self.position < len(self.items) and self.try_emit(self.items[self.position]):
            self.position += 1
        return False


def stream_stage_from_list(dag: DAG, items: list[int], early_results: bool = False) -> Vertex:
    """Jet's `streamStageFromList(input)` (and `(input, EARLY_RESULTS_PERIOD)`): one source
    processor in the cluster, items timestamped by themselves; with early results an endless
    source whose watermark lags by `2 * itemCount` (Jet's `withNativeTimestamps(2 * itemCount)`)."""
    source_supplier: ProcessorSupplier = (
        ProcessorSupplier.of(lambda: IdleAfterItemsP(items)) if early_results else P.from_iterable(items)
    )
    source = dag.new_vertex("source", FirstMemberOnly(source_supplier))
    lag = 2 * ITEM_COUNT if early_results else 0
    stamps = dag.new_vertex("stamps", FirstMemberOnly(P.insert_watermarks(identity, allowed_lag=lag)))
    dag.edge(Edge.between(source, stamps).isolated())
    return stamps


def run(dag: DAG) -> list[Any]:
    return LocalRunner(MEMBER_COUNT).run(dag, CONFIG, timeout=TIMEOUT).result("sink")


def submit_stream(dag: DAG) -> LocalJob:
    return LocalRunner(MEMBER_COUNT).submit(dag, CONFIG)


def cancel(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)


def windowed_sum(items: list[int], policy: P.WindowPolicy, early_results_millis: int = 0) -> tuple[DAG, str]:
    """Jet's `streamStageFromList(items).window(wDef).aggregate(summingLong(i -> i))`."""
    dag = DAG()
    stamps = stream_stage_from_list(dag, items, early_results=early_results_millis > 0)
    windows = P.window_aggregate(
        dag,
        "window",
        stamps,
        constant_key,
        identity,
        policy,
        P.summing(),
        early_results_millis=early_results_millis,
    )
    sink = P.collect() if not early_results_millis else ProcessorSupplier.of(RecordingSink)
    dag.edge(Edge.between(windows, dag.new_vertex("sink", sink)))
    return dag, "sink"


# -- tests --------------------------------------------------------------------------------------


def _pick_any_new() -> list[Any]:
    return []


def _pick_any_add(acc: list[Any], item: Any) -> list[Any]:
    if not acc:
        acc.append(item)
    return acc


def _pick_any_combine(acc: list[Any], other: list[Any]) -> list[Any]:
    return acc or other


def _pick_any_result(acc: list[Any]) -> Any:
    return acc[0] if acc else None


#: Jet's `pickAny()`.
PICK_ANY = P.AggregateOperation(
    create=_pick_any_new,
    accumulate=_pick_any_add,
    combine=_pick_any_combine,
    export=_pick_any_result,
    finish=_pick_any_result,
)


def test_WindowAggregateTest__distinct() -> None:
    win_size = ITEM_COUNT // 2
    timestamps = [t for i in range(ITEM_COUNT) for t in (i, i)]  # [0, 0, 1, 1, 2, 2, ...]
    dag = DAG()
    stamps = stream_stage_from_list(dag, timestamps)
    windows = P.window_aggregate(
        dag, "distinct", stamps, identity, identity, P.WindowPolicy.tumbling(win_size), PICK_ANY
    )
    dag.edge(Edge.between(windows, dag.new_vertex("sink", P.collect())))
    expected = sorted(f"({round_up(i + 1, win_size):04d}, {i:04d})" for i in range(ITEM_COUNT))
    assert formatted(run(dag), end_and_value) == expected


def test_WindowAggregateTest__tumblingWindow() -> None:
    items = list(range(ITEM_COUNT))
    dag, _ = windowed_sum(items, P.WindowPolicy.tumbling(4))
    assert formatted(run(dag), end_and_value) == sums_as_strings(sliding_window_sums(4, 4, items))


def test_WindowAggregateTest__slidingWindow() -> None:
    items = list(range(ITEM_COUNT))
    dag, _ = windowed_sum(items, P.WindowPolicy.sliding(4, 2))
    assert formatted(run(dag), end_and_value) == sums_as_strings(sliding_window_sums(4, 2, items))


def assert_early_results_converge(policy: P.WindowPolicy, window_size: int, slide: int) -> None:
    items = list(range(ITEM_COUNT))
    dag, _ = windowed_sum(items, policy, EARLY_RESULTS_PERIOD)
    expected = sums_as_strings(sliding_window_sums(window_size, slide, items))
    job = submit_stream(dag)
    try:
        RECORDER.wait_for(
            lambda got: formatted(last_per_end(got), end_and_value) == expected,
            "the early results of every window",
        )
    finally:
        cancel(job)


def test_WindowAggregateTest__tumblingWindow_withEarlyResults() -> None:
    assert_early_results_converge(P.WindowPolicy.tumbling(4), 4, 4)


def test_WindowAggregateTest__slidingWindow_withEarlyResults() -> None:
    assert_early_results_converge(P.WindowPolicy.sliding(4, 2), 4, 2)


def test_WindowAggregateTest__sessionWindow() -> None:
    session_length = 4
    session_timeout = 2
    # [0, 1, 2, 3,   6, 7, 8, 9,   12, 13, 14, 15,  ...]
    items = [
        ts + (ts // session_length) * session_timeout
        for ts in range(ITEM_COUNT // session_length * session_length)
    ]
    dag = DAG()
    stamps = stream_stage_from_list(dag, items)
    sessions = dag.new_vertex(
        "session", P.aggregate_to_session_window(constant_key, identity, session_timeout, P.summing())
    )
    dag.edge(Edge.between(stamps, sessions).partitioned(constant_key).distributed())
    dag.edge(Edge.between(sessions, dag.new_vertex("sink", P.collect())))
    expected = session_window_sums(session_timeout, session_length + session_timeout, items)
    assert formatted(run(dag), start_and_value) == sums_as_strings(expected)


def test_WindowAggregateTest__when_tumblingWinWithEarlyResults_then_emitRepeatedly() -> None:
    early_result_period = 50
    dag = DAG()
    stamps = stream_stage_from_list(dag, [0], early_results=True)
    windows = P.window_aggregate(
        dag,
        "window",
        stamps,
        constant_key,
        identity,
        P.WindowPolicy.tumbling(10),
        P.counting(),
        early_results_millis=early_result_period,
    )
    dag.edge(Edge.between(windows, dag.new_vertex("sink", RecordingSink)))
    job = submit_stream(dag)
    try:
        got = RECORDER.wait_for(lambda items: len(items) >= 10, "10 early results")
    finally:
        cancel(job)
    assert all(result == WindowResult(0, 10, "ALL", 1, True) for result in got), got

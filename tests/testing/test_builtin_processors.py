"""Every built-in processor of `jetspark.processors`, verified with the kit in all its modes.

Sources are verified both as one processor and split over several (redistribution modes restore
their slices into other layouts); keyed processors with their input partitioned by their key.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from jetspark import DAG, Edge, JobConfig, Watermark
from jetspark import processors as P
from jetspark.core.context import RESULTS_ATTRIBUTE
from jetspark.runners.local import LocalRunner
from jetspark.testing import assert_dag_output, verify_processor

WORDS = ["a", "bb", "a", "ccc", "bb", "a"]


def items_of(output: list[Any]) -> list[Any]:
    return [x for x in output if not isinstance(x, Watermark)]


# ---- sources ------------------------------------------------------------------------------------


def test_from_iterable() -> None:
    verify_processor(P.from_iterable(range(7))).expect_output(list(range(7)))


def test_from_iterable_takes_its_share_by_processor_index() -> None:
    (
        verify_processor(P.from_iterable("abcdefg"))
        .parallelism(local=3)
        .processor_index(local=1)
        .disable_redistribution()
        .expect_output(["b", "e"])
    )


def test_generator_stream_with_a_count() -> None:
    verify_processor(P.generator_stream(count=6, fn=lambda seq: seq * 10)).expect_output(
        [0, 10, 20, 30, 40, 50]
    )


def test_generator_stream_emits_rising_watermarks() -> None:
    def check(mode: str, outputs: list[list[Any]]) -> None:
        assert sorted(items_of(outputs[0])) == list(range(8)), mode
        stamps = [x.timestamp for x in outputs[0] if isinstance(x, Watermark)]
        assert stamps == sorted(set(stamps)) and stamps and stamps[-1] <= 7, mode

    verify_processor(P.generator_stream(count=8, timestamp_fn=lambda x: x)).assert_output(1, check)


def test_a_rate_limited_generator_stream() -> None:
    (
        verify_processor(P.generator_stream(count=10, items_per_second=2000))
        .disable_progress_assertion()  # complete() waits for items to fall due
        .expect_output(list(range(10)))
    )


def test_an_endless_generator_stream_until_the_output_matches() -> None:
    def check(mode: str, outputs: list[list[Any]]) -> None:
        items = items_of(outputs[0])
        assert len(items) == len(set(items)), f"repeated items in {mode}"
        assert set(range(5)) <= set(items)

    (
        verify_processor(P.generator_stream(items_per_second=500))
        .disable_progress_assertion()
        .run_until_output_matches(timeout=10, extra_time=0.02)
        .assert_output(1, check)
    )


# ---- transforms -----------------------------------------------------------------------------------


def test_map_keeps_order_and_watermarks_and_drops_none() -> None:
    fn = lambda x: None if x == 3 else x * 2  # noqa: E731
    verify_processor(P.map(fn)).input([1, Watermark(5), 2, 3, 4]).expect_output([2, Watermark(5), 4, 8])


def test_filter() -> None:
    verify_processor(P.filter(lambda x: x % 2)).input([1, 2, 3, Watermark(1), 5, 6]).expect_output(
        [1, 3, Watermark(1), 5]
    )


def test_flat_map_under_back_pressure() -> None:
    verify_processor(P.flat_map(lambda x: [x] * x)).input([1, 3, 0, 2]).expect_output([1, 3, 3, 3, 2, 2])


def test_fused_chain() -> None:
    chain = P.Chain().map(lambda x: x + 1).filter(lambda x: x % 2 == 0).flat_map(lambda x: (x, -x))
    verify_processor(P.fused(chain)).input([1, 2, 3, Watermark(9), 5]).expect_output(
        [2, -2, 4, -4, Watermark(9), 6, -6]
    )


# ---- aggregation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (P.counting(), {"a": 3, "bb": 2, "ccc": 1}),
        (P.summing(len), {"a": 3, "bb": 4, "ccc": 3}),
        (P.to_list(), {"a": ["a", "a", "a"], "bb": ["bb", "bb"], "ccc": ["ccc"]}),
    ],
    ids=["counting", "summing", "to_list"],
)
def test_accumulate_by_key(op: P.AggregateOperation, expected: dict[str, Any]) -> None:
    verify_processor(P.accumulate_by_key(lambda w: w, op)).input([*WORDS, Watermark(3)]).partitioned_input(
        lambda w: w
    ).ignore_output_watermarks().expect_output(list(expected.items()), any_order=True)


def test_accumulate_by_key_with_steps_in_front() -> None:
    steps = P.Chain().filter(lambda w: w != "ccc").map(str.upper)
    verify_processor(P.accumulate_by_key(lambda w: w, P.counting(), steps)).input(WORDS).partitioned_input(
        str.upper
    ).expect_output([("A", 3), ("BB", 2)], any_order=True)


def test_combine_by_key() -> None:
    entries = [("a", 1), ("b", 2), ("a", 3), ("c", 0), ("b", 1)]
    verify_processor(P.combine_by_key(P.counting())).input(entries).partitioned_input(
        P.entry_key
    ).expect_output([("a", 4), ("b", 3), ("c", 0)], any_order=True)


def test_combine_by_key_finishes_averages() -> None:
    op = P.averaging()
    accs = []
    for values in ([1, 2], [3], [10]):
        acc = op.create()
        for v in values:
            acc = op.accumulate(acc, v)
        accs.append(acc)
    entries = [("x", accs[0]), ("x", accs[1]), ("y", accs[2])]
    verify_processor(P.combine_by_key(op)).input(entries).partitioned_input(P.entry_key).expect_output(
        [("x", 2.0), ("y", 10.0)], any_order=True
    )


def test_aggregate_by_key_in_a_dag_on_three_members() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(WORDS * 5))
    counts = P.aggregate_by_key(dag, "count", source, lambda w: w, P.counting())
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(counts, sink))
    assert_dag_output(dag, {"sink": [("a", 15), ("bb", 10), ("ccc", 5)]}, runner=LocalRunner(3))


# ---- sinks ----------------------------------------------------------------------------------------


class Results:
    """Stands for the runner's result collector; `take` empties it after each mode."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []

    def add(self, vertex: str, items: list[Any]) -> None:
        self.items.extend((vertex, item) for item in items)

    def take(self) -> list[tuple[str, Any]]:
        out, self.items = self.items, []
        return out


def test_collect_hands_every_item_to_the_runner() -> None:
    collector = Results()

    def check(mode: str, outputs: list[list[Any]]) -> None:
        assert outputs == [[]]
        assert sorted(collector.take()) == [("sink", 1), ("sink", 2), ("sink", 3)], mode

    (
        verify_processor(P.collect())
        .input([1, Watermark(1), 2, 3])
        .vertex_name("sink")
        .attributes(**{RESULTS_ATTRIBUTE: collector})
        .assert_output(1, check)
    )


def test_logger_logs_every_item(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="jetspark.vertex.log"):
        verify_processor(P.logger()).input(["x", "y"]).vertex_name("log").disable_logging().expect_output([])
    logged = [r.getMessage() for r in caplog.records if r.name == "jetspark.vertex.log"]
    assert logged.count("'x'") == logged.count("'y'") > 0


def test_noop() -> None:
    verify_processor(P.noop()).input([1, Watermark(2), 3]).expect_output([])


def test_collect_without_a_runner_result_collector_fails_clearly() -> None:
    from jetspark.testing import FailureKind, ProcessorVerificationError

    with pytest.raises(ProcessorVerificationError) as info:
        verify_processor(P.collect()).input([1]).job_config(JobConfig()).expect_output([])
    assert info.value.kind is FailureKind.RAISED
    assert "init() raised" in str(info.value)


# ---- file sources ---------------------------------------------------------------------------------


def test_read_jsonl_over_byte_range_splits(tmp_path: Any) -> None:
    import json

    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps({"n": n}) + "\n" for n in range(40)))

    def check(mode: str, outputs: list[list[Any]]) -> None:
        got = sorted(row["n"] for output in outputs for row in items_of(output))
        assert got == list(range(40)), mode

    verify_processor(P.read_jsonl(str(path), split_bytes=50)).assert_output(1, check)


def test_read_parquet_over_row_groups(tmp_path: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "a.parquet"
    pq.write_table(pa.Table.from_pylist([{"n": n} for n in range(30)]), path, row_group_size=7)

    def check(mode: str, outputs: list[list[Any]]) -> None:
        got = sorted(row["n"] for output in outputs for row in items_of(output))
        assert got == list(range(30)), mode

    verify_processor(P.read_parquet(str(path))).assert_output(1, check)

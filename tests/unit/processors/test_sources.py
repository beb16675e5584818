"""from_iterable and generator_stream on the local runner: splitting, rate, watermarks, idleness,
and snapshot/restore into the same and another parallelism."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import (
    DAG,
    AbstractProcessor,
    Edge,
    JobConfig,
    ProcessingGuarantee,
    ProcessorContext,
    Watermark,
)
from jetspark.core.context import RESULTS_ATTRIBUTE
from jetspark.runners.local import JobStatus, LocalJob, LocalRunner
from tests.gates import Gate, ask_to_suspend, gated_pass, gated_stream
from tests.waiting import wait_until


class Record(AbstractProcessor):
    """Test sink: records ("item", ordinal, item) and ("wm", timestamp) in arrival order."""

    def init_processor(self, context: ProcessorContext) -> None:
        self._add = context.attributes[RESULTS_ATTRIBUTE].add

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self._add(self.context.vertex_name, [("item", ordinal, item)])
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        self._add(self.context.vertex_name, [("wm", watermark.timestamp)])
        return True


class Tag(AbstractProcessor):
    """Emits (own global processor index, item)."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit((self.context.global_processor_index, item))


def source_to_sink(setting: Any, source: Any, lp: int = -1) -> list[Any]:
    dag = DAG()
    src = dag.new_vertex("source", source, lp)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(setting.edge(src, sink))
    return setting.run(dag).result("sink")  # type: ignore[no-any-return]


# ---- from_iterable ---------------------------------------------------------------------------


def test_from_iterable_emits_in_order_from_one_processor(single: Any) -> None:
    assert source_to_sink(single, P.from_iterable(range(50))) == list(range(50))


@pytest.mark.parametrize("lp", [1, 2])
def test_from_iterable_emits_each_item_once(setting: Any, lp: int) -> None:
    items = [f"item-{i}" for i in range(77)]
    assert sorted(source_to_sink(setting, P.from_iterable(items), lp)) == sorted(items)


def test_from_iterable_splits_items_by_global_processor_index(setting: Any) -> None:
    """Processor g of T takes positions g, g+T, ... in order (an isolated edge keeps g)."""
    lp = 2
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(41)), lp)
    tag = dag.new_vertex("tag", Tag, lp)
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(setting.edge(source, tag).isolated())
    dag.edge(setting.edge(tag, sink).distributed())
    result = setting.run(dag).result("sink")
    total = setting.members * lp
    for g in range(total):
        assert [item for index, item in result if index == g] == list(range(41))[g::total]


def test_from_iterable_with_more_processors_than_items(setting: Any) -> None:
    assert sorted(source_to_sink(setting, P.from_iterable([5, 6]), lp=2)) == [5, 6]
    assert source_to_sink(setting, P.from_iterable([]), lp=2) == []


def test_from_iterable_rejects_none_items() -> None:
    with pytest.raises(ValueError, match="position 2 is None"):
        P.from_iterable([1, 2, None])


# ---- generator_stream ------------------------------------------------------------------------


@pytest.mark.parametrize("lp", [1, 2])
def test_generator_emits_fn_of_each_sequence_number(setting: Any, lp: int) -> None:
    result = source_to_sink(setting, P.generator_stream(count=30, fn=lambda seq: seq * seq), lp)
    assert sorted(result) == [seq * seq for seq in range(30)]


def test_generator_emits_in_sequence_order_from_one_processor(single: Any) -> None:
    assert source_to_sink(single, P.generator_stream(count=25)) == list(range(25))


def test_generator_skips_items_mapped_to_none(single: Any) -> None:
    result = source_to_sink(single, P.generator_stream(count=20, fn=lambda s: s if s % 3 else None))
    assert result == [s for s in range(20) if s % 3]


def test_generator_with_count_zero_completes_empty(setting: Any) -> None:
    assert source_to_sink(setting, P.generator_stream(count=0)) == []


@pytest.mark.parametrize("members", [1, 2])
def test_generator_rate_limits_the_whole_vertex(members: int) -> None:
    """40 items at 400/s take about 0.1 s, whatever the parallelism."""
    dag = DAG()
    source = dag.new_vertex("source", P.generator_stream(count=40, items_per_second=400), 2)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, sink))
    started = time.monotonic()
    job = LocalRunner(members).run(dag, timeout=30)
    elapsed = time.monotonic() - started
    assert sorted(job.result("sink")) == list(range(40))
    assert 0.08 <= elapsed < 5


def test_endless_generator_runs_until_cancelled() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.generator_stream(items_per_second=2000))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, sink))
    job = LocalRunner(1).submit(dag)
    wait_until(lambda: len(job.result("sink")) >= 50)
    assert job.status is JobStatus.RUNNING
    job.cancel()
    result = job.result("sink")
    assert result == list(range(len(result)))


def test_generator_emits_rising_watermarks_after_its_items(single: Any) -> None:
    dag = DAG()
    source = dag.new_vertex(
        "source", P.generator_stream(count=60, items_per_second=600, timestamp_fn=lambda x: x * 10)
    )
    record = dag.new_vertex("record", Record)
    dag.edge(single.edge(source, record))
    events = single.run(dag).result("record")
    assert [e[2] for e in events if e[0] == "item"] == list(range(60))
    watermarks = [e[1] for e in events if e[0] == "wm"]
    assert len(watermarks) >= 2, "a rate-limited source emits in several bursts"
    assert watermarks == sorted(set(watermarks))
    assert watermarks[-1] == 590
    top = -1
    for event in events:
        if event[0] == "item":
            top = max(top, event[2] * 10)
        else:
            assert event[1] <= top, "a watermark never runs ahead of the items before it"


def two_source_merge(idle_timeout_millis: int | None) -> DAG:
    """A fast source with timestamps, and an endless one that emits nothing, into one vertex."""
    dag = DAG()
    fast = dag.new_vertex(
        "fast", P.generator_stream(count=20, items_per_second=400, timestamp_fn=lambda x: x)
    )
    silent = dag.new_vertex(
        "silent",
        P.generator_stream(
            items_per_second=1000,
            fn=lambda seq: None,
            timestamp_fn=int,
            idle_timeout_millis=idle_timeout_millis,
        ),
    )
    merge = dag.new_vertex("merge", Record)
    dag.edge(Edge.from_(fast).to(merge, 0))
    dag.edge(Edge.from_(silent).to(merge, 1))
    return dag


def test_idle_source_does_not_hold_back_the_watermark() -> None:
    job = LocalRunner(1).submit(two_source_merge(idle_timeout_millis=20))
    try:
        wait_until(lambda: ("wm", 19) in job.result("merge"))
    finally:
        job.cancel()


def test_without_idle_marker_a_silent_source_holds_back_the_watermark() -> None:
    job = LocalRunner(1).submit(two_source_merge(idle_timeout_millis=None))
    try:
        wait_until(lambda: len([e for e in job.result("merge") if e[0] == "item"]) == 20)
        time.sleep(0.1)
        assert [e for e in job.result("merge") if e[0] == "wm"] == []
    finally:
        job.cancel()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"count": -1}, "count must be >= 0"),
        ({"items_per_second": 0}, "items_per_second must be > 0"),
        ({"idle_timeout_millis": -5}, "idle_timeout_millis must be >= 0"),
    ],
)
def test_generator_rejects_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        P.generator_stream(**kwargs)


# ---- snapshot and restore --------------------------------------------------------------------

EXACTLY_ONCE = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=10)


def suspend_and_resume(
    dag: DAG,
    runner: LocalRunner,
    resume_members: int,
    gate: Gate,
    total: int,
    config: JobConfig = EXACTLY_ONCE,
) -> LocalJob:
    """Run until the sink received the gate's limit of items and a `gated_pass` step before it
    waits at `gate`; ask for a suspension, open the gate, resume on `resume_members` and wait for
    the end. Asked for while the step holds, the terminal snapshot comes a few items after the
    gate opens, long before the end.

    The sink's result then holds both executions' items; `total` is how many the job emits in
    all, to check that the suspension came mid-stream.
    """
    limit = gate.limit()
    assert limit is not None
    job = runner.submit(dag, config)
    wait_until(lambda: len(job.result("sink")) >= limit or job.status is not JobStatus.RUNNING)
    ask_to_suspend(job)
    gate.open()
    wait_until(lambda: job.status is not JobStatus.RUNNING, "the suspension", timeout=60)
    assert job.status is JobStatus.SUSPENDED, job.error
    assert job.last_snapshot is not None
    assert len(job.result("sink")) < total, "the job ended before it was suspended"
    job.resume(member_count=resume_members).join(60)
    return job


def assert_exactly_once(result: list[Any], expected: list[Any]) -> None:
    counts = Counter(result)
    assert sorted(counts) == sorted(expected)
    assert max(counts.values(), default=1) == 1, [item for item, n in counts.items() if n > 1][:10]


@pytest.mark.parametrize(
    ("members", "resume_members", "lp", "resume_lp"),
    [(1, 1, 1, 1), (1, 3, 1, 1), (3, 2, 1, 1), (2, 2, 2, 1), (1, 1, 1, 3)],
)
def test_generator_resumes_on_another_parallelism_without_loss_or_duplicates(
    tmp_path: Path, members: int, resume_members: int, lp: int, resume_lp: int
) -> None:
    """The generator (`gated_stream` is generator_stream held at a gate) is suspended while it waits
    at sequence number 200, and resumed with another parallelism."""
    count = 1200
    gate = Gate(tmp_path / "gate", hold_at=200)
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=count, items_per_second=2400), lp)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, sink).distributed())
    job = LocalRunner(members).submit(dag, EXACTLY_ONCE)
    wait_until(lambda: len(job.result("sink")) >= 200)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    assert sorted(job.result("sink")) == list(range(200)), "suspended at the gate"
    gate.open()
    source.with_local_parallelism(resume_lp)
    job.resume(member_count=resume_members).join(60)
    assert_exactly_once(job.result("sink"), list(range(count)))


def test_resume_continues_the_sequence_where_it_stopped(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=100)
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=600, items_per_second=2000))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, sink))
    job = LocalRunner(1).submit(dag, EXACTLY_ONCE)
    wait_until(lambda: len(job.result("sink")) >= 100)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    assert job.result("sink") == list(range(100)), "suspended at the gate"
    gate.open()
    job.resume().join(60)
    assert job.result("sink") == list(range(600))


@pytest.mark.parametrize("resume_members", [1, 3])
def test_from_iterable_resumes_under_back_pressure(tmp_path: Path, resume_members: int) -> None:
    """Batch and queues of 1: the source's last offer is nearly always rejected at a snapshot."""
    items = list(range(3000))
    gate = Gate(tmp_path / "gate", hold_at=200)
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items))
    step = dag.new_vertex("step", gated_pass(gate), 1)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, step).with_queue_size(1))
    dag.edge(Edge.between(step, sink).with_queue_size(1))
    job = suspend_and_resume(dag, LocalRunner(1, batch_size=1), resume_members, gate, total=len(items))
    assert_exactly_once(job.result("sink"), items)


@pytest.mark.parametrize(("members", "resume_members", "lp"), [(3, 1, 2), (2, 3, 1)])
def test_from_iterable_resumes_on_another_parallelism(
    tmp_path: Path, members: int, resume_members: int, lp: int
) -> None:
    items = [f"x{i}" for i in range(2000)]
    gate = Gate(tmp_path / "gate", hold_at=300)
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items), lp)
    step = dag.new_vertex("step", gated_pass(gate), 1)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, step).distributed().with_queue_size(1))
    dag.edge(Edge.between(step, sink).with_queue_size(1))
    job = suspend_and_resume(dag, LocalRunner(members, batch_size=1), resume_members, gate, total=len(items))
    assert_exactly_once(job.result("sink"), items)

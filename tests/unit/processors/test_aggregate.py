"""Aggregate operations, the two aggregation stages, and their snapshots, on the local runner."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.core.traverser import traverse_iterable
from jetspark.runners.local import JobStatus, LocalRunner
from tests.gates import Gate, ask_to_suspend, gated_pass, gated_stream
from tests.waiting import wait_until

ITEMS = list(range(200))


def key_of(x: int) -> str:
    return f"k{x % 7}"


def fold(op: P.AggregateOperation, items: Iterable[Any]) -> Any:
    acc = op.create()
    for item in items:
        acc = op.accumulate(acc, item)
    return acc


def grouped(items: Iterable[Any], key_fn: Callable[[Any], Any]) -> dict[Any, list[Any]]:
    groups: dict[Any, list[Any]] = defaultdict(list)
    for item in items:
        groups[key_fn(item)].append(item)
    return dict(groups)


# ---- operations ------------------------------------------------------------------------------


def test_counting() -> None:
    op = P.counting()
    assert op.finish(fold(op, "abc")) == 3
    assert op.combine(fold(op, "ab"), fold(op, "cde")) == 5
    assert op.deduct is not None and op.deduct(5, 2) == 3


def test_summing_applies_its_function() -> None:
    op = P.summing(lambda s: len(s))
    assert op.finish(fold(op, ["a", "bb", "ccc"])) == 6
    assert op.finish(op.create()) == 0
    assert op.combine(fold(op, ["a"]), fold(op, ["bb"])) == 3


def test_to_list_keeps_arrival_order_and_export_copies() -> None:
    op = P.to_list()
    acc = op.combine(fold(op, [1, 2]), fold(op, [3]))
    exported = op.export(acc)
    assert exported == [1, 2, 3]
    exported.append(4)
    assert op.finish(acc) == [1, 2, 3]


def test_averaging() -> None:
    op = P.averaging(lambda x: x * 2)
    assert op.finish(op.combine(fold(op, [1, 2]), fold(op, [3]))) == 4.0
    assert math.isnan(op.finish(op.create()))
    assert op.deduct is not None
    assert op.finish(op.deduct(fold(op, [1, 2, 3]), fold(op, [3]))) == 3.0


def test_with_finish_replaces_the_result_function() -> None:
    op = P.counting().with_finish(lambda n: f"{n} items")
    assert op.finish(fold(op, "xy")) == "2 items"
    assert op.export(fold(op, "xyz")) == "3 items"


# ---- processors ------------------------------------------------------------------------------


def test_accumulate_by_key_emits_one_entry_per_key(single: Any) -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(ITEMS))
    stage = dag.new_vertex("stage", P.accumulate_by_key(key_of, P.summing()))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(single.edge(source, stage))
    dag.edge(single.edge(stage, sink))
    result = single.run(dag).result("sink")
    assert sorted(result) == sorted((k, sum(v)) for k, v in grouped(ITEMS, key_of).items())


def test_combine_by_key_combines_and_finishes(setting: Any) -> None:
    entries = [(f"k{i % 5}", [i]) for i in range(40)]
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(entries), 2)
    stage = dag.new_vertex("stage", P.combine_by_key(P.to_list().with_finish(sorted)), 2)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(setting.edge(source, stage).partitioned(P.entry_key).distributed())
    dag.edge(setting.edge(stage, sink).distributed())
    result = setting.run(dag).result("sink")
    assert sorted(result) == sorted((f"k{r}", list(range(r, 40, 5))) for r in range(5))


OPERATIONS: dict[str, tuple[P.AggregateOperation, Callable[[list[int]], Any]]] = {
    "counting": (P.counting(), len),
    "summing": (P.summing(lambda x: x * 3), lambda xs: sum(x * 3 for x in xs)),
    "to_list": (P.to_list().with_finish(sorted), sorted),
    "averaging": (P.averaging(), lambda xs: sum(xs) / len(xs)),
}


def aggregate_dag(setting: Any, items: Iterable[Any], op: P.AggregateOperation, lp: int = -1) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items), lp)
    result = P.aggregate_by_key(dag, "agg", source, key_of, op)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(setting.edge(result, sink).distributed())
    return dag


@pytest.mark.parametrize("name", list(OPERATIONS))
@pytest.mark.parametrize("lp", [1, 2])
def test_aggregate_by_key(setting: Any, name: str, lp: int) -> None:
    op, expected_of = OPERATIONS[name]
    result = setting.run(aggregate_dag(setting, ITEMS, op, lp)).result("sink")
    assert sorted(result) == sorted((k, expected_of(v)) for k, v in grouped(ITEMS, key_of).items())


STEPS: dict[str, Any] = {
    "map-filter": P.Chain().map(lambda x: x * 2).filter(lambda x: x % 3 != 0),
    "flat-map-none": [
        ("flat_map", lambda x: [x, None, x + 1000] if x % 4 else []),
        ("map", lambda x: x or None),
    ],
}


@pytest.mark.parametrize("steps_name", list(STEPS))
@pytest.mark.parametrize("op_name", ["counting", "summing"])
def test_steps_run_inside_the_first_stage(
    setting: Any, reference: Any, steps_name: str, op_name: str
) -> None:
    steps = STEPS[steps_name]
    op, expected_of = OPERATIONS[op_name]
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(ITEMS), 2)
    result = P.aggregate_by_key(dag, "agg", source, key_of, op, steps=steps)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(setting.edge(result, sink).distributed())
    assert len(dag) == 4, "no vertex for the steps"
    expected = sorted((k, expected_of(v)) for k, v in grouped(reference(steps, ITEMS), key_of).items())
    assert sorted(setting.run(dag).result("sink")) == expected


WHOLE_ITEM_STEPS: dict[str, Any] = {
    "no-steps": [],
    "map-last": P.Chain().map(lambda x: x % 9).filter(lambda x: x != 4).map(lambda x: f"v{x}"),
    "filter-last": P.Chain().map(lambda x: x % 11).filter(lambda x: x % 2 == 0),
    "flat-map-last-with-none": P.Chain()
    .map(lambda x: x % 13)
    .flat_map(lambda x: [x, None, x % 3] if x else [None]),
    "flat-map-to-traverser": P.Chain().flat_map(lambda x: traverse_iterable([x % 5, x % 7])),
    "two-flat-maps": P.Chain()
    .flat_map(lambda x: [x, x + 1])
    .map(lambda x: x % 6)
    .flat_map(lambda x: [x] * (x % 3)),
}


@pytest.mark.parametrize("steps_name", list(WHOLE_ITEM_STEPS))
def test_counting_by_the_whole_item_counts_what_the_steps_emit(
    setting: Any, reference: Any, steps_name: str
) -> None:
    """`whole_item` counting takes a C path; it must count exactly what the generic path counts."""
    steps = WHOLE_ITEM_STEPS[steps_name]
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(ITEMS), 2)
    result = P.aggregate_by_key(dag, "agg", source, P.whole_item, P.counting(), steps=steps)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(setting.edge(result, sink).distributed())
    expected = Counter(reference(steps, ITEMS))
    got = dict(setting.run(dag).result("sink"))
    assert got == dict(expected) and None not in got


def test_accumulate_by_key_rejects_malformed_steps() -> None:
    with pytest.raises(ValueError, match="accumulate_by_key: step 0 has kind 'sort'"):
        P.accumulate_by_key(key_of, P.counting(), steps=[("sort", sorted)])


def test_aggregate_by_key_adds_two_vertices_and_their_edges() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable([1]))
    combine = P.aggregate_by_key(dag, "agg", source, key_of, P.counting())
    assert combine.name == "agg"
    prepare = dag.get_vertex("agg-prepare")
    into_prepare, into_combine = dag.inbound_edges("agg-prepare")[0], dag.inbound_edges("agg")[0]
    assert into_prepare.source is source and not into_prepare.is_distributed
    assert into_combine.source is prepare and into_combine.is_distributed
    assert into_combine.key_fn is P.entry_key


def test_aggregate_of_many_keys_emits_under_back_pressure(single: Any) -> None:
    """More keys than the batch budget: emission at complete() goes out over many calls."""
    items = list(range(3000))
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items))
    result = P.aggregate_by_key(dag, "agg", source, lambda x: x % 1500, P.counting())
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(single.edge(result, sink))
    assert sorted(single.run(dag).result("sink")) == [(k, 2) for k in range(1500)]


def test_aggregate_of_no_items_emits_nothing(setting: Any) -> None:
    assert setting.run(aggregate_dag(setting, [], P.counting())).result("sink") == []


# ---- snapshots -------------------------------------------------------------------------------


@pytest.mark.parametrize(("members", "resume_members"), [(1, 1), (3, 1), (1, 3), (2, 3)])
@pytest.mark.parametrize("name", ["counting", "to_list"])
def test_aggregation_state_survives_suspend_and_resume(
    tmp_path: Path, members: int, resume_members: int, name: str
) -> None:
    op, expected_of = OPERATIONS[name]
    count, held = 1500, 300
    gate = Gate(tmp_path / "gate", hold_at=held)
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=count))
    result = P.aggregate_by_key(dag, "agg", source, key_of, op)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(result, sink).distributed())
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=20)
    job = LocalRunner(members).submit(dag, config)
    wait_until(lambda: job.metrics().get("source", {}).get("emitted", 0) >= held)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    assert job.metrics()["source"]["emitted"] == held, "suspended mid-stream, at the gate"
    assert job.last_snapshot is not None and job.last_snapshot.data.get("agg-prepare")
    gate.open()
    job.resume(member_count=resume_members).join(60)
    expected = sorted((k, expected_of(v)) for k, v in grouped(range(count), key_of).items())
    assert sorted(job.result("sink")) == expected


def test_suspend_while_stage_one_emits_at_complete(tmp_path: Path) -> None:
    """Snapshots taken between complete() calls hold only the entries not yet emitted.

    A step after the aggregation holds its items at a gate: back-pressure stops stage one part-way
    through its emission. The suspension is asked for while it is stopped, and the gate opens only
    then, so the terminal snapshot comes a few items later, long before the emission ends."""
    keys, held = 1500, 50
    gate = Gate(tmp_path / "gate", hold_at=held)
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(keys)))
    result = P.aggregate_by_key(dag, "agg", source, lambda x: x, P.counting())
    step = dag.new_vertex("held", gated_pass(gate), 1)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(result, step))
    dag.edge(Edge.between(step, sink))
    for edge in dag.edges:
        edge.with_queue_size(1)
    # batch 1: a snapshot saves one entry per call, so snapshots must not come too often
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=200)
    job = LocalRunner(2, batch_size=1).submit(dag, config)
    wait_until(lambda: job.metrics().get("agg-prepare", {}).get("emitted", 0) >= held, timeout=120)
    ask_to_suspend(job)  # the terminal snapshot cannot complete while the step holds
    gate.open()
    wait_until(lambda: job.status is not JobStatus.RUNNING, "the suspension", timeout=120)
    assert job.status is JobStatus.SUSPENDED, job.error
    assert job.metrics()["agg-prepare"]["emitted"] < keys, "suspended mid-emission"
    job.resume(member_count=3).join(120)
    assert sorted(job.result("sink")) == [(k, 1) for k in range(keys)]

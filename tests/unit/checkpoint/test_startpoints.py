"""The startpoint store and the fan-out (seed 001): types and their JSON form, write / read with
expiry / delete / delete all, newer-wins when a plan is built, and a changed member count."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark import processors as P
from jetspark.checkpoint.startpoint_source import SourceStartpoints, StartpointRuntime
from jetspark.checkpoint.startpoints import (
    Oldest,
    SourcePartition,
    Specific,
    Startpoint,
    StartpointStore,
    Timestamp,
    Upcoming,
    startpoint_from_json,
    startpoint_to_json,
)
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.core.context import STARTPOINTS_ATTRIBUTE
from jetspark.planning.pipeline import build_plan
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners import startpoints as runner_startpoints

A = SourcePartition("lines", "a.log")
B = SourcePartition("lines", "b.log")
C = SourcePartition("lines", "c.log")

startpoints = st.one_of(
    st.builds(Specific, st.integers(0, 2**62), st.floats(0, 2e9)),
    st.builds(Timestamp, st.integers(-(2**62), 2**62), st.floats(0, 2e9)),
    st.builds(Oldest, st.floats(0, 2e9)),
    st.builds(Upcoming, st.floats(0, 2e9)),
)


@given(startpoints)
def test_a_startpoint_survives_its_json_form(startpoint: Startpoint) -> None:
    assert startpoint_from_json(startpoint_to_json(startpoint)) == startpoint


def test_bad_startpoints_are_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="offset must be an int >= 0"):
        Specific(-1)
    with pytest.raises(ValueError, match="unknown startpoint type 'latest'"):
        startpoint_from_json({"type": "latest", "created": 1.0})


def test_write_read_delete_per_partition_and_per_partition_and_processor(tmp_path: Path) -> None:
    store = StartpointStore(str(tmp_path), "job")
    store.write(A, Specific(5, created=100.0))
    store.write(A, Upcoming(created=101.0), processor=1)
    assert store.read(A, now=200.0) == Specific(5, created=100.0)
    assert store.read(A, processor=1, now=200.0) == Upcoming(created=101.0)
    assert store.read(A, processor=0, now=200.0) is None
    assert store.read(B, now=200.0) is None
    assert {(partition, processor) for partition, processor, _ in store.written()} == {(A, None), (A, 1)}
    assert store.delete(A)
    assert not store.delete(A)
    assert store.read(A, now=200.0) is None and store.read(A, processor=1, now=200.0) is not None
    store.delete_all()
    assert list(store.written()) == []


def test_read_ignores_startpoints_older_than_the_expiry(tmp_path: Path) -> None:
    store = StartpointStore(str(tmp_path), "job")
    store.write(A, Oldest(created=1000.0))
    assert store.read(A, expiry_seconds=60, now=1059.0) == Oldest(created=1000.0)
    assert store.read(A, expiry_seconds=60, now=1061.0) is None


def test_the_store_lives_under_the_checkpoint_root_apart_from_snapshots_or_in_its_own_directory(
    tmp_path: Path,
) -> None:
    StartpointStore(str(tmp_path / "ck"), "job").write(A, Oldest())
    assert (tmp_path / "ck" / ".startpoints" / "job" / "written").is_dir()
    StartpointStore(str(tmp_path / "ck"), "job", directory=str(tmp_path / "sp")).write(A, Oldest())
    assert (tmp_path / "sp" / "job" / "written").is_dir()
    with pytest.raises(ValueError, match=r"job name '\.\./x'"):
        StartpointStore(str(tmp_path), "../x")


def tail_plan(directory: Path, members: int, lp: int = 1) -> ExecutionPlan:
    dag = DAG()
    source = dag.new_vertex("lines", P.directory_stream(str(directory)), local_parallelism=lp)
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.collect())))
    return build_plan(dag, config(directory), members)


def config(root: Path) -> JobConfig:
    return JobConfig(
        name="job", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, checkpoint_root=str(root)
    )


@pytest.mark.parametrize("processor_newer", [True, False])
def test_fan_out_takes_the_newer_of_the_partition_and_the_partition_processor_startpoint(
    tmp_path: Path, processor_newer: bool
) -> None:
    plan = tail_plan(tmp_path, 3)
    owner = runner_startpoints.owner_in(plan, A)
    assert owner is not None
    store = StartpointStore(str(tmp_path), "job")
    partition_only = Specific(1, created=100.0)
    for_processor = Specific(2, created=200.0 if processor_newer else 50.0)
    store.write(A, partition_only)
    store.write(A, for_processor, processor=owner)
    fanned = store.fan_out(lambda p: runner_startpoints.owner_in(plan, p), now=300.0)
    expected = for_processor if processor_newer else partition_only
    assert fanned == {("lines", owner): {"a.log": expected}}
    assert store.fan_out_for("lines", owner) == {"a.log": expected}
    assert list(store.written()) == []  # both consumed


def test_fan_out_leaves_startpoints_for_another_processor_or_vertex_and_drops_expired_ones(
    tmp_path: Path,
) -> None:
    plan = tail_plan(tmp_path, 3)
    owner = runner_startpoints.owner_in(plan, A)
    assert owner is not None
    store = StartpointStore(str(tmp_path), "job")
    store.write(A, Oldest(created=1000.0), processor=(owner + 1) % 3)
    store.write(SourcePartition("elsewhere", "x"), Oldest(created=1000.0))
    store.write(B, Oldest(created=1.0))  # expired
    assert store.fan_out(lambda p: runner_startpoints.owner_in(plan, p), expiry_seconds=500, now=1100.0) == {}
    left = {(p, proc) for p, proc, _ in store.written()}
    assert left == {(A, (owner + 1) % 3), (SourcePartition("elsewhere", "x"), None)}


def test_a_plan_on_another_member_count_moves_each_fan_out_to_the_new_owner(tmp_path: Path) -> None:
    store = StartpointStore(str(tmp_path), "job")
    splits = [f"f{i}.log" for i in range(12)]
    for split in splits:
        store.write(SourcePartition("lines", split), Specific(7))
    cfg = config(tmp_path)
    for members, lp in ((2, 1), (3, 2), (1, 1)):
        plan = tail_plan(tmp_path, members, lp)
        fanned = runner_startpoints.fan_out(cfg, "job", plan)
        owners = {split: index for (_, index), got in fanned.items() for split in got}
        assert owners == {s: runner_startpoints.owner_in(plan, SourcePartition("lines", s)) for s in splits}
        assert store.fan_outs() == fanned  # the old plan's files are gone
    # a newer startpoint written later wins over the fan-out of the earlier plan
    store.write(SourcePartition("lines", "f0.log"), Oldest())
    fanned = runner_startpoints.fan_out(cfg, "job", tail_plan(tmp_path, 2))
    assert [type(got["f0.log"]) for got in fanned.values() if "f0.log" in got] == [Oldest]
    assert sum(len(got) for got in fanned.values()) == len(splits)


def test_startpoints_need_a_job_that_keeps_snapshots_in_a_checkpoint_root(tmp_path: Path) -> None:
    plan = tail_plan(tmp_path, 1)
    StartpointStore(str(tmp_path), "job").write(A, Oldest())
    assert runner_startpoints.fan_out(JobConfig(name="job", checkpoint_root=str(tmp_path)), "job", plan) == {}
    assert runner_startpoints.runtime(JobConfig(name="job"), "job", -1) is None
    assert runner_startpoints.runtime(config(tmp_path), "job", 4) == StartpointRuntime(
        str(tmp_path), "job", None, 4
    )


def source_startpoints(root: Path, restore_id: int) -> SourceStartpoints:
    runtime = StartpointRuntime(str(root), "job", None, restore_id)
    return SourceStartpoints({STARTPOINTS_ATTRIBUTE: runtime}, "lines", 0)


def test_a_source_resolves_once_and_in_a_later_epoch_drops_what_a_newer_snapshot_holds(
    tmp_path: Path,
) -> None:
    """Epochs: phase 2 never reaches a source, so the next epoch's start removes the fan-out of
    the splits a newer restored snapshot holds an offset of (seed 001: removed upon commit), moved
    or not: the source saved the resolved offset, so the snapshot starts them there. A split the
    snapshot has no offset of keeps its fan-out."""
    store = StartpointStore(str(tmp_path), "job")
    store.write(A, Upcoming())
    store.write(B, Upcoming())
    store.write(C, Upcoming())
    store.fan_out(lambda p: 0)
    ends = {"a.log": 100, "b.log": 50, "c.log": 0}
    calls: list[str] = []

    def resolve(split: str, startpoint: Startpoint) -> int:
        calls.append(split)
        return ends[split]

    first = source_startpoints(tmp_path, restore_id=3)
    assert first.start({"a.log": 10}, resolve) == {"a.log": 100, "b.log": 50, "c.log": 0}
    ends = {"a.log": 999, "b.log": 999, "c.log": 999}  # the files grew: a second resolution would skip that
    again = source_startpoints(tmp_path, restore_id=3)  # a retry from the same snapshot
    assert again.start({"a.log": 10}, resolve) == {"a.log": 100, "b.log": 50, "c.log": 0}
    assert calls == ["a.log", "b.log", "c.log"]
    # snapshot 4 holds a.log at 120 (moved) and b.log at 50 (the resolved offset: nothing came);
    # it has no offset of c.log
    later = source_startpoints(tmp_path, restore_id=4)
    assert later.start({"a.log": 120, "b.log": 50}, resolve) == {"c.log": 0}
    assert set(store.fan_out_for("lines", 0)) == {"c.log"}
    assert store.resolved(A) is None and store.resolved(B) is None and store.resolved(C) is not None


def test_a_commit_removes_the_fan_out_of_every_split_its_snapshot_holds(tmp_path: Path) -> None:
    """The local runner: `saved` then `committed` (phase 2) removes the fan-out of each split the
    saved offsets hold, moved or not; a later start resolves nothing again."""
    store = StartpointStore(str(tmp_path), "job")
    store.write(A, Upcoming())
    store.write(B, Upcoming())
    store.fan_out(lambda p: 0)
    source = source_startpoints(tmp_path, restore_id=-1)
    assert source.start({}, lambda split, sp: 40) == {"a.log": 40, "b.log": 40}
    source.saved({"a.log": 55})  # b.log not saved: no offset of it in this snapshot
    assert set(store.fan_out_for("lines", 0)) == {"a.log", "b.log"}, "nothing goes before the commit"
    source.committed()
    assert set(store.fan_out_for("lines", 0)) == {"b.log"}
    source.saved({"a.log": 55, "b.log": 40})  # b.log received nothing: the resolved offset
    source.committed()
    assert store.fan_outs() == {}


def test_without_a_runtime_a_source_has_no_startpoints(tmp_path: Path) -> None:
    assert SourceStartpoints({}, "lines", 0).start({}, lambda split, sp: 0) == {}

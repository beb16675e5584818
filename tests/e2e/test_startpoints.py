"""Startpoints on the local runner with `directory_stream` (seed 001): each resolution rule, the
override of a snapshot's offset (the snapshot untouched), removal only after a moved offset, a
restart between fan-out and the first commit, and a changed member count."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from jetspark import processors as P
from jetspark.checkpoint.startpoints import (
    Oldest,
    SourcePartition,
    Specific,
    Startpoint,
    StartpointStore,
    Timestamp,
    Upcoming,
)
from jetspark.core import DAG, Edge, JobCancelledError, JobConfig, JobFailedError, ProcessingGuarantee
from jetspark.core.errors import RestartableError
from jetspark.runners import startpoints as runner_startpoints
from jetspark.runners.local import JobStatus, LocalJob, LocalRunner
from tests.waiting import wait_until

JOB = "tail"


def stamp(line: str) -> int:
    """Line n was written at n * 10 ms."""
    return int(line) * 10


def tail_dag(directory: Path, step: Callable[[str], str] = str) -> DAG:
    dag = DAG()
    source = dag.new_vertex(
        "lines", P.directory_stream(str(directory), "*.log", poll_millis=5, timestamp_fn=stamp)
    )
    mapped = dag.new_vertex("step", P.map(step))
    dag.edge(Edge.between(source, mapped))
    dag.edge(Edge.between(mapped, dag.new_vertex("sink", P.collect())))
    return dag


def config(root: Path, interval: int = 10) -> JobConfig:
    return JobConfig(
        name=JOB,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=interval,
        checkpoint_root=str(root / "ck"),
    )


def append(path: Path, first: int, last: int) -> None:
    with path.open("a") as file:
        file.write("".join(f"{n}\n" for n in range(first, last)))


def store_of(root: Path) -> StartpointStore:
    return StartpointStore(str(root / "ck"), JOB)


def stop(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(120)


def started(root: Path, *splits: str) -> Callable[[], bool]:
    """True once the source has resolved the startpoints of `splits` (or already removed them at
    a commit after that)."""
    store = store_of(root)

    def pending() -> set[str]:  # written but not fanned out yet, or fanned out and not resolved
        general = {partition.split for partition, _, _ in store.written()}
        fanned = {split for by_split in store.fan_outs().values() for split in by_split}
        resolved = {s for s in splits if store.resolved(SourcePartition("lines", s)) is not None}
        return general | (fanned - resolved)

    return lambda: not (pending() & set(splits))


@pytest.mark.parametrize(
    ("startpoint", "expected_first"),
    [
        (Specific(len("0\n1\n2\n")), 3),  # that byte offset
        (Timestamp(45), 5),  # the first line at or after 45 ms
        (Timestamp(10_000), 10),  # none: the end, so only lines appended later
        (Upcoming(), 10),  # the end
    ],
    ids=["specific", "timestamp", "timestamp-after-all", "upcoming"],
)
def test_a_startpoint_resolves_to_where_the_source_starts(
    tmp_path: Path, startpoint: Startpoint, expected_first: int
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    append(source / "a.log", 0, 10)
    store_of(tmp_path).write(SourcePartition("lines", "a.log"), startpoint)
    job = LocalRunner(1).submit(tail_dag(source), config(tmp_path))
    wait_until(started(tmp_path, "a.log"))
    append(source / "a.log", 10, 12)
    wait_until(lambda: "11" in job.result("sink"))
    stop(job)
    assert job.result("sink") == [str(n) for n in range(expected_first, 12)]


def test_oldest_overrides_the_snapshots_offset_and_leaves_the_snapshot_as_it_was(tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    append(source / "a.log", 0, 10)
    job = LocalRunner(1).submit(tail_dag(source), config(tmp_path, interval=60_000))
    wait_until(lambda: len(job.result("sink")) == 10)
    job.suspend()  # a snapshot whose offset is the end of the file
    snapshot_files = digest(tmp_path / "ck" / JOB)
    store_of(tmp_path).write(SourcePartition("lines", "a.log"), Oldest())
    job.resume()
    wait_until(lambda: len(job.result("sink")) == 20)
    assert digest(tmp_path / "ck" / JOB) == snapshot_files  # no snapshot was taken since, none changed
    stop(job)
    assert Counter(job.result("sink")) == {str(n): 2 for n in range(10)}


def digest(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != "DRIVER"  # the driver lock names the driver that resumed
    }


def test_a_fan_out_goes_at_the_next_commit_also_for_a_file_that_received_nothing(tmp_path: Path) -> None:
    """Seed 001: "SSP+TaskName keyed startpoints are deleted upon checkpoint commit". b.log receives
    nothing before the commit; the snapshot holds its resolved offset (the end), so after its
    fan-out is gone, and after a restore from a snapshot, only lines appended later are read."""
    source = tmp_path / "in"
    source.mkdir()
    for name in ("a.log", "b.log"):
        append(source / name, 0, 10)
        store_of(tmp_path).write(SourcePartition("lines", name), Upcoming())
    store = store_of(tmp_path)

    def fanned_out() -> set[str]:
        return {split for splits in store.fan_outs().values() for split in splits}

    job = LocalRunner(1).submit(tail_dag(source), config(tmp_path))
    wait_until(started(tmp_path, "a.log", "b.log"))
    resolutions = [SourcePartition("lines", name) for name in ("a.log", "b.log")]
    # the fan-out goes, then the resolutions it used
    wait_until(lambda: fanned_out() == set() and all(store.resolved(p) is None for p in resolutions))
    append(source / "a.log", 10, 12)
    wait_until(lambda: sorted(job.result("sink")) == ["10", "11"])
    job.suspend()
    append(source / "b.log", 10, 11)  # while the job is suspended
    job.resume()  # restores the terminal snapshot: b.log's offset is the startpoint's
    wait_until(lambda: len(job.result("sink")) >= 3)
    stop(job)
    assert sorted(job.result("sink")) == ["10", "10", "11"], "b.log from its startpoint, not its start"


def test_a_restart_between_fan_out_and_the_first_commit_starts_from_the_same_offset(tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    append(source / "a.log", 0, 10)
    store_of(tmp_path).write(SourcePartition("lines", "a.log"), Upcoming())
    marker = tmp_path / "failed"

    def fail_once(line: str) -> str:
        if line == "11" and not marker.exists():
            marker.touch()
            raise RestartableError("injected before the first commit")
        return line

    job = LocalRunner(1).submit(tail_dag(source, fail_once), config(tmp_path, interval=60_000))
    wait_until(started(tmp_path, "a.log"))
    append(source / "a.log", 10, 13)  # Upcoming resolved to line 10; a fresh resolution would skip these
    wait_until(lambda: job.restarts == 1 and "12" in job.result("sink"))
    assert job.last_snapshot is None  # nothing was committed before the restart
    stop(job)
    assert set(job.result("sink")) == {"10", "11", "12"}


def test_a_job_planned_again_on_another_member_count_applies_the_startpoints_at_their_new_owners(
    tmp_path: Path,
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    names = [f"f{i}.log" for i in range(6)]
    store = store_of(tmp_path)
    for name in names:
        append(source / name, 0, 10)
        store.write(SourcePartition("lines", name), Specific(len("0\n1\n2\n3\n4\n")))

    def refuse(line: str) -> str:
        raise ValueError("this run fails before its first commit")

    first = LocalRunner(2).submit(tail_dag(source, refuse), config(tmp_path, interval=60_000))
    with pytest.raises(JobFailedError, match="fails before its first commit"):
        first.join(30)
    assert first.status is JobStatus.FAILED
    job = LocalRunner(3).submit(tail_dag(source), config(tmp_path, interval=60_000))
    wait_until(lambda: len(job.result("sink")) == 30)
    owners = {split: index for (_, index), splits in store.fan_outs().items() for split in splits}
    assert owners == {
        n: runner_startpoints.owner_in(planned(job), SourcePartition("lines", n)) for n in names
    }
    assert len(set(owners.values())) > 1
    stop(job)
    assert Counter(job.result("sink")) == {str(n): 6 for n in range(5, 10)}


def planned(job: LocalJob) -> object:
    from jetspark.planning.pipeline import build_plan

    return build_plan(job.dag, job.config, job.member_count)


def test_upcoming_starts_after_the_last_complete_line_so_a_line_being_written_is_read_whole(
    tmp_path: Path,
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    append(source / "a.log", 0, 3000)
    with (source / "a.log").open("a") as file:
        file.write("30")  # the start of line 3000 (its newline is not written yet)
    store_of(tmp_path).write(SourcePartition("lines", "a.log"), Upcoming())
    job = LocalRunner(1).submit(tail_dag(source), config(tmp_path))
    wait_until(started(tmp_path, "a.log"))
    with (source / "a.log").open("a") as file:
        file.write("00\n3001\n")
    wait_until(lambda: len(job.result("sink")) == 2)
    stop(job)
    assert job.result("sink") == ["3000", "3001"]


@pytest.mark.parametrize(
    ("startpoint", "timestamps", "error"),
    [
        (Specific(1000), True, r"Specific startpoint offset 1000 is beyond the end of .*a\.log \(20 bytes\)"),
        (Timestamp(5), False, r"Timestamp startpoint for file 'a\.log' needs directory_stream\(timestamp_fn"),
    ],
    ids=["offset-past-the-end", "timestamp-without-timestamp_fn"],
)
def test_a_startpoint_the_source_cannot_honour_fails_the_job_naming_it(
    tmp_path: Path, startpoint: Startpoint, timestamps: bool, error: str
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    append(source / "a.log", 0, 10)
    store_of(tmp_path).write(SourcePartition("lines", "a.log"), startpoint)
    dag = DAG()
    fn = stamp if timestamps else None
    lines = dag.new_vertex("lines", P.directory_stream(str(source), poll_millis=5, timestamp_fn=fn))
    dag.edge(Edge.between(lines, dag.new_vertex("sink", P.collect())))
    job = LocalRunner(1).submit(dag, config(tmp_path))
    with pytest.raises(JobFailedError, match=error):
        job.join(120)

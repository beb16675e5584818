"""Review s15: the Processor contract (seed 003) for processors KEPT between Spark epochs.

Differential: the same DAG of recording processors runs on the local runner with snapshots (the
reference) and on Spark `local[2]` in epochs, where the state cache (`runners.spark.state_cache`)
keeps a member's processors in the Python worker from one epoch to the next, or they are restored
from the checkpoint store (a miss). Each processor instance writes every call it gets, with its
arguments, the pid and the epoch run (`RUN_ATTRIBUTE`) it was bound to, to a file of its own.

The review found six defects, fixed since and tested here: a kept processor's init outbox went
stale (its output was lost), kept processors were never closed without the handoff registry or
without reused workers, a kept processor changed threads between epochs (non-cooperative ones
and ones whose close must run on their thread are no longer kept), a job submitted again with new
processor code went on with the old kept instances, a kept processor outlived its supplier's
close. The other tests check the rest of the seed's rules for kept and restored processors (call
order, snapshots, watermarks, completion, raising methods, stale entries).

The recording processors are keepable: `AbstractProcessor`s that do not override `init`,
`snapshot_commit_prepare` or `snapshot_commit_finish` in their class. The two-phase commit
methods are recorded through instance attributes set in `__init__` (the tasklet calls them on
the instance; `state_cache.keepable` looks at the class).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.context import RUN_ATTRIBUTE, ProcessorContext
from jetspark.core.watermark import Watermark
from jetspark.processors import collect
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

pytestmark = [pytest.mark.spark]


# ---- recording ---------------------------------------------------------------------------------


class Recorder:
    """One processor instance's log: `<folder>/<pid>-<uuid>.jsonl`, one JSON list per call."""

    def __init__(self, folder: str) -> None:
        self.path = os.path.join(folder, f"{os.getpid()}-{uuid.uuid4().hex}.jsonl")
        self.last = ""

    def __call__(self, event: str, *args: Any) -> None:
        if event == "process" and self.last == "process":
            return  # consecutive batches: one line
        self.last = event
        with open(self.path, "a", encoding="utf-8") as file:
            file.write(json.dumps([event, *args, os.getpid(), time.time()]) + "\n")


class Steer:
    """Files in a folder that make a recording processor raise: `<method>@<vertex>#<global>`
    present makes that method raise once (the first call to rename it to `...fired` raises)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def arm(self, method: str, vertex: str, index: int) -> None:
        Path(self.folder, f"{method}@{vertex}#{index}").touch()

    def fired(self, method: str, vertex: str, index: int) -> bool:
        return Path(self.folder, f"{method}@{vertex}#{index}.fired").exists()

    def fires(self, method: str, vertex: str, index: int) -> bool:
        name = os.path.join(self.folder, f"{method}@{vertex}#{index}")
        if not os.path.exists(name):
            return False
        try:
            os.rename(name, name + ".fired")
        except FileNotFoundError:
            return False
        return True


class Recording(AbstractProcessor):
    """A keyed running count (key = item % 7) emitting `(key, n)` per item, which records every
    contract call. Keepable by the Spark state cache."""

    cooperative = True

    def __init__(self, folder: str, steer: Steer | None = None) -> None:
        self.record = Recorder(folder)
        self.steer = steer
        self.counts: dict[int, int] = {}
        self.name = "?"
        self.record("made")
        # recorded without overriding them in the class (the state cache keeps such processors)
        self.snapshot_commit_prepare = self._prepare  # type: ignore[method-assign]
        self.snapshot_commit_finish = self._finish  # type: ignore[method-assign]

    def is_cooperative(self) -> bool:
        return self.cooperative

    def _raise_if(self, method: str) -> None:
        if self.steer is not None and self.steer.fires(
            method, self.context.vertex_name, self.context.global_processor_index
        ):
            from jetspark.core.errors import RestartableError

            self.record("raise", method)
            raise RestartableError(f"{method} of {self.name} raises as steered")

    def _bind(self, outbox: Any, context: ProcessorContext) -> None:
        super()._bind(outbox, context)
        self.name = f"{context.vertex_name}#{context.global_processor_index}"
        self.record("bind", self.name, context.attributes.get(RUN_ATTRIBUTE))

    def init_processor(self, context: ProcessorContext) -> None:
        self.record("init", self.name)
        self._raise_if("init")

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.record("process", ordinal)
        self._raise_if("process")
        key = item[0] if isinstance(item, tuple) else item % 7
        n = self.counts.get(key, 0) + 1
        if not self.try_emit((key, n) if not isinstance(item, tuple) else item):
            return False
        self.counts[key] = n
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        self._raise_if("wm")
        done = super().try_process_watermark(watermark)
        self.record("wm", watermark.timestamp, done)
        return done

    def complete_edge(self, ordinal: int) -> bool:
        self._raise_if("complete_edge")
        self.record("complete_edge", ordinal, True)
        return True

    def complete(self) -> bool:
        self._raise_if("complete")
        self.record("complete", True)
        return True

    def save_to_snapshot(self) -> bool:
        self.record("save", True)
        self._raise_if("save")
        for key, n in self.counts.items():
            if not self.try_emit_to_snapshot(key, n):
                raise AssertionError("a snapshot bucket refused a small entry")
        return True

    def _prepare(self) -> bool:
        self.record("prepare", True)
        self._raise_if("prepare")
        return True

    def _finish(self, success: bool) -> bool:
        self.record("finish", success, True)
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.record("restore", key, value)
        self._raise_if("restore")
        self.counts[key] = value

    def finish_snapshot_restore(self) -> bool:
        self.record("finish_restore", True)
        self._raise_if("finish_restore")
        return True

    def close(self) -> None:
        self.record("close")


class Blocking(Recording):
    """`Recording`, non-cooperative."""

    cooperative = False


def read_logs(folder: Path) -> list[list[list[Any]]]:
    logs = []
    for path in sorted(folder.glob("*.jsonl")):
        logs.append([json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()])
    return logs


#: Processing methods: `restore_from_snapshot` and `finish_snapshot_restore` come before all of them.
PROCESSING = {"process", "wm", "complete_edge", "complete", "save", "prepare"}


def violations(calls: list[list[Any]]) -> list[str]:
    """The seed's rules broken by one instance's calls."""
    found: list[str] = []
    events = [c[0] for c in calls if c[0] not in ("made", "bind")]
    if not events or events == ["close"]:  # the seed: close() "might get called even if init() was not"
        return found
    if events[0] != "init":
        found.append(f"first call {events[0]}, not init")
    if events.count("init") != 1:
        found.append(f"init {events.count('init')} times")
    if events.count("close") != 1:
        found.append(f"close {events.count('close')} times")
    elif events[-1] != "close":
        found.append(f"{events[-1]} after close")
    processed = completed = raised = False
    edges_done: set[int] = set()
    top: int | None = None
    state = ""
    for call in calls:
        event = call[0]
        if event in ("made", "bind"):
            continue
        if raised and event != "close":
            found.append(f"{event} after the processor raised")
        if event == "raise":
            raised = True
        if event in ("restore", "finish_restore") and processed:
            found.append(f"{event} after processing began")
        if event in PROCESSING:
            processed = True
        if completed and event not in ("finish", "close"):
            found.append(f"{event} after complete() returned True")
        if event == "complete" and call[1]:
            completed = True
        if event == "complete_edge" and call[2]:
            if call[1] in edges_done:
                found.append(f"complete_edge({call[1]}) again")
            edges_done.add(call[1])
        if event == "wm" and call[2]:
            if top is not None and call[1] <= top:
                found.append(f"watermark {call[1]} after {top}")
            top = call[1]
        if event == "prepare" and state != "saved":
            found.append("snapshot_commit_prepare not right after save_to_snapshot")
        if event == "finish" and state != "prepared":
            found.append("snapshot_commit_finish without a prepared snapshot")
        if event == "save":
            state = "saved"
        elif event == "prepare":
            state = "prepared"
        elif event == "finish" and call[2]:
            state = ""
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" not in status.read_text().lower()


def name_of(calls: list[list[Any]]) -> str:
    return next((c[1] for c in calls if c[0] == "bind"), "?")


def all_violations(folder: Path, killed_ok: bool = False) -> list[tuple[str, list[str]]]:
    """Per instance with a broken rule: its name and the rules; `killed_ok`: an instance whose
    only fault is a missing close while its process is gone (a Python worker Spark killed with
    its task: the s14 xfail) is left out."""
    out = []
    for calls in read_logs(folder):
        found = violations(calls)
        if killed_ok and found == ["close 0 times"] and not alive(calls[0][-2]):
            continue
        if found:
            out.append((name_of(calls), found))
    return out


def unclosed(folder: Path) -> list[str]:
    """Instances initialized and never closed."""
    return [
        name_of(calls)
        for calls in read_logs(folder)
        if any(c[0] == "init" for c in calls) and not any(c[0] == "close" for c in calls)
    ]


# ---- DAG, runners ------------------------------------------------------------------------------


def chain_dag(
    folder: Path,
    gate: Gate,
    count: int = 400,
    kind: type[Recording] = Recording,
    steer: Steer | None = None,
    lp: int = 1,
) -> DAG:
    """stream (gated, event time = item) -partitioned by item % 7-> a (keyed count, emits
    (key, n)) -partitioned by key-> b (passes (key, n) on) -> sink; one processor per member."""
    log = str(folder / "log")
    dag = DAG()
    stream = dag.new_vertex("stream", gated_stream(gate, count=count, timestamp_fn=lambda x: x), 1)
    a = dag.new_vertex("a", lambda: kind(log, steer), lp)
    b = dag.new_vertex("b", lambda: kind(log, steer), lp)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.between(stream, a).distributed().partitioned(lambda x: x % 7))
    dag.edge(Edge.between(a, b).distributed().partitioned(lambda t: t[0]))
    dag.edge(Edge.between(b, sink))
    return dag


def counted(total: int) -> list[tuple[int, int]]:
    per_key: dict[int, int] = {}
    for x in range(total):
        per_key[x % 7] = per_key.get(x % 7, 0) + 1
    return sorted((k, n) for k, c in per_key.items() for n in range(1, c + 1))


def epochs_config(name: str, root: Path, members: int = 2) -> JobConfig:
    return JobConfig(
        name=name,
        member_count=members,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=200,
        checkpoint_root=str(root),
    )


def committed(job: Any) -> int:
    return int(getattr(job, "epochs_committed", 0) or getattr(job, "snapshot_count", 0))


def restarted(job: Any) -> int:
    return int(getattr(job, "epochs_aborted", 0) or job.restarts)


def wait_committed(job: Any, n: int) -> None:
    """Until `n` snapshots were committed (or the job ended)."""
    wait_until(lambda: job.ended or committed(job) >= n, f"{n} snapshots")


def wait_restarted(job: Any, fired: Callable[[], bool]) -> None:
    """Until `fired()` and the job restarted (or ended)."""
    wait_until(lambda: job.ended or (fired() and restarted(job) >= 1), "the restart")


Submit = Callable[[DAG, JobConfig], Any]


def runners(spark: Any) -> list[tuple[str, Submit]]:
    from jetspark.runners.spark.runner import SparkRunner

    return [
        ("local", lambda d, c: LocalRunner(member_count=c.member_count).submit(d, c)),
        ("spark", lambda d, c: SparkRunner(spark, restart_backoff=0.05).submit(d, c)),
    ]


@contextmanager
def handoff_off(spark: Any) -> Iterator[None]:
    """`JETSPARK_STATE_HANDOFF=off` in the Python workers of the RDDs made meanwhile (PySpark
    starts workers with another environment in a daemon of their own)."""
    from jetspark.runners.spark.handoff import SWITCH

    environment = spark.sparkContext.environment
    before = environment.get(SWITCH)
    environment[SWITCH] = "off"
    try:
        yield
    finally:
        if before is None:
            del environment[SWITCH]
        else:
            environment[SWITCH] = before


def status_of(job: Any) -> JobStatus:
    return job.status  # type: ignore[no-any-return]


def hits_and_misses(job: Any, vertex: str) -> tuple[int, int]:
    from jetspark.runners.spark.state_cache import HITS, MISSES

    figures = job.metrics().get(vertex, {})
    return figures.get(HITS, 0), figures.get(MISSES, 0)


def run_steps(job: Any, gate: Gate, steps: tuple[int, ...], per: int = 2) -> None:
    """Move the gate to each of `steps` after `per` more snapshots, then open it and join."""
    try:
        n = 0
        for step in (*steps, None):
            n += per
            wait_committed(job, n)
            if step is None:
                gate.open()
            else:
                gate.hold_at(step)
        job.join(120)
    finally:
        gate.open()
        if not job.ended:
            job.cancel()


def bound_epochs(calls: list[list[Any]]) -> list[int]:
    """The epochs whose runs an instance was bound to (the run id starts with the epoch in hex)."""
    return [int(c[2][:8], 16) for c in calls if c[0] == "bind" and c[2]]


# ---- kept processors: the calls across epochs --------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "lp"),
    [(Recording, 1), (Recording, 2)],
    ids=["cooperative", "two_per_member"],  # a non-cooperative processor is not kept (its thread)
)
def test_two_kept_vertices_in_a_row_see_the_contract_across_epochs_as_on_the_local_runner(
    spark: Any, tmp_path: Path, kind: type[Recording], lp: int
) -> None:
    """a and b (keyed, partitioned edges) are kept from epoch to epoch on Spark (each member's
    processors are one instance for the whole job: every restore is a hit). Per instance, on both
    runners: init once and first, close once and last, save_to_snapshot then
    snapshot_commit_prepare per snapshot, watermarks strictly rising (b gets a's replayed
    watermark at each epoch's start, never as a duplicate), complete_edge and complete once; the
    rows are exact. On Spark each kept instance is bound to every epoch in turn, none skipped."""
    for runner, submit in runners(spark):
        folder = tmp_path / runner
        (folder / "log").mkdir(parents=True)
        gate = Gate(folder / "gate", hold_at=100)
        job = submit(
            chain_dag(folder, gate, kind=kind, lp=lp), epochs_config(f"kept-{runner}", folder / "ck")
        )
        run_steps(job, gate, (200, 300))
        assert job.status is JobStatus.COMPLETED, job.error
        assert sorted(job.result("sink")) == counted(400), runner
        assert all_violations(folder / "log") == [], runner
        logs = read_logs(folder / "log")
        for calls in logs:
            events = [c[0] for c in calls]
            assert events.count("save") >= 3 and events.count("save") == events.count("prepare"), (
                runner,
                events,
            )
            assert [c[1] for c in calls if c[0] == "complete_edge"] == [0], runner
            if runner == "spark":
                epochs = bound_epochs(calls)
                assert epochs == list(range(epochs[0], epochs[0] + len(epochs))), epochs
        if runner == "spark":
            assert hits_and_misses(job, "a")[0] > 0 and hits_and_misses(job, "b")[0] > 0
            assert len(logs) == 2 * 2 * lp, "one instance per processor: every restore hit"


def test_without_the_handoff_every_instance_goes_on_from_the_epoch_before_or_is_restored(
    spark: Any, tmp_path: Path
) -> None:
    """Three members on two cores with JETSPARK_STATE_HANDOFF=off: members land in other workers
    than the ones keeping them, so workers hold processors of epochs their member skipped (a
    worker ran e, missed e+1, gets e+2). A kept instance is never used after an epoch it missed:
    the epochs each instance was bound to follow one another, a new instance restores, and the
    rows are exact. (Kept instances never reused are closed at the job's end: tested below.)"""
    folder = tmp_path / "spark"
    (folder / "log").mkdir(parents=True)
    gate = Gate(folder / "gate", hold_at=100)
    with handoff_off(spark):
        job = runners(spark)[1][1](chain_dag(folder, gate), epochs_config("stale", folder / "ck", members=3))
        run_steps(job, gate, (200, 300))
    assert job.status is JobStatus.COMPLETED, job.error
    assert sorted(job.result("sink")) == counted(400)
    assert sum(hits_and_misses(job, "a")) + sum(hits_and_misses(job, "b")) > 0
    assert hits_and_misses(job, "a")[1] + hits_and_misses(job, "b")[1] > 0, "some member missed"
    logs = read_logs(folder / "log")
    for calls in logs:
        epochs = bound_epochs(calls)
        assert epochs == list(range(epochs[0], epochs[0] + len(epochs))), (name_of(calls), epochs)
        events = [c[0] for c in calls]
        if epochs[0] > 0:
            assert "finish_restore" in events, (name_of(calls), events)  # a new instance restores
    left_open = {name for name, found in all_violations(folder / "log") if found == ["close 0 times"]}
    assert [
        v for v in all_violations(folder / "log") if v[0] not in left_open or v[1] != ["close 0 times"]
    ] == []


# ---- a kept processor that raises --------------------------------------------------------------


@pytest.mark.parametrize("method", ["process", "wm", "save", "prepare", "complete_edge", "complete"])
def test_a_kept_processor_that_raises_is_closed_once_and_its_member_restores(
    spark: Any, tmp_path: Path, method: str
) -> None:
    """After three snapshots, a#0 (kept on Spark) raises `RestartableError` from `method`: the local
    runner restarts from its last snapshot, Spark aborts the epoch and runs it again from the last
    committed one. Either way the raising instance gets nothing but `close()` after it raised,
    once; every other instance keeps the contract (but for those of a Python worker Spark killed
    with its task, the s14 xfail); and the rows are exact (on Spark; the local runner's collect()
    collects again what followed the snapshot it restarts from)."""
    for runner, submit in runners(spark):
        folder = tmp_path / runner
        (folder / "log").mkdir(parents=True)
        (folder / "steer").mkdir()
        steer = Steer(str(folder / "steer"))
        gate = Gate(folder / "gate", hold_at=100)
        job = submit(
            chain_dag(folder, gate, steer=steer), epochs_config(f"raise-{method}-{runner}", folder / "ck")
        )
        try:
            wait_committed(job, 3)
            steer.arm(method, "a", 0)
            if method not in ("complete_edge", "complete"):  # those come once the stream ended
                gate.hold_at(200)
                wait_restarted(job, functools.partial(steer.fired, method, "a", 0))
                wait_committed(job, 6)
            gate.open()
            job.join(120)
            assert steer.fired(method, "a", 0) and restarted(job) >= 1
        finally:
            gate.open()
            if not job.ended:
                job.cancel()
        assert job.status is JobStatus.COMPLETED, (runner, job.error)
        if runner == "spark":  # committed epochs only
            assert sorted(job.result("sink")) == counted(400)
        else:  # collect() is no transactional sink: a restart from a snapshot collects again
            assert set(job.result("sink")) == set(counted(400))
        raised = [calls for calls in read_logs(folder / "log") if any(c[0] == "raise" for c in calls)]
        assert len(raised) == 1, runner
        after = [c[0] for c in raised[0][[c[0] for c in raised[0]].index("raise") + 1 :]]
        assert after == ["close"], (runner, after)
        assert all_violations(folder / "log", killed_ok=True) == [], runner


# ---- kept processors left open -----------------------------------------------------------------


def test_kept_processors_are_closed_when_a_suspended_job_is_cancelled_without_the_handoff(
    spark: Any, tmp_path: Path
) -> None:
    """Seed, close(): 'It is called whether the job was successful or not'. The s14 test of this
    passes with the handoff on (the driver tells the holders named in the registry); with it
    off the kept processors stay open in their workers after the job ended (until the worker's
    next epoch task of some job finds them idle for 10 minutes)."""
    folder = tmp_path / "spark"
    (folder / "log").mkdir(parents=True)
    gate = Gate(folder / "gate", hold_at=100)
    with handoff_off(spark):
        job = runners(spark)[1][1](chain_dag(folder, gate), epochs_config("left-open", folder / "ck"))
        try:
            wait_committed(job, 3)
            job.suspend()
            assert job.status is JobStatus.SUSPENDED
            job.cancel()
            assert status_of(job) is JobStatus.CANCELLED
        finally:
            gate.open()
            if not job.ended:
                job.cancel()
    log = folder / "log"
    with contextlib.suppress(AssertionError):
        wait_until(lambda: unclosed(log) == [], "every kept processor closed", timeout=20)
    assert unclosed(log) == []


# ---- the outbox given to init ------------------------------------------------------------------


class CachesOutbox(Recording):
    """`Recording` that keeps the outbox it was initialized with, as the seed allows ("init:
    Initializes this processor with the outbox that the processing methods must use to deposit
    their output items"), and emits through it."""

    def init_processor(self, context: ProcessorContext) -> None:
        super().init_processor(context)
        self.emit = self.outbox.offer

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.record("process", ordinal)
        key = item[0] if isinstance(item, tuple) else item % 7
        n = self.counts.get(key, 0) + 1
        if not self.emit((key, n) if not isinstance(item, tuple) else item):
            return False
        self.counts[key] = n
        return True


def test_a_processor_that_keeps_its_init_outbox_loses_nothing_across_epochs(
    spark: Any, tmp_path: Path
) -> None:
    """Seed, init(): the outbox passed to init is the one 'the processing methods must use to
    deposit their output items', and init is called exactly once. A processor that keeps that
    outbox (here: its `offer`) is exact on the local runner; on Spark, kept between epochs, its
    output after the first epoch goes to the first epoch's outbox, which nobody reads."""
    results = {}
    for runner, submit in runners(spark):
        folder = tmp_path / runner
        (folder / "log").mkdir(parents=True)
        gate = Gate(folder / "gate", hold_at=100)
        job = submit(
            chain_dag(folder, gate, kind=CachesOutbox), epochs_config(f"outbox-{runner}", folder / "ck")
        )
        try:
            wait_committed(job, 2)
            gate.hold_at(200)
            wait_committed(job, 4)
            gate.open()
            job.join(60)
        finally:
            gate.open()
            if not job.ended:
                job.cancel()
        results[runner] = (job.status, sorted(job.result("sink")))
    assert results["local"] == (JobStatus.COMPLETED, counted(400))
    assert results["spark"] == results["local"]


def left_open(calls: list[list[Any]]) -> bool:
    """A kept instance never used again and never closed (a defect, fixed): its last call was
    `snapshot_commit_prepare`, in a live process."""
    events = [c[0] for c in calls if c[0] not in ("made", "bind")]
    return bool(events) and events[-1] == "prepare" and "close" not in events and alive(calls[0][-2])


@pytest.mark.parametrize("method", ["init", "restore", "finish_restore"])
def test_a_new_instance_that_raises_while_its_member_restores_is_closed_once(
    spark: Any, tmp_path: Path, method: str
) -> None:
    """Spark without the handoff, three members on two cores: members often land in a worker
    that does not keep their processors (a miss: new instances, initialized and restored). One
    such instance of a raises `RestartableError` from `method`; the epoch reruns, the raising
    instance gets only `close()` after it raised, the others keep the contract (but for workers
    Spark killed), and the rows are exact."""
    folder = tmp_path / "spark"
    (folder / "log").mkdir(parents=True)
    (folder / "steer").mkdir()
    steer = Steer(str(folder / "steer"))
    gate = Gate(folder / "gate", hold_at=100)
    with handoff_off(spark):
        job = runners(spark)[1][1](
            chain_dag(folder, gate, steer=steer), epochs_config(f"miss-{method}", folder / "ck", members=3)
        )
        try:
            wait_committed(job, 2)
            for member in range(3):
                steer.arm(method, "a", member)
            wait_until(
                lambda: (
                    job.ended or (any(steer.fired(method, "a", m) for m in range(3)) and restarted(job) >= 1)
                ),
                "a raise and the restart",
                timeout=45,
            )
            for member in range(3):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(steer.folder, f"{method}@a#{member}"))
            gate.hold_at(200)
            wait_committed(job, restarted(job) + 4)
            gate.open()
            job.join(60)
        finally:
            gate.open()
            if not job.ended:
                job.cancel()
    assert job.status is JobStatus.COMPLETED, job.error
    assert sorted(job.result("sink")) == counted(400)
    logs = read_logs(folder / "log")
    raised = [calls for calls in logs if any(c[0] == "raise" for c in calls)]
    assert raised
    for calls in raised:
        after = [c[0] for c in calls[[c[0] for c in calls].index("raise") + 1 :]]
        assert after == ["close"], (name_of(calls), after)
    broken = [
        (name_of(calls), found)
        for calls in logs
        if (found := violations(calls))
        and not (found == ["close 0 times"] and (left_open(calls) or not alive(calls[0][-2])))
    ]
    assert broken == []


# ---- a processor's thread ----------------------------------------------------------------------


class SqliteCount(Recording):
    """A non-cooperative keyed count that opens a `sqlite3` connection on its first processing
    call, on its own thread, and queries it per item: sqlite3 refuses a connection used from
    another thread than the one that made it (so `close_is_cooperative`: close it there too)."""

    cooperative = False

    def close_is_cooperative(self) -> bool:
        return True  # close the connection on the processor's thread

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        import sqlite3
        import threading

        if getattr(self, "db", None) is None:
            self.db = sqlite3.connect(":memory:")
            self.thread = threading.get_ident()
        elif threading.get_ident() != self.thread:
            self.thread = threading.get_ident()
            self.record("thread_changed")
        self.db.execute("select 1").fetchone()  # sqlite3.ProgrammingError on another thread
        return super().try_process_item(ordinal, item)

    def close(self) -> None:
        try:
            if getattr(self, "db", None) is not None:
                self.db.close()
        except Exception as error:
            self.record("close_failed", repr(error))
        super().close()


class CooperativeSqliteCount(SqliteCount):
    """`SqliteCount`, cooperative: on Spark a relayed epoch (`handoff`) runs it on a server thread
    of the worker that keeps it, a direct hit on the worker's main thread."""

    cooperative = True


@pytest.mark.parametrize(
    "kind", [SqliteCount, CooperativeSqliteCount], ids=["non_cooperative", "cooperative"]
)
def test_a_kept_processor_stays_on_its_thread(spark: Any, tmp_path: Path, kind: type[Recording]) -> None:
    """Seed, isCooperative(): a non-cooperative processor 'will run in a dedicated Java thread'
    (docs: 'gets a thread of its own'; `close_is_cooperative` exists for a sqlite3 connection
    closed on the processor's thread). On the local runner each instance's processing calls come
    from one thread, and its sqlite3 connection works for its whole life; on Spark a kept
    instance is called from another thread in a later epoch (non-cooperative: every epoch;
    cooperative: whenever its epoch is relayed to, or no longer relayed to, its worker)."""
    for runner, submit in runners(spark):
        folder = tmp_path / runner
        (folder / "log").mkdir(parents=True)
        gate = Gate(folder / "gate", hold_at=100)
        job = submit(chain_dag(folder, gate, kind=kind), epochs_config(f"thread-{runner}", folder / "ck"))
        run_steps(job, gate, (150, 200, 250, 300, 350), per=1)
        assert job.status is JobStatus.COMPLETED, (runner, job.error)
        changed = [name_of(c) for c in read_logs(folder / "log") if any(e[0] == "thread_changed" for e in c)]
        assert (runner, changed, restarted(job)) == (runner, [], 0)


# ---- a job submitted again under its name ------------------------------------------------------


class Fixed(Recording):
    """The same keyed count, as its user's next version (say, with a bug fixed): records that it
    is the new class."""

    def __init__(self, folder: str, steer: Steer | None = None) -> None:
        super().__init__(folder, steer)
        self.record("version", 2)


def test_a_job_submitted_again_with_new_processor_code_runs_the_new_code(spark: Any, tmp_path: Path) -> None:
    """Seed: processors are made by the vertex's supplier for an execution and initialized once;
    a job restarted from a snapshot gets new ones that restore (restoreFromSnapshot). Suspended
    (its kept processors stay in their workers, documented), then submitted again under its name
    with the next version of the processor class: on the local runner every item after the resume
    is processed by the new class; on Spark the workers' kept instances of the old class go on."""
    for runner, submit in runners(spark):
        folder = tmp_path / runner
        (folder / "log").mkdir(parents=True)
        gate = Gate(folder / "gate", hold_at=100)
        config = epochs_config(f"again-{runner}", folder / "ck")
        job = submit(chain_dag(folder, gate), config)
        try:
            wait_committed(job, 3)
            job.suspend()
            assert job.status is JobStatus.SUSPENDED
        finally:
            if not job.ended and job.status is not JobStatus.SUSPENDED:
                job.cancel()
        resumed_at = time.time()
        gate.open()
        again = submit(chain_dag(folder, gate, kind=Fixed), config)
        again.join(60)
        assert again.status is JobStatus.COMPLETED, (runner, again.error)
        stale = sorted(
            {
                name_of(calls)
                for calls in read_logs(folder / "log")
                if not any(c[0] == "version" for c in calls)
                and any(c[0] == "process" and c[-1] > resumed_at for c in calls)
            }
        )
        assert (runner, stale) == (runner, [])


# ---- the processor supplier ------------------------------------------------------------------


class PooledCount(Recording):
    """`Recording` that uses a resource its `ProcessorSupplier` opened in `init` and closes in
    `close` (a connection pool shared by the member's processors, as in Jet)."""

    def __init__(self, folder: str, pool: dict[str, bool]) -> None:
        super().__init__(folder)
        self.pool = pool

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not self.pool["open"]:
            self.record("pool_closed")
        return super().try_process_item(ordinal, item)


class PoolSupplier:
    """Opens a pool in `init`, hands it to its processors, closes it in `close`; logs both."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.pools: list[dict[str, bool]] = []

    def supplier(self) -> Any:
        from jetspark.core.suppliers import ProcessorSupplier

        folder = self.folder

        class Supplier(ProcessorSupplier):
            def init(self, context: Any) -> None:
                self.pool = {"open": True}
                self.record = Recorder(folder)
                self.record("supplier_init")

            def get(self, count: int) -> list[PooledCount]:
                return [PooledCount(folder, self.pool) for _ in range(count)]

            def close(self, error: BaseException | None) -> None:
                pool = getattr(self, "pool", None)
                if pool is None:
                    Recorder(folder)("supplier_close_without_init")
                    return
                pool["open"] = False
                self.record("supplier_close")

        return Supplier()


def test_a_kept_processor_is_closed_before_its_supplier(spark: Any, tmp_path: Path) -> None:
    """Seed, close(): 'It is called ... strictly before ProcessorSupplier.close(Throwable) is
    called on this member.' A supplier opens a pool in init and closes it in close: on the local
    runner no processor ever finds its pool closed; on Spark the kept processors process the
    next epoch's items with the pool their supplier closed at the end of the epoch before."""
    for runner, submit in runners(spark):
        folder = tmp_path / runner
        (folder / "log").mkdir(parents=True)
        gate = Gate(folder / "gate", hold_at=100)
        dag = DAG()
        stream = dag.new_vertex("stream", gated_stream(gate, count=300, timestamp_fn=lambda x: x), 1)
        a = dag.new_vertex("a", PoolSupplier(str(folder / "log")).supplier(), 1)
        sink = dag.new_vertex("sink", collect(), 1)
        dag.edge(Edge.between(stream, a).distributed().partitioned(lambda x: x % 7))
        dag.edge(Edge.between(a, sink))
        job = submit(dag, epochs_config(f"pool-{runner}", folder / "ck"))
        run_steps(job, gate, (200,))
        assert job.status is JobStatus.COMPLETED, (runner, job.error)
        assert sorted(job.result("sink")) == counted(300), runner
        logs = read_logs(folder / "log")
        used_closed = sorted({name_of(calls) for calls in logs if any(c[0] == "pool_closed" for c in calls)})
        assert (runner, used_closed) == (runner, [])


# ---- Python workers that are not reused --------------------------------------------------------


def no_reuse_driver(folder: str) -> None:
    """A driver of its own (`spark.python.worker.reuse=false`) that runs the chain in epochs and
    prints a JSON line: its status, whether the rows are exact, and the unclosed instances."""
    import cloudpickle

    import tests
    from jetspark.runners.spark.runner import SparkRunner
    from jetspark.runners.spark.session import get_session

    cloudpickle.register_pickle_by_value(tests)
    spark = get_session(
        "local[2]",
        extra_conf={
            "spark.sql.shuffle.partitions": "4",
            "spark.default.parallelism": "2",
            "spark.python.worker.reuse": "false",
        },
    )
    try:
        base = Path(folder)
        (base / "log").mkdir(parents=True)
        gate = Gate(base / "gate", hold_at=100)
        job = SparkRunner(spark, restart_backoff=0.05).submit(
            chain_dag(base, gate), epochs_config("noreuse", base / "ck")
        )
        run_steps(job, gate, (200,))
        report = {
            "status": job.status.value,
            "exact": sorted(job.result("sink")) == counted(400),
            "instances": len(read_logs(base / "log")),
            "unclosed": unclosed(base / "log"),
        }
    finally:
        spark.stop()
    print(json.dumps(report))


def test_processors_are_closed_when_python_workers_are_not_reused(tmp_path: Path) -> None:
    """Seed, close(): 'Called as the last method in the processor lifecycle. It is called whether
    the job was successful or not'. A driver with `spark.python.worker.reuse=false` (its own
    process: the setting is the SparkContext's): the rows are exact, but the processors of every
    epoch but the last are never closed (kept in a worker that then exits)."""
    import subprocess
    import sys

    from tests.spark.processes import ROOT, with_root_on_path

    code = "import sys\nfrom tests.spark.test_review_s15_spark_contract import no_reuse_driver\nno_reuse_driver(sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "run")],
        cwd=ROOT,
        env=with_root_on_path(dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"] == JobStatus.COMPLETED.value and report["exact"], report
    assert report["instances"] > 4, report  # new instances every epoch: nothing can be kept
    assert report["unclosed"] == [], report

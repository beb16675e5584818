"""`postgres_cdc` against the real PostgreSQL server of the test session (`wal_level=logical`), on
the local runner: changes arrive whole and in commit order; the slot moves only when a snapshot
is committed; a change stream written while the job fails, is suspended and resubmitted, or its
driver is killed, reaches a `postgres` sink table exactly once; a transaction cut by a snapshot
resumes after its last emitted change; a snapshot older than the slot is refused."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, Edge
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
from jetspark.core import JobCancelledError, JobConfig, ProcessingGuarantee, RestartableError
from jetspark.core.errors import JobFailedError
from jetspark.processors.pgoutput import Change, Decoder, parse_lsn
from jetspark.processors.postgres_cdc import drop_slot, postgres_cdc
from jetspark.runners.local import JobStatus, LocalRunner
from tests.e2e.cdc_jobs import SINK_INSERT, Writer, cdc_dag, change_row, prepare_tables, sink_count, sink_rows
from tests.e2e.test_checkpoints import committed_id
from tests.gates import Gate, ask_to_suspend, gated_pass
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


class Names:
    """Fresh table, slot and publication names for one test."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:8]
        self.source, self.sink = f"src_{tag}", f"sink_{tag}"
        self.slot, self.publication = f"slot_{tag}", f"pub_{tag}"


@pytest.fixture
def names(postgres_dsn: str) -> Iterator[Names]:
    made = Names()
    prepare_tables(postgres_dsn, made.source, made.sink, made.slot, made.publication)
    yield made
    drop_slot(postgres_dsn, made.slot)  # a slot keeps WAL until dropped


@pytest.fixture
def writer(postgres_dsn: str, names: Names) -> Iterator[Writer]:
    thread = Writer(postgres_dsn, names.source)
    thread.start()
    yield thread
    thread.stop()


def confirmed(dsn: str, slot: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s", (slot,)
        ).fetchone()
    assert row is not None, f"slot {slot} is gone"
    return parse_lsn(row[0])


def reader_slots(dsn: str) -> list[str]:
    """The temporary copies of slots that sources read (they go with their connection)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'jetspark\\_reader\\_%'"
        ).fetchall()
    return [row[0] for row in rows]


def durable(root: Path, name: str = "cdc") -> JobConfig:
    return JobConfig(
        name=name,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=30,
        checkpoint_root=str(root),
    )


def assert_exactly_once(dsn: str, names: Names, writer: Writer) -> None:
    rows = sink_rows(dsn, names.sink)
    where = Counter((lsn, seq) for lsn, seq, *_ in rows)
    assert max(where.values()) == 1, "a change was written twice"
    in_order = [tuple(row[2:]) for row in sorted(rows)]
    assert in_order == writer.changes, "the sink's changes, in WAL order, are not the writer's"


def suspend_once_all_in(job: Any, dsn: str, names: Names, changes: int) -> None:
    """Wait until the sink table holds `changes` rows (committed at snapshots), then suspend."""
    try:
        wait_until(lambda: sink_count(dsn, names.sink) >= changes, f"{changes} changes in the sink", 120)
        job.suspend()
    finally:
        if job.status is JobStatus.RUNNING:
            job.cancel()


class Recorder:
    """A map step that keeps every change it sees, for tests in this process."""

    def __init__(self) -> None:
        self.seen: list[Change] = []
        self.lock = threading.Lock()

    def __call__(self, change: Change) -> Change:
        with self.lock:
            self.seen.append(change)
        return change


def recording_dag(dsn: str, names: Names, recorder: Recorder, gate: Gate | None = None) -> DAG:
    dag = DAG()
    source = dag.new_vertex("changes", postgres_cdc(dsn, names.slot, names.publication, poll_millis=5))
    step = dag.new_vertex("record", P.map(recorder), local_parallelism=1)
    sink = dag.new_vertex("sink", P.noop())
    if gate is None:
        dag.edge(Edge.between(source, step))
    else:
        held = dag.new_vertex("held", gated_pass(gate), local_parallelism=1)
        dag.edge(Edge.between(source, held))
        dag.edge(Edge.between(held, step))
    dag.edge(Edge.between(step, sink))
    return dag


def test_changes_arrive_whole_in_commit_order_and_the_slot_follows_without_a_guarantee(
    postgres_dsn: str, names: Names, writer: Writer
) -> None:
    recorder = Recorder()
    job = LocalRunner(2).submit(recording_dag(postgres_dsn, names, recorder), JobConfig())
    try:
        writer.allow(60)
        total = writer.changes_for(60)
        wait_until(lambda: len(recorder.seen) >= total, "every change", timeout=60)
        seen = list(recorder.seen)
        assert [(c.op, c.after["id"] if c.after else c.before["id"]) for c in seen] == [  # type: ignore[index]
            (op, str(row_id)) for op, row_id, _ in writer.changes
        ]
        assert all(isinstance(c.after["v"] if c.after else c.before["v"], str) for c in seen)  # type: ignore[index]
        assert [c.seq for c in seen if c.lsn == seen[-1].lsn] == list(range(3)), "step 59 is 3 changes"
        assert {(c.schema, c.table) for c in seen} == {("public", names.source)}
        # no snapshots: the slot is confirmed as soon as the changes went out
        wait_until(lambda: confirmed(postgres_dsn, names.slot) == seen[-1].lsn, "the slot to advance")
    finally:
        job.cancel()
        with contextlib.suppress(JobCancelledError):
            job.join(60)  # its processors closed: their connections let go of the slots


def test_the_slot_advances_only_when_a_snapshot_covering_it_is_committed(
    tmp_path: Path, postgres_dsn: str, names: Names, writer: Writer
) -> None:
    start = confirmed(postgres_dsn, names.slot)
    gate = Gate(tmp_path / "gate", hold_at=0)  # holds every change: no snapshot can complete
    recorder = Recorder()
    config = durable(tmp_path / "ck")
    job = LocalRunner(1).submit(recording_dag(postgres_dsn, names, recorder, gate), config)
    try:
        writer.allow(30)
        writer.wait_written(30)
        wait_until(
            lambda: job.metrics()["changes"]["emitted"] >= writer.changes_for(30), "the source to read"
        )
        assert len(reader_slots(postgres_dsn)) == 1, "the source reads a temporary copy of the slot"
        ask_to_suspend(job)  # its terminal snapshot waits behind the gate too
        # snapshots may have completed before the first change; none after it can (the gate)
        assert confirmed(postgres_dsn, names.slot) == start, (
            "the slot moved before any snapshot was committed"
        )
        gate.open()
        wait_until(lambda: job.status is not JobStatus.RUNNING, "the suspension", timeout=60)
        assert job.status is JobStatus.SUSPENDED
        assert confirmed(postgres_dsn, names.slot) == recorder.seen[-1].lsn
        assert reader_slots(postgres_dsn) == [], "the temporary copy of the slot outlived the job"
    finally:
        gate.open()
        if job.status is JobStatus.RUNNING:
            job.cancel()


def fail_once_at(state: dict[str, Any], row_id: int) -> Any:
    def step(change: Change) -> Change:
        values = change.after or change.before or {}
        if not state.get("failed") and values.get("id", -1) >= row_id:
            state["failed"] = True
            raise RestartableError(f"injected failure at row {values['id']}")
        return change

    return step


@pytest.mark.timeout(400)
def test_a_change_stream_reaches_postgres_exactly_once_across_a_failure_and_a_resubmit(
    tmp_path: Path, postgres_dsn: str, names: Names, writer: Writer
) -> None:
    """The writer writes while the job fails once (restart from its last snapshot), then is
    suspended, and writes again while no job runs; a fresh runner resumes from the checkpoint
    store. Every change is in the sink table once, in WAL order the writer's."""
    dsn, state = postgres_dsn, {}
    config = durable(tmp_path / "ck")
    job = LocalRunner(2).submit(
        cdc_dag(dsn, names.slot, names.publication, names.sink, fail_once_at(state, 150)), config
    )
    writer.allow(100)
    wait_until(lambda: sink_count(dsn, names.sink) >= writer.changes_for(100), "the first 100 steps", 120)
    writer.allow(250)  # past the failing row: the job fails while the writer goes on
    writer.wait_written(200)
    wait_until(
        lambda: state.get("failed") and sink_count(dsn, names.sink) >= writer.changes_for(200), "200", 120
    )
    assert job.restarts == 1
    job.suspend()
    writer.allow(400)  # written while no job runs
    writer.wait_written(400)
    again = LocalRunner(1).submit(cdc_dag(dsn, names.slot, names.publication, names.sink), config)
    suspend_once_all_in(again, dsn, names, writer.changes_for(400))
    assert_exactly_once(dsn, names, writer)
    assert len(writer.changes) == writer.changes_for(400)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_change_stream_reaches_postgres_exactly_once_after_the_driver_is_killed(
    tmp_path: Path, postgres_dsn: str, names: Names, writer: Writer
) -> None:
    """The driver (a subprocess) is killed with SIGKILL while the writer writes: its connections
    die with it, prepared transactions of its sink stay behind; submitted again, the job commits
    or rolls them back, reads on from its committed snapshot, and every change is there once."""
    dsn, root = postgres_dsn, tmp_path / "ck"
    script = textwrap.dedent(f"""
        from pathlib import Path
        from jetspark.runners.local import LocalRunner
        from tests.e2e.cdc_jobs import cdc_dag
        from tests.e2e.test_postgres_cdc import durable
        dag = cdc_dag({dsn!r}, {names.slot!r}, {names.publication!r}, {names.sink!r})
        LocalRunner(2).run(dag, durable(Path({str(root)!r})), timeout=300)
    """)
    driver = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        writer.allow(150)
        wait_until(
            lambda: sink_count(dsn, names.sink) >= writer.changes_for(100) or driver.poll() is not None,
            "100",
            120,
        )
        writer.wait_written(150)  # steps 100-149 were written while the job ran
        assert driver.poll() is None, "the driver ended before it was killed"
        assert committed_id(root / "cdc") >= 0  # a snapshot is committed (the first one is 0; none: -1)
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
    writer.allow(300)  # and these while no driver runs
    writer.wait_written(300)
    job = LocalRunner(2).submit(cdc_dag(dsn, names.slot, names.publication, names.sink), durable(root))
    suspend_once_all_in(job, dsn, names, writer.changes_for(300))
    assert_exactly_once(dsn, names, writer)


def test_more_than_one_processor_is_refused_naming_the_vertex(postgres_dsn: str, names: Names) -> None:
    dag = DAG()
    source = dag.new_vertex(
        "changes", postgres_cdc(postgres_dsn, names.slot, names.publication), local_parallelism=2
    )
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.noop())))
    with pytest.raises(JobFailedError, match="'changes': postgres_cdc runs one processor"):
        LocalRunner(1).run(dag, JobConfig(), timeout=60)


def test_a_snapshot_older_than_the_slot_is_refused_naming_the_slot(
    tmp_path: Path, postgres_dsn: str, names: Names, writer: Writer
) -> None:
    """An exported snapshot moves no slot; once a later committed snapshot did, starting a job
    from the export would skip the changes in between: it fails, naming the slot and both LSNs."""
    recorder = Recorder()
    config = durable(tmp_path / "ck")
    job = LocalRunner(1).submit(recording_dag(postgres_dsn, names, recorder), config)
    writer.allow(10)
    wait_until(lambda: len(recorder.seen) >= writer.changes_for(10), "10 steps")
    job.export_snapshot("early")
    writer.allow(20)
    wait_until(lambda: len(recorder.seen) >= writer.changes_for(20), "20 steps")
    job.suspend()  # its terminal snapshot is committed: the slot moves past the export
    assert confirmed(postgres_dsn, names.slot) == recorder.seen[-1].lsn
    late = durable(tmp_path / "ck", name="from-early")
    late.initial_snapshot_name = "early"
    started = LocalRunner(1).submit(recording_dag(postgres_dsn, names, Recorder()), late)
    with pytest.raises(
        JobFailedError, match=f"replication slot '{names.slot}' confirmed .* past the restored"
    ):
        started.join(60)


def test_a_transaction_cut_by_a_snapshot_resumes_after_its_last_emitted_change(
    tmp_path: Path, postgres_dsn: str, names: Names
) -> None:
    """A transaction of 10,000 changes is far more than the outbox and queues hold: the gate stops
    the stream after 3,000, back-pressure stops the source inside the transaction, and the job is
    suspended there. Its snapshot holds the transaction's LSN and how many of its changes went out;
    resumed, the source emits the rest, and the sink has each change once."""
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {names.source} SELECT i, i FROM generate_series(0, 9999) i")
    gate = Gate(tmp_path / "gate", hold_at=3000)
    dag = DAG()
    changes = dag.new_vertex("changes", postgres_cdc(postgres_dsn, names.slot, names.publication))
    held = dag.new_vertex("held", gated_pass(gate), local_parallelism=1)
    rows = dag.new_vertex("rows", P.map(change_row))
    sink = dag.new_vertex("sink", P.postgres(postgres_dsn, SINK_INSERT.format(sink=names.sink)))
    dag.edge(Edge.between(changes, held))
    dag.edge(Edge.between(held, rows))
    dag.edge(Edge.between(rows, sink))
    config = durable(tmp_path / "ck")
    config.snapshot_interval_millis = 600_000  # only the terminal snapshot
    job = LocalRunner(1).submit(dag, config)
    wait_until(lambda: job.metrics()["held"]["emitted"] >= 3000, "3000 changes past the gate")
    ask_to_suspend(job)
    gate.open()
    wait_until(lambda: job.status is not JobStatus.RUNNING, "the suspension", timeout=60)
    assert job.status is JobStatus.SUSPENDED, job.error
    assert job.last_snapshot is not None
    ((_, (done, partial_lsn, partial_count)),) = job.last_snapshot.entries("changes")
    assert partial_lsn > done and 3000 <= partial_count < 10_000, "not suspended inside the transaction"
    assert sink_count(postgres_dsn, names.sink) == partial_count
    job.resume()
    # the resumed execution counts its own items (as Jet, the counts start over on a resume)
    wait_until(
        lambda: job.metrics()["sink"]["received"] >= 10_000 - partial_count, "the rest of the transaction"
    )
    job.suspend()  # commits the sink's transaction of the rest
    rows_written = sink_rows(postgres_dsn, names.sink)
    assert sorted((seq, row_id) for _, seq, _, row_id, _ in rows_written) == [(i, i) for i in range(10_000)]
    assert {lsn for lsn, *_ in rows_written} == {partial_lsn}


def transactions_in_slot(dsn: str, names: Names) -> list[tuple[int, float]]:
    """(end LSN, commit time in ms) of each transaction the slot holds, read as the source reads."""
    import psycopg

    decoder, found = Decoder(), []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for (data,) in conn.execute(
            "SELECT data FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL, 'proto_version', '1', "
            "'publication_names', %s)",
            (names.slot, names.publication),
        ):
            committed = decoder.feed(data)
            if committed is not None:
                found.append((committed.end_lsn, committed.commit_time.timestamp() * 1000))
    return found


@pytest.mark.parametrize("kind", ["oldest", "specific", "timestamp", "upcoming"])
def test_a_startpoint_starts_the_slot_where_it_says(
    tmp_path: Path, postgres_dsn: str, names: Names, writer: Writer, kind: str
) -> None:
    """Ten steps wait in the slot when the job starts; the startpoint picks where it begins."""
    writer.allow(10)
    writer.wait_written(10)
    held = transactions_in_slot(postgres_dsn, names)
    assert len(held) == 10
    startpoint: Startpoint
    if kind == "oldest":
        startpoint, first_step = Oldest(), 0
    elif kind == "specific":
        startpoint, first_step = Specific(held[3][0]), 4  # after step 3's transaction
    elif kind == "timestamp":
        at = held[6][1]
        startpoint = Timestamp(int(at))
        first_step = next(step for step, (_, millis) in enumerate(held) if millis >= int(at))
    else:
        startpoint, first_step = Upcoming(), 10
    config = durable(tmp_path / "ck")
    StartpointStore(str(tmp_path / "ck"), "cdc").write(SourcePartition("changes", names.slot), startpoint)
    recorder = Recorder()
    job = LocalRunner(1).submit(recording_dag(postgres_dsn, names, recorder), config)
    try:
        # the source resolves its startpoint before its first snapshot: then two more steps
        wait_until(lambda: job.snapshot_count >= 1 or job.status is not JobStatus.RUNNING, "a snapshot")
        writer.allow(12)
        expected = writer.changes_for(12) - writer.changes_for(first_step)
        wait_until(
            lambda: len(recorder.seen) >= expected or job.status is not JobStatus.RUNNING,
            f"{expected} changes",
        )
        assert job.status is JobStatus.RUNNING, job.error
        job.suspend()
    finally:
        if job.status is JobStatus.RUNNING:
            job.cancel()
    ids = [(c.after or c.before or {})["id"] for c in recorder.seen]
    assert ids == [str(row_id) for _, row_id, _ in writer.changes[writer.changes_for(first_step) :]]

"""The proof of exactly-once on Spark: a streaming job (generator -> keyed running count -> a
transactional file sink and a PostgreSQL sink) with EXACTLY_ONCE, and failures injected one after
another at random points while it runs:

- exceptions in `process`, `save_to_snapshot`, `snapshot_commit_prepare` and the sinks' commit;
- a Python worker killed with `os._exit` mid-epoch and inside `snapshot_commit_prepare`;
- the driver failing between writing the manifest and moving `LATEST`.

Each fault fires once (a trigger file is claimed by rename), and the next is armed only after an
epoch committed since, so the job keeps making progress. Then the job is suspended and checked:
every `(key, n)` row the committed state accounts for is in the files and in the table exactly
once, the keyed state equals the rows, the source's offsets account for every counted item, and
no transaction is left prepared.
"""

from __future__ import annotations

import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

import examples.streaming_counts
from examples.streaming_counts import KEYS, RunningCount, format_row, key_of
from jetspark import DAG, Edge, JobConfig
from jetspark.checkpoint import CheckpointStore, Manifest
from jetspark.core import ProcessingGuarantee
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.processors import generator_stream
from jetspark.processors.postgres import _PostgresP
from jetspark.processors.transactional import _TransactionalFilesP, read_lines
from jetspark.runners import snapshot_io
from jetspark.runners.job import JobStatus
from jetspark.runners.spark import SparkRunner
from tests.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.slow]
cloudpickle.register_pickle_by_value(examples.streaming_counts)  # Spark's workers cannot import it

FAULTS = int(os.environ.get("JETSPARK_FAULTS", "50"))
WORKER_POINTS = ["process", "save", "prepare", "commit", "exit-process", "exit-prepare"]


class Faults:
    """Trigger files under `directory`: `arm(point)` creates one; the first caller of `fire(point)`
    claims it (an atomic rename) and fails there."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def arm(self, point: str) -> None:
        Path(self.directory, point).touch()

    def fired(self, point: str) -> bool:
        return not os.path.exists(os.path.join(self.directory, point))

    def fire(self, point: str) -> None:
        for kind in ("", "exit-"):
            path = os.path.join(self.directory, kind + point)
            try:
                os.rename(path, f"{path}.{os.getpid()}.fired")
            except FileNotFoundError:
                continue
            if kind:
                os._exit(17)  # the Python worker dies at once, as if killed
            raise RuntimeError(f"injected failure in {point}")


class FaultyCount(RunningCount):
    def __init__(self, faults: Faults) -> None:
        super().__init__()
        self.faults = faults
        self.seen = 0

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.seen += 1
        if self.seen % 128 == 0:
            self.faults.fire("process")
        return super().try_process_item(ordinal, item)

    def save_to_snapshot(self) -> bool:
        self.faults.fire("save")
        return super().save_to_snapshot()


class FaultyFiles(_TransactionalFilesP):
    def __init__(self, faults: Faults, directory: str) -> None:
        super().__init__(directory, format_row, 100_000)
        self.faults = faults

    def snapshot_commit_prepare(self) -> bool:
        self.faults.fire("prepare")
        return super().snapshot_commit_prepare()

    def commit(self, txn: str) -> None:
        self.faults.fire("commit")
        super().commit(txn)


def faulty_dag(faults: Faults, out: str, dsn: str) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", generator_stream(items_per_second=3000))
    counts = dag.new_vertex("counts", ProcessorSupplier.of(lambda: FaultyCount(faults)))
    dag.edge(Edge.between(source, counts).partitioned(key_of).distributed())
    files = dag.new_vertex("files", ProcessorSupplier.of(lambda: FaultyFiles(faults, out)))
    dag.edge(Edge.from_(counts, 0).to(files).distributed())
    copy = "COPY counts (k, n) FROM STDIN"  # the sink's COPY path (an INSERT's is the same 2PC)
    table = dag.new_vertex("table", ProcessorSupplier.of(lambda: _PostgresP(dsn, copy, tuple, 100_000)))
    dag.edge(Edge.from_(counts, 1).to(table).distributed())
    return dag


def fail_one_commit_of_latest(store: CheckpointStore) -> None:
    """The driver fails once after writing a manifest and before moving LATEST."""
    point = store._point_latest_at

    def failing(manifest: Manifest) -> None:
        store._point_latest_at = point  # type: ignore[method-assign]
        raise OSError("injected: the driver stopped before moving LATEST")

    store._point_latest_at = failing  # type: ignore[method-assign]


def committed_state(root: str, name: str) -> tuple[set[int], dict[int, int]]:
    """From the last committed snapshot: the items the source emitted, and the keyed counts."""
    store = CheckpointStore(root, name, tidy=False)
    manifest = store.latest()
    assert manifest is not None
    snapshot = snapshot_io.read_snapshot(store, manifest, DEFAULT_PARTITION_COUNT)
    emitted: set[int] = set()
    for (_, start, stride), done in snapshot.entries("source"):
        emitted.update(start + stride * i for i in range(done))
    return emitted, dict(snapshot.entries("counts"))


def table_rows(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return [f"{k},{n}" for k, n in conn.execute("SELECT k, n FROM counts").fetchall()]


def prepared(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return [row[0] for row in conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()]


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("guarantee", "faults_wanted"),
    [(ProcessingGuarantee.EXACTLY_ONCE, FAULTS), (ProcessingGuarantee.AT_LEAST_ONCE, max(FAULTS // 8, 2))],
    ids=["exactly-once", "at-least-once"],
)
def test_output_under_injected_failures(
    spark: Any, tmp_path: Path, postgres_dsn: str, guarantee: ProcessingGuarantee, faults_wanted: int
) -> None:
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS counts")
        conn.execute("CREATE TABLE counts (k int, n int)")
    faults = Faults(str(tmp_path / "faults"))
    os.makedirs(faults.directory)
    out, root = str(tmp_path / "out"), str(tmp_path / "ck")
    config = JobConfig(
        name="faulty",
        processing_guarantee=guarantee,
        snapshot_interval_millis=250,
        checkpoint_root=root,
    )
    job = SparkRunner(spark, max_restarts=4, restart_backoff=0.02).submit(
        faulty_dag(faults, out, postgres_dsn), config
    )
    rng = random.Random(int(os.environ.get("JETSPARK_FAULT_SEED", "8")))
    injected: Counter[str] = Counter()
    try:
        for _ in range(faults_wanted):
            committed = job.epochs_committed
            wait_until(
                lambda c=committed: job.epochs_committed > c or job.status is not JobStatus.RUNNING,
                timeout=120,
            )
            assert job.status is JobStatus.RUNNING, job.error
            aborted = job.epochs_aborted
            point = rng.choice([*WORKER_POINTS, "driver-commit"])
            if point == "driver-commit":
                fail_one_commit_of_latest(job.store)
            else:
                faults.arm(point)
            wait_until(
                lambda a=aborted: job.epochs_aborted > a or job.status is not JobStatus.RUNNING, timeout=120
            )
            assert job.status is JobStatus.RUNNING, job.error
            injected[point] += 1
        job.suspend()
        assert job.status is JobStatus.SUSPENDED, job.error
    except BaseException:
        if job.status is JobStatus.RUNNING:  # the endless job would hold the shared session's slots
            job.cancel()
        raise

    emitted, counts = committed_state(root, "faulty")
    expected_counts = Counter(key_of(x) for x in emitted)
    assert counts == dict(expected_counts), "the keyed state does not match the source's offsets"
    expected = sorted(f"{k},{n}" for k in range(KEYS) for n in range(1, counts.get(k, 0) + 1))
    files = sorted(read_lines(out))
    table = sorted(table_rows(postgres_dsn))
    duplicates = sum(c - 1 for c in Counter(files).values() if c > 1)
    print(
        f"\n{guarantee.value} under faults: {sum(injected.values())} injected {dict(sorted(injected.items()))}; "
        f"{job.epochs_committed} epochs committed, {job.epochs_aborted} aborted; {len(emitted)} items; "
        f"files exact: {files == expected}, table exact: {table == expected}, duplicates in files: {duplicates}",
        file=sys.stderr,
    )
    assert sum(injected.values()) >= faults_wanted
    assert len(emitted) > 0
    if guarantee is ProcessingGuarantee.AT_LEAST_ONCE:  # nothing lost; repeats allowed
        assert set(files) >= set(expected) and set(table) >= set(expected)
        return
    assert files == expected
    assert table == expected
    assert not [name for name in os.listdir(out) if name.endswith(".tmp")], (
        "uncommitted transaction files left"
    )
    assert prepared(postgres_dsn) == [], "prepared transactions left in PostgreSQL"

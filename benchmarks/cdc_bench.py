"""PostgreSQL change data capture: how many changes a second `postgres_cdc` delivers, and its lag
at a steady insert rate, on the local runner.

    python benchmarks/cdc_bench.py [--backlog 200000] [--rate 2000] [--seconds 20] [--dsn DSN]
                                   [--runner local|spark] [--snapshot-millis 1000]

Without `--dsn` it starts a throw-away server as the tests do (`tests/postgres_server.py`: Debian's
PostgreSQL, `wal_level=logical`, `fsync=off`). The job is `postgres_cdc -> map -> noop`; the map
step notes, per change, the wall clock minus the change's commit time (the lag). Two runs:

- **backlog**: `--backlog` single-row inserts (committed in transactions of 100 rows) are waiting
  in the slot before the job starts; reported: changes/s from the job's start to the last change,
  with NONE (the slot confirmed as it goes) and with EXACTLY_ONCE (snapshots every
  `--snapshot-millis`; every read decodes again what is not confirmed yet).
- **steady**: a writer inserts `--rate` rows a second (a transaction of `rate/100` rows every
  10 ms) for `--seconds`; reported: the lag's median, 99th percentile and maximum, and the rate
  delivered, under EXACTLY_ONCE.

With `--runner spark` the job runs on an embedded Spark `local[2]` (2 members) in epochs
(EXACTLY_ONCE only: a Spark job without a guarantee shows its results only when it ends, which a
stream never does). The map step then runs in a Python worker, so it tags each change with
`(commit time, time it passed the map)` and the sink is `collect`, whose items reach the driver
when their epoch commits; a driver thread notes when each one became visible. Two lags are
reported: **processed** (the map's clock minus the commit time: how far behind the source reads)
and **visible** (the driver's clock when the epoch holding the change committed, minus the commit
time: what a reader of an exactly-once sink sees). Changes/s of the backlog count until the last
change is visible on the driver.

Run from the repository root. The writer and the job share the machine: on 2 cores the numbers
are a floor.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jetspark import DAG, Edge, JobConfig
from jetspark import processors as P
from jetspark.core import JobCancelledError, ProcessingGuarantee
from jetspark.processors.pgoutput import Change
from jetspark.processors.postgres_cdc import create_slot, drop_slot
from jetspark.runners.local import LocalRunner


class Lags:
    """The map step: counts changes and keeps each one's lag (seconds)."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self.last = 0.0

    def __call__(self, change: Change) -> Change:
        now = time.time()
        self.lags.append(now - change.commit_time.timestamp())
        self.last = now
        return change


def prepare(dsn: str, tag: str) -> tuple[str, str, str]:
    import psycopg

    table, slot, publication = f"bench_{tag}", f"bench_slot_{tag}", f"bench_pub_{tag}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, v int, at timestamptz)")
    create_slot(dsn, slot, publication, [table])
    return table, slot, publication


def dag_of(dsn: str, slot: str, publication: str, lags: Lags) -> DAG:
    dag = DAG()
    changes = dag.new_vertex("changes", P.postgres_cdc(dsn, slot, publication, poll_millis=5))
    step = dag.new_vertex("lag", P.map(lags), local_parallelism=1)
    dag.edge(Edge.between(changes, step))
    dag.edge(Edge.between(step, dag.new_vertex("sink", P.noop())))
    return dag


def config(guarantee: ProcessingGuarantee, snapshot_millis: int) -> JobConfig:
    return JobConfig(processing_guarantee=guarantee, snapshot_interval_millis=snapshot_millis)


# ---- on Spark: the lags travel with the items to the driver ------------------------------------


def tag_times(change: Change) -> tuple[float, float]:
    """(commit time, now) of a change, in a Spark Python worker."""
    return (change.commit_time.timestamp(), time.time())


class SparkLags(threading.Thread):
    """Runs the job on Spark in epochs; a driver thread notes when each change became visible
    (its epoch committed). `lags` (processed) and `visible` are seconds, as `Lags.lags`."""

    def __init__(self, spark: Any, dsn: str, slot: str, publication: str, snapshot_millis: int) -> None:
        super().__init__(name="cdc-visible", daemon=True)
        from jetspark.runners.spark import SparkRunner

        dag = DAG()
        changes = dag.new_vertex("changes", P.postgres_cdc(dsn, slot, publication, poll_millis=5))
        step = dag.new_vertex("times", P.map(tag_times))
        dag.edge(Edge.between(changes, step))
        dag.edge(Edge.between(step, dag.new_vertex("sink", P.collect())).distributed())
        self.checkpoints = tempfile.mkdtemp(prefix="cdc-bench-")
        job_config = JobConfig(
            name=f"cdc-{slot}",
            processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
            snapshot_interval_millis=snapshot_millis,
            checkpoint_root=self.checkpoints,
            member_count=2,
        )
        self.lags: list[float] = []
        self.visible: list[float] = []
        self.last = 0.0
        self.job = SparkRunner(spark, member_count=2).submit(dag, job_config)
        self._stopped = threading.Event()
        self.start()

    def run(self) -> None:
        while not self._stopped.wait(0.01):
            # the job's own list (result() copies it whole): it only grows, by whole epochs
            items = self.job._results.get("sink", [])
            if len(items) > len(self.visible):
                now = time.time()
                for committed, processed in items[len(self.visible) :]:
                    self.lags.append(processed - committed)
                    self.visible.append(now - committed)
                self.last = now

    def stop(self) -> None:
        """Cancel the job (its commit-only pass commits the last snapshot's transactions)."""
        self._stopped.set()
        self.join()
        self.job.cancel(timeout=60)


def spark_backlog(spark: Any, dsn: str, count: int, snapshot_millis: int) -> float:
    import psycopg

    table, slot, publication = prepare(dsn, uuid.uuid4().hex[:8])
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for first in range(0, count, 100):
                insert(conn, table, first, min(100, count - first))
        started = time.time()
        watcher = SparkLags(spark, dsn, slot, publication, snapshot_millis)
        try:
            wait_for(watcher, count, timeout=900)
        finally:
            watcher.stop()
        return count / (watcher.last - started)
    finally:
        drop_slot(dsn, slot)


def spark_steady(spark: Any, dsn: str, rate: int, seconds: float, snapshot_millis: int) -> dict[str, float]:

    table, slot, publication = prepare(dsn, uuid.uuid4().hex[:8])
    watcher = SparkLags(spark, dsn, slot, publication, snapshot_millis)
    try:
        # the first epoch starts the tasks: begin writing once one committed
        deadline = time.monotonic() + 300
        while watcher.job.epochs_committed < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        written, started, ended = write_steadily(dsn, table, rate, seconds)
        wait_for(watcher, written, timeout=300)
    finally:
        watcher.stop()
        drop_slot(dsn, slot)
    return {
        "written/s": written / (ended - started),
        **percentiles("processed", watcher.lags),
        **percentiles("visible", watcher.visible),
    }


def percentiles(name: str, lags: list[float]) -> dict[str, float]:
    ordered = sorted(lags)
    name = f"{name} " if name else ""
    return {
        f"{name}lag p50 ms": 1000 * statistics.median(ordered),
        f"{name}lag p99 ms": 1000 * ordered[int(0.99 * (len(ordered) - 1))],
        f"{name}lag max ms": 1000 * ordered[-1],
    }


def insert(conn: Any, table: str, first: int, count: int) -> None:
    with conn.transaction(), conn.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} (id, v, at) VALUES (%s, %s, now())",
            [(i, i % 1000) for i in range(first, first + count)],
        )


def stop(job: Any) -> None:
    """Cancel the job and wait until its processors closed (their connections let go of the slot)."""
    job.cancel()
    with contextlib.suppress(JobCancelledError):
        job.join(60)


def wait_for(lags: Any, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(lags.lags) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {len(lags.lags)} of {count} changes arrived in {timeout} s")
        time.sleep(0.01)


def backlog(dsn: str, count: int, guarantee: ProcessingGuarantee, snapshot_millis: int) -> float:
    import psycopg

    table, slot, publication = prepare(dsn, uuid.uuid4().hex[:8])
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for first in range(0, count, 100):
                insert(conn, table, first, min(100, count - first))
        lags = Lags()
        started = time.time()
        job = LocalRunner(1).submit(dag_of(dsn, slot, publication, lags), config(guarantee, snapshot_millis))
        try:
            wait_for(lags, count, timeout=600)
        finally:
            stop(job)
        return count / (lags.last - started)
    finally:
        drop_slot(dsn, slot)


def steady(dsn: str, rate: int, seconds: float, snapshot_millis: int) -> dict[str, float]:

    table, slot, publication = prepare(dsn, uuid.uuid4().hex[:8])
    lags = Lags()
    job = LocalRunner(1).submit(
        dag_of(dsn, slot, publication, lags), config(ProcessingGuarantee.EXACTLY_ONCE, snapshot_millis)
    )
    try:
        written, started, ended = write_steadily(dsn, table, rate, seconds)
        wait_for(lags, written, timeout=120)
    finally:
        stop(job)
        drop_slot(dsn, slot)
    return {"written/s": written / (ended - started), **percentiles("", lags.lags)}


def write_steadily(dsn: str, table: str, rate: int, seconds: float) -> tuple[int, float, float]:
    """Insert `rate` rows a second for `seconds`; returns the rows written and the start and end."""
    import psycopg

    written = 0
    per_tick = max(1, rate // 100)
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.monotonic()
        while (now := time.monotonic()) - started < seconds:
            due = int((now - started) * rate)
            if written < due:  # catch up with the schedule, a tick's worth at a time
                insert(conn, table, written, min(per_tick, due - written))
                written = min(due, written + per_tick)
            else:
                time.sleep(0.01)
        ended = time.monotonic()
    return written, started, ended


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", help="a server with wal_level=logical (default: start one)")
    parser.add_argument("--backlog", type=int, default=200_000)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--snapshot-millis", type=int, default=1000)
    parser.add_argument("--runner", choices=("local", "spark"), default="local")
    args = parser.parse_args()
    with ExitStack() as stack:
        dsn = args.dsn
        if dsn is None:
            from tests.postgres_server import postgres_server

            dsn = stack.enter_context(postgres_server())
        print(
            f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {args.runner} runner, "
            f"snapshots every {args.snapshot_millis} ms"
        )
        if args.runner == "spark":
            spark_figures(dsn, args)
            return
        for guarantee in (ProcessingGuarantee.NONE, ProcessingGuarantee.EXACTLY_ONCE):
            per_second = backlog(dsn, args.backlog, guarantee, args.snapshot_millis)
            print(f"backlog of {args.backlog} changes, {guarantee.name}: {per_second:,.0f} changes/s")
        figures = steady(dsn, args.rate, args.seconds, args.snapshot_millis)
        print(
            f"steady {args.rate} inserts/s for {args.seconds:g} s, EXACTLY_ONCE: "
            + ", ".join(f"{name} {value:,.1f}" for name, value in figures.items())
        )


def spark_figures(dsn: str, args: argparse.Namespace) -> None:
    import cloudpickle

    from jetspark.runners.spark import get_session

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this file

    spark = get_session("local[2]", extra_conf={"spark.default.parallelism": "2"})
    try:
        per_second = spark_backlog(spark, dsn, args.backlog, args.snapshot_millis)
        print(
            f"backlog of {args.backlog} changes, EXACTLY_ONCE on Spark: {per_second:,.0f} changes/s (visible)"
        )
        figures = spark_steady(spark, dsn, args.rate, args.seconds, args.snapshot_millis)
        print(
            f"steady {args.rate} inserts/s for {args.seconds:g} s, EXACTLY_ONCE on Spark: "
            + ", ".join(f"{name} {value:,.1f}" for name, value in figures.items())
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()

"""PostgreSQL change data capture: how many changes a second `postgres_cdc` delivers, and its lag
at a steady insert rate, on the local runner.

    python benchmarks/cdc_bench.py [--backlog 200000] [--rate 2000] [--seconds 20] [--dsn DSN]

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

Run from the repository root. The writer and the job share the machine: on 2 cores the numbers
are a floor.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
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


def wait_for(lags: Lags, count: int, timeout: float) -> None:
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
    import psycopg

    table, slot, publication = prepare(dsn, uuid.uuid4().hex[:8])
    lags = Lags()
    job = LocalRunner(1).submit(
        dag_of(dsn, slot, publication, lags), config(ProcessingGuarantee.EXACTLY_ONCE, snapshot_millis)
    )
    written = 0
    try:
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
        wait_for(lags, written, timeout=120)
    finally:
        stop(job)
        drop_slot(dsn, slot)
    ordered = sorted(lags.lags)
    return {
        "written/s": written / (ended - started),
        "lag p50 ms": 1000 * statistics.median(ordered),
        "lag p99 ms": 1000 * ordered[int(0.99 * (len(ordered) - 1))],
        "lag max ms": 1000 * ordered[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", help="a server with wal_level=logical (default: start one)")
    parser.add_argument("--backlog", type=int, default=200_000)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--snapshot-millis", type=int, default=1000)
    args = parser.parse_args()
    with ExitStack() as stack:
        dsn = args.dsn
        if dsn is None:
            from tests.postgres_server import postgres_server

            dsn = stack.enter_context(postgres_server())
        print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, snapshots every {args.snapshot_millis} ms")
        for guarantee in (ProcessingGuarantee.NONE, ProcessingGuarantee.EXACTLY_ONCE):
            per_second = backlog(dsn, args.backlog, guarantee, args.snapshot_millis)
            print(f"backlog of {args.backlog} changes, {guarantee.name}: {per_second:,.0f} changes/s")
        figures = steady(dsn, args.rate, args.seconds, args.snapshot_millis)
        print(
            f"steady {args.rate} inserts/s for {args.seconds:g} s, EXACTLY_ONCE: "
            + ", ".join(f"{name} {value:,.1f}" for name, value in figures.items())
        )


if __name__ == "__main__":
    main()

"""Latency from an event's creation to its row being visible (committed) in PostgreSQL, on Spark.

    python benchmarks/latency_bench.py [--epoch-millis 250 500 1000 10000] [--rate 50000]
        [--seconds 40] [--min-epochs 12] [--warmup 10] [--keys 10000] [--sink insert|copy] [--dsn DSN]

The job, EXACTLY_ONCE on an embedded Spark `local[2]` with 2 members, three vertices, each its own
Spark stage (distributed edges):

    source (2 processors) -> keyed running count (partitioned by key) -> postgres sink

- **source**: an event `seq` is *created* at `t0 + seq / rate` (wall clock, `t0` fixed on the
  driver before the job is submitted), as if an outside producer stamped it then; a processor
  emits every event of its share whose creation time has passed (a backlog built up between
  epochs, or while the job was slow, goes out at once), so the creation time counts the waiting
  in front of the job too. Its position is saved in snapshots.
- **count**: a user's `AbstractProcessor`, the running count per `seq % keys` (`--keys` keys of
  state), emits `(seq, created, key, n)`.
- **sink**: `processors.postgres`, one row per event into an unindexed table, in transactions
  prepared at each snapshot and committed (`COMMIT PREPARED`) by the driver right after it
  commits the epoch (`runners.sink_commits`; before that change: when the next epoch restores).

The server (`tests/postgres_server.py`, or `--dsn`) runs with `track_commit_timestamp=on`, so each
row's visibility time is the commit time of the transaction that inserted it
(`pg_xact_commit_timestamp(xmin)`): no polling, no sampling. Latency = commit time - creation time,
over the events created after `--warmup` seconds (the first epoch starts the Python workers); the
job is finite (`rate * seconds` events) and completes, so every event is checked to be there
exactly once. Reported per epoch interval: p50 / p99 / max latency, the epochs committed, the rate
offered and the rate sustained (events created after the warm-up, divided by the time from the
first of them being created to the last of them being committed; it includes the last events'
latency), the rate delivered (the same events over the time from the first of them being visible
to the last: the offered rate when the job keeps up), and the median delay from the
driver's commit of an epoch to its rows' `COMMIT PREPARED`.

To compare with another checkout, run this script with `PYTHONPATH=<checkout>` (the Spark
workers inherit it) from that checkout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cloudpickle
import epoch_timeline
from epoch_state_bench import KeyedCount

from jetspark import DAG, Edge, JobConfig
from jetspark.core import AbstractProcessor, ProcessingGuarantee
from jetspark.core.watermark import BroadcastKey
from jetspark.processors import postgres

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class ScheduledSource(AbstractProcessor):
    """Events `seq` of this processor's share of `range(count)`, each emitted once its creation
    time `t0 + seq / rate` has passed, as `(seq, created)`."""

    def __init__(self, t0: float, rate: float, count: int) -> None:
        super().__init__()
        self.t0 = t0
        self.rate = rate
        self.count = count

    def init_processor(self, context: Any) -> None:
        self.index = context.global_processor_index
        self.stride = context.total_parallelism
        self.position = self.index

    def complete(self) -> bool:
        due = min(self.count, int((time.time() - self.t0) * self.rate) + 1)  # seqs < due are created
        if self.position < due:
            room = max(self.outbox.room(), 1)
            end = min(due, self.position + room * self.stride)
            t0, rate = self.t0, self.rate
            batch = [(seq, t0 + seq / rate) for seq in range(self.position, end, self.stride)]
            if not self.outbox.offer_batch(batch):
                return False
            self.position += len(batch) * self.stride
        return self.position >= self.count

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(BroadcastKey(("position", self.index)), self.position)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if key.key == ("position", self.index):
            self.position = value


class EventKeyOf:
    """event -> seq % keys (a class, so that the partitioner pickles by value)."""

    def __init__(self, keys: int) -> None:
        self.keys = keys

    def __call__(self, event: tuple[int, float]) -> int:
        return event[0] % self.keys


class EventCount(KeyedCount):
    """The user's running count per key (`epoch_state_bench.KeyedCount`, whose state, snapshot
    and restore are `examples/streaming_counts.RunningCount`'s), emitting `(seq, created, key, n)`."""

    def __init__(self, keys: int) -> None:
        super().__init__(keys)
        self.key_of = EventKeyOf(keys)  # type: ignore[assignment]

    def row(self, item: Any, key: int, n: int) -> Any:
        return (item[0], item[1], key, n)


def latency_dag(
    dsn: str, table: str, t0: float, rate: float, count: int, keys: int, sink: str = "insert"
) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", lambda: ScheduledSource(t0, rate, count), local_parallelism=1)
    counts = dag.new_vertex("counts", lambda: EventCount(keys), local_parallelism=1)
    dag.edge(Edge.between(source, counts).partitioned(EventKeyOf(keys)).distributed())
    if sink == "copy":
        statement = f"COPY {table} (seq, created, k, n) FROM STDIN"
    else:
        statement = f"INSERT INTO {table} (seq, created, k, n) VALUES (%s, %s, %s, %s)"
    rows = dag.new_vertex("sink", postgres(dsn, statement), local_parallelism=1)
    dag.edge(Edge.between(counts, rows).distributed())
    return dag


def run_interval(
    spark: Any,
    dsn: str,
    epoch_millis: int,
    rate: float,
    seconds: float,
    warmup: float,
    keys: int,
    timeline: str | None = None,
    sink: str = "insert",
) -> dict[str, Any]:
    import psycopg

    from jetspark.runners.spark import SparkRunner

    table = f"events_{epoch_millis}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (seq bigint, created double precision, k int, n int)")
    count = int(rate * seconds)
    work = tempfile.mkdtemp(prefix="jetspark-latency-")
    config = JobConfig(
        name=f"latency-{epoch_millis}",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=epoch_millis,
        checkpoint_root=f"{work}/ck",
        member_count=2,
    )
    load_before = os.getloadavg()
    t0 = time.time() + 2.0  # the first events are created while the first epoch starts
    try:
        job: Any = SparkRunner(spark, member_count=2).submit(
            latency_dag(dsn, table, t0, rate, count, keys, sink), config
        )
        events = epoch_timeline.watch(job) if timeline is not None else []
        job.join()
        epochs = job.epochs_committed
        stats = job.epoch_stats().epochs  # the last 100 epochs
        durations = [e["duration_s"] for e in stats if e.get("duration_s") is not None]
        committed = sorted(e["ended"] for e in stats if e.get("outcome") == "committed" and e.get("ended"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows, distinct, low, high = conn.execute(
            f"SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM {table}"
        ).fetchone()
        assert (rows, distinct, low, high) == (count, count, 0, count - 1), (
            f"{table}: {rows} rows, {distinct} distinct, seq {low}..{high}; expected each of {count} once"
        )
        first = int(warmup * rate)
        figures = conn.execute(
            f"""
            WITH v AS (
                SELECT created, extract(epoch FROM pg_xact_commit_timestamp(xmin))::float8 AS visible
                FROM {table} WHERE seq >= %s
            )
            SELECT percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY visible - created),
                   max(visible - created), min(created), max(visible), count(*),
                   count(DISTINCT visible), min(visible)
            FROM v
            """,
            (first,),
        ).fetchone()
        transactions = [
            row[0]
            for row in conn.execute(
                f"SELECT DISTINCT extract(epoch FROM pg_xact_commit_timestamp(xmin))::float8 FROM {table} "
                "WHERE seq >= %s",
                (first,),
            )
        ]
        conn.execute(f"DROP TABLE {table}")
    (p50, p99), worst, created_first, visible_last, measured, commits, visible_first = figures
    # each sink transaction commits after the driver committed its epoch: how long after
    delays = []
    for at in transactions:
        before = [c for c in committed if c <= at]
        if before:
            delays.append(at - before[-1])
    return {
        "epoch_ms": epoch_millis,
        "p50_ms": 1000 * p50,
        "p99_ms": 1000 * p99,
        "max_ms": 1000 * worst,
        "offered": rate,
        "sustained": measured / (visible_last - created_first),
        "delivered": measured / max(visible_last - visible_first, 1e-9),
        "events": measured,
        "epochs": epochs,
        "commit_times": commits,
        "mean_epoch_s": sum(durations) / len(durations) if durations else float("nan"),
        "commit_to_visible_ms": 1000 * statistics.median(delays) if delays else float("nan"),
        "load": (load_before[0], load_after[0]),
        "timeline": epoch_timeline.breakdown(timeline, job.job_id, events, set(range(2, epochs)))
        if timeline is not None
        else [],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epoch-millis", type=int, nargs="+", default=[250, 500, 1000, 10000])
    parser.add_argument("--rate", type=float, default=50_000, help="events created per second")
    parser.add_argument("--seconds", type=float, default=40, help="of events per interval (at least)")
    parser.add_argument(
        "--min-epochs", type=int, default=12, help="an interval runs at least this many spans of events"
    )
    parser.add_argument("--warmup", type=float, default=10, help="seconds of events left out of the figures")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument(
        "--sink",
        choices=["insert", "copy"],
        default="insert",
        help="the postgres sink's statement: an INSERT per row, or COPY ... FROM STDIN per batch",
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--dsn", help="a server with track_commit_timestamp=on (default: start one)")
    parser.add_argument(
        "--timeline", metavar="FILE", help="time the steps of each epoch after the first two (epoch_timeline)"
    )
    args = parser.parse_args()
    if args.timeline:
        epoch_timeline.enable(args.timeline)  # before the session: its workers inherit it
    with ExitStack() as stack:
        dsn = args.dsn
        if dsn is None:
            from tests.postgres_server import postgres_server

            dsn = stack.enter_context(postgres_server("-c track_commit_timestamp=on"))
        from jetspark.runners.spark.session import get_session

        spark = get_session(args.master, extra_conf={"spark.default.parallelism": "2"})
        stack.callback(spark.stop)
        print(
            f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {args.master}, 2 members, "
            f"{args.rate:,.0f} events/s offered, {args.keys:,} keys, first {args.warmup:g} s left out"
        )
        for epoch_millis in args.epoch_millis:
            seconds = max(args.seconds, args.warmup + args.min_epochs * epoch_millis / 1000)
            r = run_interval(
                spark, dsn, epoch_millis, args.rate, seconds, args.warmup, args.keys, args.timeline, args.sink
            )
            print(
                f"epochs of {epoch_millis:>5} ms: p50 {r['p50_ms']:7.0f} ms  p99 {r['p99_ms']:7.0f} ms  "
                f"max {r['max_ms']:7.0f} ms  sustained {r['sustained']:8,.0f}/s of {r['offered']:,.0f} "
                f"(delivered {r['delivered']:,.0f}/s)  "
                f"events {r['events']:,} over {seconds:g} s  epochs committed {r['epochs']} "
                f"(commit times measured {r['commit_times']})  mean epoch {r['mean_epoch_s']:.2f} s  "
                f"driver commit -> rows visible, median {r['commit_to_visible_ms']:.0f} ms  "
                f"load {r['load'][0]:.1f}->{r['load'][1]:.1f}",
                flush=True,
            )
            if r["timeline"]:
                print("  mean seconds per epoch (epochs after the first two):")
                for step, value in r["timeline"]:
                    print(f"    {value:7.3f}  {step}")
                print(f"    {sum(v for _, v in r['timeline']):7.3f}  (sum)", flush=True)


if __name__ == "__main__":
    main()

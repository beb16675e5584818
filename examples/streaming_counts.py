"""Exactly-once streaming: a generator -> a keyed running count (your own processor) -> two
transactional sinks, files and (optionally) PostgreSQL.

    python examples/streaming_counts.py --out /tmp/counts --checkpoints /tmp/ck
    python examples/streaming_counts.py --count 0 ...       # endless: Ctrl-C suspends the job cleanly
    python examples/streaming_counts.py --rate 0 ...        # as fast as possible (a few seconds)
    python examples/streaming_counts.py --dsn "host=... dbname=..." ...   # also into PostgreSQL

The job runs on embedded Spark in epochs (`JobConfig.snapshot_interval_millis` each): every epoch
ends with a snapshot the driver commits, then the sinks' transactions of that epoch commit. By
default the source makes 10,000 items a second, so the 200,000 items take about 20 s and ten
epochs: time to press Ctrl-C (the job is suspended at its last committed snapshot) or to kill it.
Run the same command again: it resumes from its last committed snapshot (or, killed before its
first, starts afresh after rolling back what it left), and every `(key, n)` row appears exactly
once in the files (and the table). Once it has completed, running it again writes nothing (the
job's record in the checkpoint root says it completed).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jetspark import DAG, Edge, JobConfig
from jetspark.core import AbstractProcessor, ProcessingGuarantee, Traverser
from jetspark.core.traverser import traverse_iterable
from jetspark.processors import generator_stream, postgres, transactional_files
from jetspark.processors.transactional import read_lines

KEYS = 10


def key_of(item: int) -> int:
    return item % KEYS


class RunningCount(AbstractProcessor):
    """Per key, how many items it has seen so far: emits `(key, n)` for every item. Its counts
    are its snapshot state, keyed, so each key's count restores to the processor that owns it."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[int, int] = {}
        self._saving: Traverser[tuple[int, int]] | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        key = key_of(item)
        n = self.counts.get(key, 0) + 1
        if not self.try_emit((key, n)):
            return False  # offered again with the same item: the count is not bumped twice
        self.counts[key] = n
        return True

    def save_to_snapshot(self) -> bool:
        # one traverser per snapshot: a call that returns False resumes it where the outbox was full
        if self._saving is None:
            self._saving = traverse_iterable(list(self.counts.items()))
        if not self.emit_from_traverser_to_snapshot(self._saving):
            return False
        self._saving = None
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.counts[key] = value


def format_row(row: tuple[int, int]) -> str:
    return f"{row[0]},{row[1]}"


def streaming_dag(
    out: str,
    count: int | None,
    rate: float | None = None,
    dsn: str | None = None,
    step: Any = None,
    source: Any = None,
) -> DAG:
    """generator -> counts (partitioned by key) -> files sink [and postgres sink]. `step` (for
    fault-injection tests) maps each item before it is counted; `source` (for tests that hold the
    stream at a point) is a supplier that replaces the generator, `count`, `rate` and `step`."""
    dag = DAG()
    if source is None:
        fn = step if step is not None else (lambda seq: seq)
        source = generator_stream(count=count, items_per_second=rate, fn=fn)
    source = dag.new_vertex("source", source)
    counts = dag.new_vertex("counts", RunningCount)
    dag.edge(Edge.between(source, counts).partitioned(key_of).distributed())
    files = dag.new_vertex("files", transactional_files(out, format_row))
    dag.edge(Edge.from_(counts, 0).to(files).distributed())
    if dsn is not None:
        table = dag.new_vertex("table", postgres(dsn, "INSERT INTO counts (k, n) VALUES (%s, %s)"))
        dag.edge(Edge.from_(counts, 1).to(table).distributed())
    return dag


def expected_rows(count: int) -> list[str]:
    """What the files hold once `count` items were counted, each row once."""
    per_key = [len(range(k, count, KEYS)) for k in range(KEYS)]
    return sorted(f"{k},{n}" for k in range(KEYS) for n in range(1, per_key[k] + 1))


def committed_epochs(job: Any) -> int:
    """Epochs the job committed in this run (its `epoch_stats()`; a job in epochs has them)."""
    stats = job.epoch_stats()
    return stats.committed if stats is not None else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory of the files sink")
    parser.add_argument("--checkpoints", required=True, help="checkpoint root (path or fsspec URL)")
    parser.add_argument("--count", type=int, default=200_000, help="items to generate; 0: endless")
    parser.add_argument(
        "--rate", type=float, default=10_000, help="items per second (default 10000; 0: as fast as possible)"
    )
    parser.add_argument("--dsn", default=None, help="PostgreSQL DSN: also write the rows to table counts")
    parser.add_argument("--epoch-millis", type=int, default=2000)
    args = parser.parse_args(argv)
    from jetspark.runners.identity import CompletedBefore
    from jetspark.runners.spark import SparkRunner

    if args.dsn:
        import psycopg

        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS counts (k int, n int)")
    config = JobConfig(
        name="streaming-counts",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=args.epoch_millis,
        checkpoint_root=args.checkpoints,
    )
    count = args.count or None
    try:
        job = SparkRunner().submit(streaming_dag(args.out, count, args.rate or None, args.dsn), config)
    except KeyboardInterrupt:
        print("interrupted before the job started; nothing was written", file=sys.stderr)
        return 130
    try:
        job.join()
    except KeyboardInterrupt:
        print("suspending ...", file=sys.stderr)
        job.suspend()
        print(f"suspended after {committed_epochs(job)} epochs; run again to resume", file=sys.stderr)
        return 0
    rows = read_lines(args.out)
    if isinstance(job, CompletedBefore):  # it completed in an earlier run: nothing ran now
        print(f"{len(rows)} rows in {args.out}; the job completed before, nothing to do")
    else:
        print(f"{len(rows)} rows in {args.out} after {committed_epochs(job)} committed epochs")
    if count is not None:
        exact = sorted(rows) == expected_rows(count)
        print("exactly once:", exact)
        return 0 if exact else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

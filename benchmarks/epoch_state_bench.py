"""What an epoch costs as the state grows: the streaming-counts job with 1k or 1M keys of state.

    python benchmarks/epoch_state_bench.py [--keys 1000 1000000] [--items 2e6] [--rate 1e5]
        [--epoch-millis 1000] [--quiet-epochs 8] [--master local[2]] [--skip-throughput]

The job is `examples/streaming_counts.py`'s shape: a generator -> a user's keyed running count
(`KeyedCount`, an `AbstractProcessor`, key = item % keys) -> `transactional_files`. Two parts,
each for every `--keys`, in one Spark session:

- **throughput**: `--items` items at `--rate` items/s (0: unthrottled), once with NONE (one
  Spark job) and once with EXACTLY_ONCE (epochs of `--epoch-millis`); reported: seconds of each,
  EXACTLY_ONCE / NONE, and the EXACTLY_ONCE run's seconds per committed epoch;
- **fixed cost**: EXACTLY_ONCE only; the source emits `keys` items at once (so the state holds
  every key), then about 20 items a second: the seconds per epoch over `--quiet-epochs` epochs
  after the first two, minus the configured span, is what an epoch costs beyond its span when
  the state is large and the input small. The job's state cache is reported too
  (`state_cache_hits` / `state_cache_misses` of the job's metrics, when the runner has them).

With `--changed-keys` the count processor names the keys it changed since its last save
(`changed_snapshot_keys`), so its snapshots are incremental.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cloudpickle
import epoch_timeline
import pyspy_breakdown

import examples.streaming_counts as streaming_counts
from examples.streaming_counts import RunningCount, format_row
from jetspark import DAG, Edge, JobConfig
from jetspark.core import AbstractProcessor, ProcessingGuarantee
from jetspark.core.watermark import BroadcastKey
from jetspark.processors import generator_stream, transactional_files
from jetspark.processors.transactional import read_lines

cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(streaming_counts)


class KeyOf:
    """item -> item % keys (a class, so that the partitioner pickles by value)."""

    def __init__(self, keys: int) -> None:
        self.keys = keys

    def __call__(self, item: int) -> int:
        return item % self.keys


class KeyedCount(RunningCount):
    """The user's running count per key (`examples/streaming_counts.RunningCount`, whose snapshot
    and restore it keeps), over `keys` keys instead of 10."""

    def __init__(self, keys: int) -> None:
        super().__init__()
        self.key_of = KeyOf(keys)

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        key = self.key_of(item)
        n = self.counts.get(key, 0) + 1
        if not self.try_emit(self.row(item, key, n)):
            return False
        self.counts[key] = n
        return True

    def row(self, item: Any, key: int, n: int) -> Any:
        """What is emitted for `item`, the `n`-th of `key`."""
        return (key, n)


class BurstThenTrickle(AbstractProcessor):
    """A source: its share of `range(burst)` at once, then one item every `pause` seconds; its
    position is saved (a broadcast entry per processor), so a restored epoch goes on from it."""

    def __init__(self, burst: int, pause: float) -> None:
        super().__init__()
        self.burst = burst
        self.pause = pause
        self.next_due = 0.0

    def init_processor(self, context: Any) -> None:
        self.index = context.global_processor_index
        self.stride = context.total_parallelism
        self.position = self.index

    def complete(self) -> bool:
        if self.position < self.burst:
            room = max(self.outbox.room(), 1)
            end = min(self.burst, self.position + room * self.stride)
            batch = list(range(self.position, end, self.stride))
            if not self.outbox.offer_batch(batch):
                return False
            self.position = self.position + len(batch) * self.stride
            return False
        now = time.monotonic()
        if now >= self.next_due and self.try_emit(self.position):
            self.position += self.stride
            self.next_due = now + self.pause
        return False

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(BroadcastKey(("position", self.index)), self.position)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if key.key == ("position", self.index):
            self.position = value


class ChangedKeyedCount(KeyedCount):
    """`KeyedCount` that names the keys it changed since its last save: incremental snapshots."""

    def __init__(self, keys: int) -> None:
        super().__init__(keys)
        self.changed: set[int] = set()

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not super().try_process_item(ordinal, item):
            return False
        self.changed.add(self.key_of(item))
        return True

    def changed_snapshot_keys(self) -> set[int]:
        changed, self.changed = self.changed, set()
        return changed


#: The counting processor: the user's plain one, or (`--changed-keys`) one naming what changed.
COUNTER: list[type[KeyedCount]] = [KeyedCount]


def counts_dag(out: str, keys: int, count: int | None, rate: float | None, source: Any = None) -> DAG:
    dag = DAG()
    supplier = generator_stream(count=count, items_per_second=rate) if source is None else source
    source_vertex = dag.new_vertex("source", supplier)
    counter = COUNTER[0]
    counts = dag.new_vertex("counts", lambda: counter(keys))
    dag.edge(Edge.between(source_vertex, counts).partitioned(KeyOf(keys)).distributed())
    files = dag.new_vertex("files", transactional_files(out, format_row))
    dag.edge(Edge.between(counts, files).distributed())
    return dag


def _config(guarantee: ProcessingGuarantee, epoch_millis: int, work: str) -> JobConfig:
    return JobConfig(
        name="epoch-state-bench",
        processing_guarantee=guarantee,
        snapshot_interval_millis=epoch_millis,
        checkpoint_root=f"{work}/ck",
    )


def throughput(
    spark: Any, keys: int, items: int, rate: float | None, guarantee: ProcessingGuarantee, epoch_millis: int
) -> tuple[float, int]:
    from jetspark.runners.spark import SparkRunner

    work = tempfile.mkdtemp(prefix="jetspark-epoch-state-")
    try:
        started = time.perf_counter()
        job = SparkRunner(spark).submit(
            counts_dag(f"{work}/out", keys, items, rate), _config(guarantee, epoch_millis, work)
        )
        job.join()
        elapsed = time.perf_counter() - started
        rows = len(read_lines(f"{work}/out"))
        assert rows == items, f"{guarantee.value}: {rows} rows for {items} items"
        return elapsed, getattr(job, "epochs_committed", 0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fixed_cost(
    spark: Any,
    keys: int,
    epoch_millis: int,
    quiet_epochs: int,
    profile: str | None = None,
    timeline: str | None = None,
) -> dict[str, Any]:
    """Seconds per epoch once the state holds `keys` keys and the input is ~20 items/s; with
    `profile` (a file name), py-spy samples the driver and its Python workers over the quiet
    epochs (`pyspy_breakdown`)."""
    from jetspark.runners.spark import SparkRunner

    work = tempfile.mkdtemp(prefix="jetspark-epoch-state-")
    try:
        job: Any = SparkRunner(spark).submit(
            counts_dag(f"{work}/out", keys, None, None, source=lambda: BurstThenTrickle(keys, 0.1)),
            _config(ProcessingGuarantee.EXACTLY_ONCE, epoch_millis, work),
        )
        events = epoch_timeline.watch(job) if timeline is not None else []
        try:
            while job.epochs_committed < 2:  # the burst, and one epoch after it
                _check(job)
                time.sleep(0.01)
            spy = None if profile is None else pyspy_breakdown.start(profile)
            first, t0 = job.epochs_committed, time.perf_counter()
            while job.epochs_committed < first + quiet_epochs:
                _check(job)
                time.sleep(0.01)
            per_epoch = (time.perf_counter() - t0) / (job.epochs_committed - first)
            if spy is not None:
                pyspy_breakdown.stop(spy)
            stats = job.epoch_stats().epochs
            quiet = [e for e in stats if e.get("epoch", 0) >= first and e.get("commit_ms") is not None]
            figures: dict[str, int] = {}
            for values in job.metrics().values():
                for name in ("state_cache_hits", "state_cache_misses"):
                    figures[name] = figures.get(name, 0) + values.get(name, 0)
        finally:
            job.cancel()
        return {
            "seconds_per_epoch": per_epoch,
            "fixed_cost": per_epoch - epoch_millis / 1000,
            "cache_hits": figures.get("state_cache_hits"),
            "cache_misses": figures.get("state_cache_misses"),
            "commit_ms": sum(e["commit_ms"] for e in quiet) / len(quiet) if quiet else float("nan"),
            "epochs": job.epochs_committed - first,
            "timeline": epoch_timeline.breakdown(
                timeline, job.job_id, events, set(range(first, first + quiet_epochs))
            )
            if timeline is not None
            else [],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _check(job: Any) -> None:
    if job.status.value in ("FAILED", "COMPLETED", "CANCELLED"):
        raise SystemExit(f"the job ended early: {job.status.value}: {job.error}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, nargs="+", default=[1000, 1_000_000])
    parser.add_argument("--items", type=float, default=2e6)
    parser.add_argument(
        "--rate", type=float, default=1e5, help="items/s of the throughput part; 0: unthrottled"
    )
    parser.add_argument("--epoch-millis", type=int, default=1000)
    parser.add_argument("--quiet-epochs", type=int, default=8)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-fixed", action="store_true")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="py-spy (pip install py-spy) records the quiet epochs into FILE (raw); a breakdown is printed",
    )
    parser.add_argument(
        "--timeline",
        metavar="FILE",
        help="time the steps of each quiet epoch (epoch_timeline: tasks append to FILE) and print them",
    )
    parser.add_argument(
        "--changed-keys", action="store_true", help="the count names its changed keys (incremental snapshots)"
    )
    args = parser.parse_args()
    if args.changed_keys:
        COUNTER[0] = ChangedKeyedCount
    from jetspark.runners.spark.session import get_session

    if args.timeline:
        epoch_timeline.enable(args.timeline)  # before the session: its workers inherit it
    spark = get_session(args.master)
    items = int(args.items)
    rate = args.rate or None
    for keys in args.keys:
        if not args.skip_throughput:
            none, _ = throughput(spark, keys, items, rate, ProcessingGuarantee.NONE, args.epoch_millis)
            eo, epochs = throughput(
                spark, keys, items, rate, ProcessingGuarantee.EXACTLY_ONCE, args.epoch_millis
            )
            print(
                f"keys {keys:>9,}  NONE {none:7.2f} s  EXACTLY_ONCE {eo:7.2f} s  ratio(time) {eo / none:5.2f}"
                f"  throughput EO/NONE {none / eo:5.2f}  epochs {epochs}  s/epoch {eo / max(epochs, 1):5.2f}",
                flush=True,
            )
        if not args.skip_fixed:
            profile = None if args.profile is None else f"{args.profile}.{keys}"
            fixed = fixed_cost(spark, keys, args.epoch_millis, args.quiet_epochs, profile, args.timeline)
            print(
                f"keys {keys:>9,}  quiet epochs: {fixed['seconds_per_epoch']:6.3f} s/epoch, "
                f"fixed cost {fixed['fixed_cost'] * 1000:7.0f} ms"
                f"  state cache hits {fixed['cache_hits']} misses {fixed['cache_misses']}"
                f"  driver commit {fixed['commit_ms']:.0f} ms  load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if profile is not None:
                print(pyspy_breakdown.report(profile, fixed["epochs"]), flush=True)
            if fixed["timeline"]:
                print(f"timeline of the quiet epochs ({args.timeline}), mean seconds per epoch:")
                for step, seconds in fixed["timeline"]:
                    print(f"  {seconds:7.3f}  {step}")
                total = sum(seconds for _, seconds in fixed["timeline"])
                print(f"  {total:7.3f}  (sum: an epoch, start to start)", flush=True)


if __name__ == "__main__":
    main()

"""What an epoch costs as the state grows: the streaming-counts job with 1k or 1M keys of state.

    python benchmarks/epoch_state_bench.py [--keys 1000 1000000] [--items 2e6] [--rate 1e5]
        [--epoch-millis 1000] [--quiet-epochs 8] [--master local[2]] [--skip-throughput]
        [--changed-keys | --keyed-state] [--window] [--save-profile]

The job is `examples/streaming_counts.py`'s shape: a generator -> a user's keyed running count
(`KeyedCount`, an `AbstractProcessor`, key = item % keys) -> `transactional_files`. Two parts,
each for every `--keys`, in one Spark session:

- **throughput**: `--items` items at `--rate` items/s (0: unthrottled), once with NONE (one
  Spark job) and once with EXACTLY_ONCE (epochs of `--epoch-millis`); reported: seconds of each,
  EXACTLY_ONCE / NONE, and the EXACTLY_ONCE run's seconds per committed epoch;
- **fixed cost**: EXACTLY_ONCE only; the source emits `keys` items at once (so the state holds
  every key), then about 20 items a second: the seconds per epoch over `--quiet-epochs` epochs
  after the first two, minus the sources' span (its mean over those epochs), is what an epoch
  costs beyond its span when the state is large and the input small. The job's state cache is reported too
  (`state_cache_hits` / `state_cache_misses` of the job's metrics, when the runner has them).

With `--changed-keys` the count processor names the keys it changed since its last save
(`changed_snapshot_keys`, hand-written), so its snapshots are incremental. With `--save-changed-only`
as well, its save visits only `Outbox.keys_to_save()` (as the built-ins do), not every key. With
`--keyed-state` it keeps its counts in a `jetspark.KeyedState` instead (the dict that tracks its
changed keys; its save visits only those). The state cache's hits, misses and relays
(`state_cache_relays`: hits whose task ran in the holder, `handoff`) are printed; set
`JETSPARK_STATE_HANDOFF=off` to measure without the handoff.

With `--window` the fixed-cost part runs a windowed job instead: the built-in
`aggregate_to_sliding_window` (a count per key in a tumbling window that does not close during
the run, so the state holds every key), twice in the same session: as built (it names its
changed keys: incremental snapshots) and with `changed_snapshot_keys` switched off (full ones).

With `--save-profile` (no Spark) one window processor holding `--keys` keys is saved in this
process through the engine's outbox (the test kit's harness), after 20 keys changed: a full
save, an incremental save that still visits every entry (the engine drops the unchanged offers:
what a processor ignoring `Outbox.keys_to_save()` costs), and an incremental save that visits
only the changed keys (the built-in as it is).
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
from spark_conf_option import add_spark_conf_option, spark_conf

import examples.streaming_counts as streaming_counts
from examples.streaming_counts import RunningCount, format_row
from jetspark import DAG, Edge, JobConfig, KeyedState
from jetspark.core import AbstractProcessor, ProcessingGuarantee
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.core.traverser import traverse_iterable
from jetspark.core.watermark import BroadcastKey
from jetspark.processors import WindowPolicy, counting, generator_stream, transactional_files
from jetspark.processors.transactional import read_lines
from jetspark.processors.windows import _SlidingWindowP

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


class KeyedStateCount(KeyedCount):
    """`KeyedCount` with its counts in a `KeyedState`: incremental snapshots, no bookkeeping."""

    def __init__(self, keys: int) -> None:
        super().__init__(keys)
        self.counts: KeyedState[int, int] = KeyedState()

    def save_to_snapshot(self) -> bool:
        return self.counts.save(self)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.counts.restore(key, value)

    def changed_snapshot_keys(self) -> Any:
        return self.counts.changed_keys()


class SavingChangedCount(ChangedKeyedCount):
    """`ChangedKeyedCount` whose save visits only the keys the engine asks for
    (`Outbox.keys_to_save()`), as the built-ins do: an incremental save costs what changed."""

    def save_to_snapshot(self) -> bool:
        keys = self.outbox.keys_to_save()
        if keys is None:
            return super().save_to_snapshot()
        if self._saving is None:
            counts = self.counts
            self._saving = traverse_iterable([(k, counts[k]) for k in keys if k in counts])
        if not self.emit_from_traverser_to_snapshot(self._saving):
            return False
        self._saving = None
        return True


#: The counting processor: the user's plain one, or (`--changed-keys`) one naming what changed.
COUNTER: list[type[KeyedCount]] = [KeyedCount]
#: The window of `--window`: longer than any run, so no window closes and every key stays.
WINDOW = WindowPolicy.tumbling(10**15)


def at_zero(item: int) -> int:
    """Every item's event time: one frame holds them all."""
    return 0


class FullSnapshotWindowP(_SlidingWindowP):
    """The built-in window processor with `changed_snapshot_keys` switched off: full snapshots."""

    changed_snapshot_keys = None


def window_supplier(keys: int, incremental: bool) -> ProcessorSupplier:
    """`aggregate_to_sliding_window` counting per key; without `incremental`, the same processor
    saving fully."""
    cls = _SlidingWindowP if incremental else FullSnapshotWindowP
    return ProcessorSupplier.of(lambda: cls(WINDOW, counting(), 0, KeyOf(keys), at_zero))


def counts_dag(
    out: str, keys: int, count: int | None, rate: float | None, source: Any = None, middle: Any = None
) -> DAG:
    dag = DAG()
    supplier = generator_stream(count=count, items_per_second=rate) if source is None else source
    source_vertex = dag.new_vertex("source", supplier)
    counter = COUNTER[0]
    counts = dag.new_vertex("counts", middle or (lambda: counter(keys)))
    dag.edge(Edge.between(source_vertex, counts).partitioned(KeyOf(keys)).distributed())
    files = dag.new_vertex("files", transactional_files(out, format_row))
    dag.edge(Edge.between(counts, files).distributed())
    return dag


#: `--within-interval`: JobConfig.epochs_within_interval (shorter spans under a backlog too).
WITHIN_INTERVAL = [False]


def _config(guarantee: ProcessingGuarantee, epoch_millis: int, work: str) -> JobConfig:
    return JobConfig(
        name="epoch-state-bench",
        processing_guarantee=guarantee,
        snapshot_interval_millis=epoch_millis,
        checkpoint_root=f"{work}/ck",
        epochs_within_interval=WITHIN_INTERVAL[0],
    )


#: The state cache's figures of the last `throughput` run (hits, misses, relays).
CACHE_FIGURES: dict[str, int] = {}


#: With `--timeline`, the steps of the last EXACTLY_ONCE `throughput` run's epochs after the
#: first (mean seconds per epoch).
THROUGHPUT_TIMELINE: list[tuple[str, float]] = []


#: Cores busy on the whole machine during the last run of each guarantee (`/proc/stat`): how
#: much of the machine a run left idle, which is what overlapping work could still fill.
CPU_FIGURES: dict[str, float] = {}


def _machine_busy_seconds() -> float:
    """CPU seconds the machine spent busy since boot (every core; Linux `/proc/stat`), 0 elsewhere."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(field) for field in stat.readline().split()[1:]]
    except OSError:
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def throughput(
    spark: Any,
    keys: int,
    items: int,
    rate: float | None,
    guarantee: ProcessingGuarantee,
    epoch_millis: int,
    timeline: str | None = None,
) -> tuple[float, int]:
    from jetspark.runners.spark import SparkRunner

    work = tempfile.mkdtemp(prefix="jetspark-epoch-state-")
    try:
        busy_before = _machine_busy_seconds()
        started = time.perf_counter()
        job = SparkRunner(spark).submit(
            counts_dag(f"{work}/out", keys, items, rate), _config(guarantee, epoch_millis, work)
        )
        events = (
            epoch_timeline.watch(job)
            if timeline is not None and guarantee is not ProcessingGuarantee.NONE
            else []
        )
        job.join()
        if events:
            THROUGHPUT_TIMELINE[:] = epoch_timeline.breakdown(
                timeline,
                job.job_id,
                events,
                set(range(1, job.epochs_committed)),  # type: ignore[arg-type]
            )
        elapsed = time.perf_counter() - started
        CPU_FIGURES[guarantee.value] = (_machine_busy_seconds() - busy_before) / elapsed
        rows = len(read_lines(f"{work}/out"))
        assert rows == items, f"{guarantee.value}: {rows} rows for {items} items"
        CACHE_FIGURES.clear()
        for values in job.metrics().values():
            for name in ("state_cache_hits", "state_cache_misses", "state_cache_relays"):
                CACHE_FIGURES[name] = CACHE_FIGURES.get(name, 0) + values.get(name, 0)
        return elapsed, getattr(job, "epochs_committed", 0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fixed_cost(
    spark: Any,
    keys: int,
    epoch_millis: int,
    quiet_epochs: int,
    middle: Any = None,
    profile: str | None = None,
    timeline: str | None = None,
) -> dict[str, Any]:
    """Seconds per epoch once the state holds `keys` keys and the input is ~20 items/s; the
    middle vertex counts per key (`middle`: another supplier, e.g. a window's); with `profile`
    (a file name), py-spy samples the driver and its Python workers over the quiet epochs
    (`pyspy_breakdown`)."""
    from jetspark.runners.spark import SparkRunner

    work = tempfile.mkdtemp(prefix="jetspark-epoch-state-")
    try:
        source = ProcessorSupplier.of(lambda: BurstThenTrickle(keys, 0.1))
        job: Any = SparkRunner(spark).submit(
            counts_dag(f"{work}/out", keys, None, None, source=source, middle=middle),
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
            chained = _chained_files(f"{work}/ck", "epoch-state-bench")
            if spy is not None:
                pyspy_breakdown.stop(spy)
            stats = job.epoch_stats().epochs
            quiet = [e for e in stats if e.get("epoch", 0) >= first and e.get("commit_ms") is not None]
            figures: dict[str, int] = {}
            for values in job.metrics().values():
                for name in ("state_cache_hits", "state_cache_misses", "state_cache_relays"):
                    figures[name] = figures.get(name, 0) + values.get(name, 0)
        finally:
            job.cancel()
        # the sources' span of each quiet epoch (shortened by what the epochs before took beyond it)
        spans = [e["span_s"] for e in quiet if e.get("span_s") is not None]
        span = sum(spans) / len(spans) if spans else epoch_millis / 1000
        return {
            "seconds_per_epoch": per_epoch,
            "span": span,
            "fixed_cost": per_epoch - span,
            "cache_hits": figures.get("state_cache_hits"),
            "cache_misses": figures.get("state_cache_misses"),
            "cache_relays": figures.get("state_cache_relays"),
            "chained": chained,
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


class WalkingWindowP(_SlidingWindowP):
    """The built-in window, but its save offers every entry even in an incremental snapshot."""

    def _snapshot_entries(self) -> list[tuple[Any, Any]]:
        outbox = self.outbox
        keys_to_save = outbox.keys_to_save
        outbox.keys_to_save = lambda: None  # type: ignore[method-assign]
        try:
            return super()._snapshot_entries()
        finally:
            outbox.keys_to_save = keys_to_save  # type: ignore[method-assign]


def _time_saves(processor: Any) -> list[float]:
    """Adds the seconds of each `save_to_snapshot` call (with the outbox's pickling, not the
    kit's merge of the deltas) to the returned list's one number."""
    spent = [0.0]
    save = processor.save_to_snapshot

    def timed_save() -> bool:
        started = time.perf_counter()
        try:
            return bool(save())
        finally:
            spent[0] += time.perf_counter() - started

    processor.save_to_snapshot = timed_save
    return spent


def save_profile(keys: int) -> None:
    """Seconds of one save of a window processor holding `keys` keys, 20 of them changed."""
    from jetspark.testing._verify import driven_harness

    for name, cls in (
        ("incremental, visiting only changed keys", _SlidingWindowP),
        ("incremental, visiting every entry", WalkingWindowP),
    ):
        supplier = ProcessorSupplier.of(lambda cls=cls: cls(WINDOW, counting(), 0, KeyOf(keys), at_zero))
        harness = driven_harness(
            supplier,
            inbox_size=4096,
            outbox_capacity=1024,
            incremental=True,
            cooperative_limit=1e9,
            timeout_seconds=None,
        )
        for start in range(0, keys, 100_000):
            harness.feed(0, list(range(start, min(keys, start + 100_000))))
        spent = _time_saves(harness.instances[0].processor)
        harness.snapshot(restore=False)  # the first: full
        full, spent[0] = spent[0], 0.0
        harness.feed(0, list(range(20)))
        harness.snapshot(restore=False)
        incremental = spent[0]
        written = harness.deltas[-1]
        assert written is not None and len(written) == 20, "an incremental save of the 20 keys"
        harness.close(None)
        print(
            f"keys {keys:>9,}  one window processor: full save {full:6.2f} s, {name}: {incremental * 1000:8.1f} ms",
            flush=True,
        )


def _chained_files(root: str, name: str) -> str:
    """'k/n': of the middle vertex's n files in the last committed snapshot, k are incremental."""
    from jetspark.checkpoint import CheckpointStore

    manifest = CheckpointStore(root, name, tidy=False).latest()
    files = [] if manifest is None else [f for f in manifest.files if f.vertex == "counts"]
    return f"{sum(1 for f in files if f.chain)}/{len(files)}"


def _check(job: Any) -> None:
    if job.status.value in ("failed", "completed", "cancelled"):  # JobStatus values
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
    add_spark_conf_option(parser)
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
    parser.add_argument(
        "--keyed-state", action="store_true", help="the count keeps its counts in a KeyedState (incremental)"
    )
    parser.add_argument(
        "--save-changed-only",
        action="store_true",
        help="with --changed-keys: the count's save visits only Outbox.keys_to_save() (as the built-ins)",
    )
    parser.add_argument("--save-profile", action="store_true", help="one window processor's saves, no Spark")
    parser.add_argument(
        "--window",
        action="store_true",
        help="fixed cost of a windowed job, with and without changed_snapshot_keys, in one session",
    )
    parser.add_argument(
        "--within-interval",
        action="store_true",
        help="JobConfig.epochs_within_interval: epochs as long as the interval under a backlog too",
    )
    args = parser.parse_args()
    WITHIN_INTERVAL[0] = args.within_interval
    if args.changed_keys:
        COUNTER[0] = SavingChangedCount if args.save_changed_only else ChangedKeyedCount
    if args.keyed_state:
        COUNTER[0] = KeyedStateCount
    if args.save_profile:
        for keys in args.keys:
            save_profile(keys)
        return
    from jetspark.runners.spark.session import get_session

    if args.timeline:
        epoch_timeline.enable(args.timeline)  # before the session: its workers inherit it
    spark = get_session(args.master, extra_conf=spark_conf(args))
    items = int(args.items)
    rate = args.rate or None
    for keys in args.keys:
        if not args.skip_throughput:
            none, _ = throughput(spark, keys, items, rate, ProcessingGuarantee.NONE, args.epoch_millis)
            eo, epochs = throughput(
                spark, keys, items, rate, ProcessingGuarantee.EXACTLY_ONCE, args.epoch_millis, args.timeline
            )
            print(
                f"keys {keys:>9,}  NONE {none:7.2f} s  EXACTLY_ONCE {eo:7.2f} s  ratio(time) {eo / none:5.2f}"
                f"  throughput EO/NONE {none / eo:5.2f}  epochs {epochs}  s/epoch {eo / max(epochs, 1):5.2f}"
                f"  load {os.getloadavg()[0]:.1f}  EO state cache {CACHE_FIGURES}"
                f"  cores busy NONE {CPU_FIGURES.get('none', 0):.2f} EO {CPU_FIGURES.get('exactly_once', 0):.2f}",
                flush=True,
            )
            if THROUGHPUT_TIMELINE:
                print(f"timeline of the EXACTLY_ONCE epochs after the first ({args.timeline}), mean s/epoch:")
                for step, seconds in THROUGHPUT_TIMELINE:
                    print(f"  {seconds:7.3f}  {step}")
                total = sum(seconds for _, seconds in THROUGHPUT_TIMELINE)
                print(f"  {total:7.3f}  (sum: an epoch, start to start)", flush=True)
        if args.window:
            for incremental in (True, False):
                middle = window_supplier(keys, incremental)
                fixed = fixed_cost(spark, keys, args.epoch_millis, args.quiet_epochs, middle)
                print(
                    f"keys {keys:>9,}  window, {'incremental' if incremental else 'full':>11} snapshots: "
                    f"quiet epochs {fixed['seconds_per_epoch']:6.3f} s/epoch, fixed cost "
                    f"{fixed['fixed_cost'] * 1000:7.0f} ms  state cache hits {fixed['cache_hits']} "
                    f"misses {fixed['cache_misses']}  incremental files (last snapshot) {fixed['chained']}",
                    flush=True,
                )
        elif not args.skip_fixed:
            profile = None if args.profile is None else f"{args.profile}.{keys}"
            fixed = fixed_cost(
                spark, keys, args.epoch_millis, args.quiet_epochs, None, profile, args.timeline
            )
            print(
                f"keys {keys:>9,}  quiet epochs: {fixed['seconds_per_epoch']:6.3f} s/epoch, "
                f"fixed cost {fixed['fixed_cost'] * 1000:7.0f} ms (span {fixed['span']:.2f} s)"
                f"  state cache hits {fixed['cache_hits']} misses {fixed['cache_misses']}"
                f" relays {fixed['cache_relays']}  driver commit {fixed['commit_ms']:.0f} ms  load {os.getloadavg()[0]:.1f}",
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

"""Memory benchmark on Spark `local[2]`: peak RSS of the Python workers, jetspark against PySpark.

    python benchmarks/spark_memory.py [--sizes 2e6,20e6,80e6 | --quick] [--max-rss-mb 6000]
                                      [--max-seconds 600] [--only rdd,jetspark-user,...]

The job: N ints -> (i % 100, i) -> sum per key -> collect, at each N of `--sizes` (`--quick`:
2e5,2e6), by four contenders on one SparkSession with 2 members (= Spark partitions):

- `rdd`: plain PySpark, as an experienced user writes it (the baseline):
  `sc.range(0, N, numSlices=2).map(lambda i: (i % 100, i)).reduceByKey(add, 2).collect()`;
- `dataframe`: `spark.range(N).groupBy(col("id") % 100).sum()`: runs in the JVM, no Python worker;
- `jetspark-builtins`: `from_iterable(range(N))` (only the range object travels; the items are
  made on the executors) -> `map` -> `aggregate_by_key(..., summing(...))` (two stages: partial
  sums per member, then a partitioned distributed edge keyed on the key) -> `collect`;
- `jetspark-user`: the user's own `AbstractProcessor`s: a source emitting
  `range(global_processor_index, N, total_parallelism)` from `complete()` with `try_emit`, a map
  via `try_process_item`, and a keyed sum behind a partitioned distributed edge keyed on
  `item[0]` (so every pair crosses the shuffle) that emits from `complete()` through
  `emit_from_traverser(traverse_iterable(...))`.

How memory is measured (Linux only): a background thread polls, every `--interval` s (0.05), the
process tree of the Spark JVM (a child of this Python process; the Python workers are forked by
`pyspark.daemon`, a child of the JVM). A worker's peak is the larger of its polled RSS and its
kernel high-water mark (VmHWM), so a spike between two polls is not missed. Reported per
contender and N: the peak of the largest single Python worker (not the daemon, not the JVM), the
peak of all workers together, and the JVM's peak RSS (polled; its heap rarely shrinks, so a JVM
peak may be left over from an earlier contender although a full GC runs between contenders).
Peaks are reset between contenders. Python workers are not reused
(`spark.python.worker.reuse=false`): each task gets a fresh fork of the daemon, so a peak belongs
to one contender (a reused worker would keep the memory of the previous one); `--reuse-workers`
keeps Spark's default, and then a worker's peak may include what an earlier contender left, and
"all workers" counts idle ones too. Fresh workers cost every contender time (about 1.5 s a job at
4 M on the 2-core machine): compare times with `--reuse-workers` (or spark_bench.py) as well.

Limits: a contender is cancelled (its Spark job group) when its Python workers together exceed
`--max-rss-mb` or it runs longer than `--max-seconds`; it is reported as aborted and skipped at
the larger sizes. Results are checked against the closed-form sums per key. Times are wall clock
of one run (a warm-up at 10,000 ints runs every contender first). The table is markdown, with
ratios to the `rdd` baseline at the same N.

Which jetspark is measured: the Python workers put their working directory (this process's) first
on sys.path, so run from the repository root, or, to measure another checkout of jetspark, from
that checkout's folder with PYTHONPATH set to it; the script stops if the driver and the workers
would import jetspark from different folders.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import operator
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cloudpickle
import psutil
import pyspark
from pyspark import cloudpickle as pyspark_cloudpickle
from pyspark.sql.functions import col

from jetspark import DAG, AbstractProcessor, Edge, JobConfig, ProcessorContext, Traverser, traverse_iterable
from jetspark import processors as P
from jetspark.runners.spark import SparkRunner, get_session

MEMBERS = 2
KEYS = 100
WARM_UP_N = 10_000
MB = 1024 * 1024

# Executors cannot import the benchmarks folder: ship this module's functions and classes by
# value, for jetspark (cloudpickle) and for plain PySpark (its own bundled cloudpickle) alike.
cloudpickle.register_pickle_by_value(sys.modules[__name__])
pyspark_cloudpickle.register_pickle_by_value(sys.modules[__name__])


# ---- jetspark (a): built-in processors ---------------------------------------------------------


def to_pair(i: int) -> tuple[int, int]:
    return (i % KEYS, i)


def pair_key(pair: tuple[int, int]) -> int:
    return pair[0]


def pair_value(pair: tuple[int, int]) -> int:
    return pair[1]


# ---- jetspark (b): the user's own processors ---------------------------------------------------


class RangeSource(AbstractProcessor):
    """Emits its share of range(n): processor g of T emits g, g + T, g + 2T, ..."""

    def __init__(self, n: int) -> None:
        self.n = n

    def init_processor(self, context: ProcessorContext) -> None:
        self.numbers = iter(range(context.global_processor_index, self.n, context.total_parallelism))
        self.pending: int | None = None

    def complete(self) -> bool:
        while True:
            if self.pending is None:
                self.pending = next(self.numbers, None)
                if self.pending is None:
                    return True  # all emitted
            if not self.try_emit(self.pending):
                return False  # the outbox is full: called again later, the number kept
            self.pending = None


class ToPair(AbstractProcessor):
    """i -> (i % 100, i)."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit((item % KEYS, item))


class KeyedSum(AbstractProcessor):
    """Sums the values per key; emits (key, sum) pairs once all input is in."""

    def init_processor(self, context: ProcessorContext) -> None:
        self.sums: dict[int, int] = {}
        self.results: Traverser[tuple[int, int]] | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        key, value = item
        self.sums[key] = self.sums.get(key, 0) + value
        return True

    def complete(self) -> bool:
        if self.results is None:
            self.results = traverse_iterable(self.sums.items())
        return self.emit_from_traverser(self.results)


# ---- the contenders ----------------------------------------------------------------------------


@dataclass
class Bench:
    """What a contender runs on; `group` is the Spark job group to cancel on an abort."""

    spark: Any
    runner: SparkRunner
    group: str | None = None


def run_jetspark(bench: Bench, dag: DAG, name: str) -> dict[int, int]:
    job = bench.runner.submit(dag, JobConfig(name=name, member_count=MEMBERS))
    bench.group = job.group
    job.join()
    return dict(job.result("sink"))


def jetspark_builtins(bench: Bench, n: int) -> dict[int, int]:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(n)))
    pairs = dag.new_vertex("pairs", P.map(to_pair))
    dag.edge(Edge.between(source, pairs))
    summed = P.aggregate_by_key(dag, "sum", pairs, pair_key, P.summing(pair_value))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(summed, sink))
    return run_jetspark(bench, dag, "memory-builtins")


def jetspark_user(bench: Bench, n: int) -> dict[int, int]:
    dag = DAG()
    source = dag.new_vertex("source", lambda: RangeSource(n))
    pairs = dag.new_vertex("pairs", ToPair)
    summed = dag.new_vertex("sum", KeyedSum)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, pairs))
    dag.edge(Edge.between(pairs, summed).partitioned(pair_key).distributed())
    dag.edge(Edge.between(summed, sink))
    return run_jetspark(bench, dag, "memory-user")


def rdd(bench: Bench, n: int) -> dict[int, int]:
    sc = bench.spark.sparkContext
    pairs = sc.range(0, n, numSlices=MEMBERS).map(lambda i: (i % KEYS, i))
    return dict(pairs.reduceByKey(operator.add, MEMBERS).collect())


def dataframe(bench: Bench, n: int) -> dict[int, int]:
    rows = bench.spark.range(n).groupBy(col("id") % KEYS).sum().collect()
    return {row[0]: row[1] for row in rows}


CONTENDERS: dict[str, Callable[[Bench, int], dict[int, int]]] = {
    "rdd": rdd,
    "dataframe": dataframe,
    "jetspark-builtins": jetspark_builtins,
    "jetspark-user": jetspark_user,
}
BASELINE = "rdd"


def jetspark_folder(_: object = None) -> str:
    """Where jetspark is imported from (run on the driver and in a worker: they must agree)."""
    import jetspark

    return str(Path(jetspark.__file__).parent)


def expected_sums(n: int) -> dict[int, int]:
    """Sum of the i < n with i % KEYS == k, for each key k: an arithmetic series."""
    sums = {}
    for key in range(min(n, KEYS)):
        count = (n - 1 - key) // KEYS + 1
        sums[key] = key * count + KEYS * count * (count - 1) // 2
    return sums


# ---- measuring ---------------------------------------------------------------------------------


def status_kb(pid: int) -> tuple[int, int] | None:
    """(VmRSS, VmHWM) of a process in KiB, from /proc; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    rss = hwm = 0
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
        elif line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
    return rss, hwm


def child_pids(pid: int) -> list[int]:
    """Children of a single-threaded process (the daemon forks from its main thread): one cheap
    read of /proc/PID/task/PID/children, else psutil (which scans every process)."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        try:
            return [child.pid for child in psutil.Process(pid).children()]
        except psutil.Error:
            return []
    except OSError:
        return []


def find_jvm() -> psutil.Process:
    """The Spark driver JVM: a `java` process among this process's descendants."""
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name() == "java":
                return child
        except psutil.Error:
            continue
    raise SystemExit("no Spark JVM among this process's descendants: is the session embedded?")


@dataclass
class Peaks:
    """Peak RSS in bytes over one contender's run."""

    worker: int = 0  # the largest single Python worker
    workers: int = 0  # all Python workers at one poll
    jvm: int = 0
    worker_pids: int = 0  # distinct workers seen


class MemoryWatcher(threading.Thread):
    """Polls the JVM's process tree; keeps the peaks; cancels a contender over its limits."""

    def __init__(self, jvm: psutil.Process, interval: float, use_hwm: bool) -> None:
        super().__init__(name="rss-watcher", daemon=True)
        self.jvm = jvm
        self.interval = interval
        self.use_hwm = use_hwm
        self.daemons: list[int] = []  # pyspark.daemon processes (children of the JVM)
        self.direct: list[int] = []  # Python processes the JVM started itself (no daemon)
        self.daemon_rss = 0
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._peaks = Peaks()
        self._seen: set[int] = set()
        self._active = False
        self._started_at = 0.0
        self._limit = 0
        self._max_seconds = 0.0
        self._cancel: Callable[[], None] = lambda: None
        self.reason: str | None = None
        self._aborted_at = 0.0
        self._last_cancel = 0.0
        self.poll_seconds = 0.0  # time spent polling, to show the watcher is cheap
        self.polls = 0

    # ---- per contender ----

    def begin(self, limit_mb: float, max_seconds: float, cancel: Callable[[], None]) -> None:
        with self._lock:
            self._peaks = Peaks()
            self._seen = set()
            self._limit = int(limit_mb * MB)
            self._max_seconds = max_seconds
            self._cancel = cancel
            self.reason = None
            self._started_at = time.monotonic()
            self._active = True

    def end(self) -> tuple[Peaks, str | None]:
        self._sample()  # a last look, so a short run has at least one
        with self._lock:
            self._active = False
            peaks = Peaks(self._peaks.worker, self._peaks.workers, self._peaks.jvm, len(self._seen))
            return peaks, self.reason

    def stop(self) -> None:
        self._stopped.set()

    # ---- polling ----

    def run(self) -> None:
        last_discovery = 0.0
        while not self._stopped.wait(self.interval):
            now = time.monotonic()
            if now - last_discovery >= 1.0:
                self._discover()
                last_discovery = now
            self._sample()
            self._check_limits()

    def _discover(self) -> None:
        """Find the daemon(s) and any Python process the JVM started directly (psutil, once a second)."""
        daemons, direct = [], []
        try:
            children = self.jvm.children()
        except psutil.Error:
            return
        for child in children:
            try:
                cmdline = " ".join(child.cmdline())
            except psutil.Error:
                continue
            if "pyspark.daemon" in cmdline:
                daemons.append(child.pid)
            elif "python" in child.name() or "python" in cmdline.split(" ", 1)[0]:
                direct.append(child.pid)
        self.daemons, self.direct = daemons, direct

    def _sample(self) -> None:
        started = time.perf_counter()
        workers = list(self.direct)
        for daemon in self.daemons:
            workers.extend(child_pids(daemon))
            daemon_status = status_kb(daemon)
            if daemon_status is not None:
                self.daemon_rss = daemon_status[0] * 1024
        largest = total = 0
        alive = []
        for pid in workers:
            status = status_kb(pid)
            if status is None:
                continue
            alive.append(pid)
            rss, hwm = status
            total += rss
            largest = max(largest, max(rss, hwm) if self.use_hwm else rss)
        jvm_status = status_kb(self.jvm.pid)
        jvm_rss = jvm_status[0] if jvm_status else 0
        with self._lock:
            if self._active:
                peaks = self._peaks
                peaks.worker = max(peaks.worker, largest * 1024)
                peaks.workers = max(peaks.workers, total * 1024)
                peaks.jvm = max(peaks.jvm, jvm_rss * 1024)
                self._seen.update(alive)
        self.poll_seconds += time.perf_counter() - started
        self.polls += 1

    def _check_limits(self) -> None:
        with self._lock:
            if not self._active:
                return
            now = time.monotonic()
            if self.reason is None:
                if self._peaks.workers > self._limit:
                    self.reason = f"aborted over {self._limit / MB:.0f} MB"
                elif now - self._started_at > self._max_seconds:
                    self.reason = f"aborted after {self._max_seconds:.0f} s"
                else:
                    return
                self._aborted_at = now
            elif now - self._last_cancel < 1.0:
                return
            self._last_cancel = now
            cancel = self._cancel
            kill = now - self._aborted_at > 15.0
        try:
            cancel()  # again every second until the contender ends (its group may be set late)
        except Exception as error:
            print(f"  cancelling failed: {error}", file=sys.stderr)
        if kill:  # cancelled 15 s ago and still running: end our session's workers ourselves
            for daemon in self.daemons:
                for pid in child_pids(daemon):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)


# ---- running and reporting ---------------------------------------------------------------------


@dataclass
class Row:
    contender: str
    n: int
    seconds: float | None
    peaks: Peaks | None
    note: str = ""


def run_one(
    bench: Bench, watcher: MemoryWatcher, name: str, n: int, limit_mb: float, max_seconds: float
) -> Row:
    sc = bench.spark.sparkContext
    gc.collect()
    sc._jvm.System.gc()  # let the JVM give back heap before the next contender, where it will
    time.sleep(1.0)
    bench.group = f"spark-memory-{name}-{n}"
    sc.setJobGroup(bench.group, f"spark_memory {name} N={n}", interruptOnCancel=True)

    def cancel() -> None:
        if bench.group is not None:
            sc.cancelJobGroup(bench.group)

    watcher.begin(limit_mb, max_seconds, cancel)
    started = time.perf_counter()
    result: dict[int, int] | None = None
    failure: BaseException | None = None
    try:
        result = CONTENDERS[name](bench, n)
    except Exception as error:
        failure = error
    elapsed = time.perf_counter() - started
    peaks, reason = watcher.end()
    if reason is not None:
        return Row(name, n, elapsed, peaks, reason)
    if failure is not None:
        print(f"{name} at N={n} failed: {failure!r}", file=sys.stderr)
        first = (str(failure).strip().splitlines() or [type(failure).__name__])[0]
        return Row(name, n, elapsed, peaks, f"failed: {first[:120]}")
    if result != expected_sums(n):
        return Row(name, n, elapsed, peaks, "WRONG RESULT")
    return Row(name, n, elapsed, peaks)


def size_label(n: int) -> str:
    if n >= 1_000_000 and n % 100_000 == 0:
        return f"{n / 1e6:g} M"
    if n >= 1_000 and n % 100 == 0:
        return f"{n / 1e3:g} k"
    return str(n)


def mb(value: int) -> str:
    return f"{value / MB:,.0f}"


def table(rows: list[Row]) -> str:
    baselines = {
        row.n: row for row in rows if row.contender == BASELINE and not row.note and row.peaks is not None
    }
    lines = [
        "| contender | N | seconds | peak worker RSS MB | worker RSS x rdd | time x rdd "
        "| all workers MB | JVM MB | workers | note |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        cells = [row.contender, size_label(row.n)]
        if row.seconds is None or row.peaks is None:
            cells += ["-"] * 7
        else:
            peaks = row.peaks
            base = baselines.get(row.n)
            has_workers = peaks.worker_pids > 0
            rss_ratio = time_ratio = "-"
            if base is not None and base.peaks is not None and base.seconds and not row.note:
                time_ratio = f"{row.seconds / base.seconds:.2f}"
                if has_workers and base.peaks.worker:
                    rss_ratio = f"{peaks.worker / base.peaks.worker:.2f}"
            cells += [
                f"{row.seconds:.2f}",
                mb(peaks.worker) if has_workers else "-",
                rss_ratio,
                time_ratio,
                mb(peaks.workers) if has_workers else "-",
                mb(peaks.jvm),
                str(peaks.worker_pids),
            ]
        cells.append(row.note)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_sizes(text: str) -> list[int]:
    return [int(float(part)) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=parse_sizes, default=parse_sizes("2e6,20e6,80e6"))
    parser.add_argument("--quick", action="store_true", help="sizes 2e5,2e6")
    parser.add_argument("--only", default=",".join(CONTENDERS), help="contenders to run, comma-separated")
    parser.add_argument(
        "--max-rss-mb", type=float, default=6000, help="cap on a contender's workers together"
    )
    parser.add_argument("--max-seconds", type=float, default=600, help="cap on one contender's run")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between polls")
    parser.add_argument("--reuse-workers", action="store_true", help="keep Spark's worker reuse (see above)")
    args = parser.parse_args()
    sizes: list[int] = parse_sizes("2e5,2e6") if args.quick else args.sizes
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in names if name not in CONTENDERS]
    if unknown:
        parser.error(f"unknown contenders {unknown}; choose from {list(CONTENDERS)}")

    conf = {} if args.reuse_workers else {"spark.python.worker.reuse": "false"}
    spark = get_session(f"local[{MEMBERS}]", extra_conf=conf)
    bench = Bench(spark, SparkRunner(spark, member_count=MEMBERS))
    here, there = jetspark_folder(), spark.sparkContext.parallelize([0], 1).map(jetspark_folder).first()
    if here != there:  # the workers put their working directory (this one's) first on sys.path
        raise SystemExit(
            f"this process imports jetspark from {here}, the Python workers from {there}: run from a "
            "folder that has no other jetspark in it, or from the one you mean to measure"
        )
    watcher = MemoryWatcher(find_jvm(), args.interval, use_hwm=not args.reuse_workers)
    watcher.start()

    print(f"warming up ({WARM_UP_N:,} ints each) ...", file=sys.stderr)
    for name in names:
        warm = run_one(bench, watcher, name, WARM_UP_N, args.max_rss_mb, args.max_seconds)
        if warm.note:
            raise SystemExit(f"warm-up of {name}: {warm.note}")

    rows: list[Row] = []
    aborted: dict[str, int] = {}
    for n in sizes:
        for name in names:
            if name in aborted:
                rows.append(Row(name, n, None, None, f"skipped: aborted at {size_label(aborted[name])}"))
                continue
            row = run_one(bench, watcher, name, n, args.max_rss_mb, args.max_seconds)
            rows.append(row)
            if row.note.startswith("aborted"):
                aborted[name] = n
            peaks = row.peaks or Peaks()
            print(
                f"[{size_label(n):>6}] {name:18} {row.seconds or 0:8.2f} s  worker {mb(peaks.worker):>6} MB  "
                f"all {mb(peaks.workers):>6} MB  JVM {mb(peaks.jvm):>6} MB  {row.note}",
                file=sys.stderr,
                flush=True,
            )
    watcher.stop()

    print(
        f"Spark {pyspark.__version__} local[{MEMBERS}], {MEMBERS} members, Python {platform.python_version()}, "
        f"{datetime.date.today()}; jetspark from {here}; worker reuse {'on' if args.reuse_workers else 'off'}; "
        f"pyspark.daemon RSS {mb(watcher.daemon_rss)} MB (a fresh worker's floor); polled every "
        f"{args.interval * 1000:.0f} ms ({watcher.poll_seconds / max(watcher.polls, 1) * 1000:.2f} ms a poll); "
        f"caps {args.max_rss_mb:.0f} MB (all workers), {args.max_seconds:.0f} s"
    )
    print()
    print(table(rows))
    if any(row.note in ("WRONG RESULT",) or row.note.startswith("failed") for row in rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()

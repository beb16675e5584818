"""Benchmark on Spark `local[2]`: reading Parquet and JSON Lines into a windowed, keyed aggregation,
jetspark's file sources against the DataFrame API doing the same.

    python benchmarks/files_bench.py [--mb 100] [--repeat 3]

The data: click events `{"ts": ms, "user": "u<k>", "amount": float}` over one hour, 1,000 users,
written once as JSON Lines of about `--mb` MB and as a Parquet file of the same rows (row groups
of 128 k rows). The query, for each format: per user and one-minute tumbling window, the count and
the sum of `amount`.

- DataFrame API (the baseline, 1.00): `spark.read.parquet` / `spark.read.schema(...).json` +
  `groupBy("user", window)` + `agg(count, sum)`; the JVM does the work;
- jetspark: `read_parquet(columns=...)` / `read_jsonl` -> `aggregate_by_key` keyed by
  `(user, window start)`, splits (row groups, 32 MB byte ranges) dealt to the 2 members.

Results are checked equal (sums to 1e-6); times are wall clock, best of `--repeat` interleaved
runs, and the median of each round's ratio to the baseline.

Peak RSS (Linux), per contender over all its runs: this driver process, the largest single Python
worker (the children of `pyspark.daemon`; the DataFrame API runs none) and the Spark JVM. Before
each run the kernel's high-water marks of those processes are reset (`/proc/PID/clear_refs` = 5)
and a thread reads `VmHWM` (and `VmRSS`) every 50 ms, finding new workers once a second, so a
peak between two reads is not missed and one contender's peak does not carry over to the next
(a reused worker's mark is reset too; a reset mark starts at the process's RSS then). A worker
counts only if it used CPU during the run, so idle workers Spark keeps for reuse do not show
under the DataFrame API (0: no Python worker ran). The JVM's RSS rarely shrinks, so its peak is
mostly what earlier runs grew it to.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig
from jetspark.runners.spark import SparkRunner, get_session

MEMBERS = 2
WINDOW_MS = 60_000
START_MS = 1_700_000_000_000
SPLIT_BYTES = 32 << 20
Result = dict[tuple[str, int], tuple[int, float]]


def write_data(directory: Path, mb: int) -> tuple[Path, Path, int]:
    """JSON Lines of about `mb` MB and a Parquet file of the same rows; returns both and the rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(7)
    jsonl = directory / "events.jsonl"
    rows = 0
    written = 0
    chunk_rows = 100_000
    writer = None
    with jsonl.open("w") as out:
        while written < mb * 1_000_000:
            chunk = [
                {
                    "ts": START_MS + rng.randrange(3_600_000),
                    "user": f"u{rng.randrange(1000)}",
                    "amount": round(rng.random() * 100, 2),
                }
                for _ in range(chunk_rows)
            ]
            text = "".join(json.dumps(row) + "\n" for row in chunk)
            out.write(text)
            written += len(text)
            rows += len(chunk)
            table = pa.Table.from_pylist(chunk)
            if writer is None:
                writer = pq.ParquetWriter(directory / "events.parquet", table.schema)
            writer.write_table(table, row_group_size=128 * 1024)
    assert writer is not None
    writer.close()
    return jsonl, directory / "events.parquet", rows


def window_key(row: dict[str, Any]) -> tuple[str, int]:
    return (row["user"], row["ts"] - row["ts"] % WINDOW_MS)


def _count_and_sum() -> P.AggregateOperation:
    return P.AggregateOperation(
        create=lambda: [0, 0.0],
        accumulate=_accumulate,
        combine=_combine,
        finish=lambda acc: (acc[0], acc[1]),
    )


def _accumulate(acc: list[Any], row: dict[str, Any]) -> list[Any]:
    acc[0] += 1
    acc[1] += row["amount"]
    return acc


def _combine(acc: list[Any], other: list[Any]) -> list[Any]:
    acc[0] += other[0]
    acc[1] += other[1]
    return acc


def jetspark_query(runner: SparkRunner, source: Any, name: str) -> Result:
    dag = DAG()
    src = dag.new_vertex("source", source)
    total = P.aggregate_by_key(dag, "total", src, window_key, _count_and_sum())
    dag.edge(Edge.between(total, dag.new_vertex("sink", P.collect())).distributed())
    return dict(runner.run(dag, JobConfig(name=name, member_count=MEMBERS)).result("sink"))


def dataframe_query(spark: Any, frame: Any) -> Result:
    from pyspark.sql import functions as F

    window = (F.col("ts") - F.col("ts") % WINDOW_MS).alias("window")
    grouped = frame.groupBy("user", window).agg(F.count("*").alias("n"), F.sum("amount").alias("s"))
    return {(row["user"], row["window"]): (row["n"], row["s"]) for row in grouped.collect()}


def same(a: Result, b: Result) -> bool:
    return a.keys() == b.keys() and all(a[k][0] == b[k][0] and abs(a[k][1] - b[k][1]) < 1e-6 for k in a)


BASELINE = "DataFrame API"


# ---- peak RSS of the driver, the largest Python worker and the JVM ------------------------------


def _status_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of `pid` in KiB; zeros when it is gone."""
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
    except OSError:
        pass
    return rss, hwm


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    parents[int(name)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return parents


def _cpu_ticks(pid: int) -> int:
    """User + system CPU ticks of `pid` so far; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class PeakRss(threading.Thread):
    """Peaks (bytes) of this process, the JVM and the largest Python worker, per measured span."""

    def __init__(self) -> None:
        super().__init__(name="peak-rss", daemon=True)
        self.driver = os.getpid()
        self.jvm = 0
        self.workers: list[int] = []
        self.peaks = {"driver": 0, "worker": 0, "jvm": 0}
        #: CPU ticks of each worker when the span began: only workers that ran since count.
        self._ticks: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._discover()
        self.start()

    def _discover(self) -> None:
        parents = _parents()
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            children.setdefault(parent, []).append(pid)
        jvm = next((p for p in children.get(self.driver, []) if "java" in _cmdline(p)), 0)
        daemons = [p for p in children.get(jvm, []) if "pyspark.daemon" in _cmdline(p)]
        workers = [w for d in daemons for w in children.get(d, [])]
        with self._lock:
            self.jvm, self.workers = jvm, workers

    def reset(self) -> None:
        """Start a new span: zero the peaks and the kernel's high-water marks."""
        self._discover()
        with self._lock:
            for pid in (self.driver, self.jvm, *self.workers):
                try:
                    with open(f"/proc/{pid}/clear_refs", "w") as refs:
                        refs.write("5")
                except OSError:
                    pass
            self.peaks = dict.fromkeys(self.peaks, 0)
            self._ticks = {w: _cpu_ticks(w) for w in self.workers}

    def sample(self) -> dict[str, int]:
        with self._lock:
            driver = max(_status_kb(self.driver))
            jvm = max(_status_kb(self.jvm)) if self.jvm else 0
            ran = [w for w in self.workers if _cpu_ticks(w) > self._ticks.setdefault(w, 0)]
            worker = max((max(_status_kb(w)) for w in ran), default=0)
            for name, kib in (("driver", driver), ("worker", worker), ("jvm", jvm)):
                self.peaks[name] = max(self.peaks[name], kib * 1024)
            return dict(self.peaks)

    def run(self) -> None:
        last = time.monotonic()
        while not self._stopped.wait(0.05):
            if time.monotonic() - last >= 1.0:
                self._discover()
                last = time.monotonic()
            self.sample()


def race(
    repeat: int, contenders: list[tuple[str, Callable[[], Result]]], rss: PeakRss
) -> dict[str, tuple[float, float, dict[str, int]]]:
    peaks: dict[str, dict[str, int]] = {}
    best: dict[str, float] = {}
    ratios: dict[str, list[float]] = {}
    expected: Result | None = None
    for _ in range(repeat):
        this_round: dict[str, float] = {}
        for name, fn in contenders:
            rss.reset()
            start = time.perf_counter()
            result = fn()
            elapsed = time.perf_counter() - start
            seen = rss.sample()
            mine = peaks.setdefault(name, dict.fromkeys(seen, 0))
            for part, value in seen.items():
                mine[part] = max(mine[part], value)
            if expected is None:
                expected = result
            elif not same(result, expected):
                raise SystemExit(f"{name} computed a different result")
            best[name] = min(best.get(name, float("inf")), elapsed)
            this_round[name] = elapsed
        for name, elapsed in this_round.items():
            ratios.setdefault(name, []).append(elapsed / this_round[BASELINE])
    return {name: (best[name], statistics.median(ratios[name]), peaks[name]) for name in best}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=100, help="size of the JSON Lines file (MB)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = get_session(f"local[{MEMBERS}]", extra_conf={"spark.sql.shuffle.partitions": str(MEMBERS)})
    runner = SparkRunner(spark, member_count=MEMBERS)
    rss = PeakRss()
    schema = "ts long, user string, amount double"
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        jsonl, parquet, rows = write_data(Path(tmp), args.mb)
        print(
            f"wrote {rows:,} rows: {jsonl.stat().st_size / 1e6:.0f} MB of JSON Lines, "
            f"{parquet.stat().st_size / 1e6:.0f} MB of Parquet ({time.perf_counter() - started:.0f} s)"
        )
        columns = ["ts", "user", "amount"]
        tables = [
            (
                "Parquet",
                race(
                    args.repeat,
                    [
                        (BASELINE, lambda: dataframe_query(spark, spark.read.parquet(str(parquet)))),
                        (
                            "jetspark read_parquet",
                            lambda: jetspark_query(
                                runner, P.read_parquet(str(parquet), columns=columns), "parquet"
                            ),
                        ),
                    ],
                    rss,
                ),
            ),
            (
                "JSON Lines",
                race(
                    args.repeat,
                    [
                        (
                            BASELINE,
                            lambda: dataframe_query(spark, spark.read.schema(schema).json(str(jsonl))),
                        ),
                        (
                            "jetspark read_jsonl",
                            lambda: jetspark_query(
                                runner, P.read_jsonl(str(jsonl), split_bytes=SPLIT_BYTES), "jsonl"
                            ),
                        ),
                    ],
                    rss,
                ),
            ),
        ]
    print(f"Spark local[{MEMBERS}], {MEMBERS} members, best of {args.repeat} (wall clock), {rows:,} rows")
    for title, times in tables:
        print(f"\n{title}")
        print(
            f"{'contender':24} {'seconds':>8} {'x ' + BASELINE:>16} {'median x':>9}"
            f" {'driver MB':>10} {'worker MB':>10} {'JVM MB':>8}"
        )
        for name, (seconds, median, peak) in times.items():
            print(
                f"{name:24} {seconds:8.2f} {seconds / times[BASELINE][0]:16.2f} {median:9.2f}"
                f" {peak['driver'] / 2**20:10.0f} {peak['worker'] / 2**20:10.0f} {peak['jvm'] / 2**20:8.0f}"
            )


if __name__ == "__main__":
    main()

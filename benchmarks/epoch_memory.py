"""Memory over many epochs: the exactly-once streaming job runs for `--epochs` short epochs, and
every `--every` committed epochs the memory of the driver's Python process, of the largest Python
worker and of Spark's JVM is sampled, with the size of the job's checkpoint directory.

    python benchmarks/epoch_memory.py [--epochs 1000] [--epoch-millis 100] [--every 50]
        [--rate 2000] [--tracemalloc 0] [--conf KEY=VALUE ...]

The job is `examples/streaming_counts.py` (generator at `--rate` items/s -> a user's keyed running
count over 10 keys -> `transactional_files`), EXACTLY_ONCE on an embedded Spark `local[2]`. Per
sample: the current RSS and the peak (`VmHWM`, since the process started) of the driver, of the
largest Python worker (the `pyspark.daemon` processes under this session's JVM; other sessions'
workers on the machine are not counted) and of the JVM; the driver's count of live Python objects
(`gc.get_objects()`); the checkpoint directory's files and bytes, the sink's files, and the files
and bytes in Spark's scratch space (`spark.local.dir`, set to a directory of the run: shuffle
files). `--conf KEY=VALUE` adds Spark settings. At the end:
first against last sample (the first is taken after `--every` epochs, once the Python workers
and the JVM have warmed up) and the least-squares slope in MB per 100 epochs, over all samples and
over the second half. With `--tracemalloc N`
the driver traces its allocations and prints the N source lines whose memory grew most between the
first sample and the last.

Needs psutil (the `bench` extra); Linux (`/proc/<pid>/status`).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cloudpickle
import psutil

import examples.streaming_counts as job_module
from jetspark import JobConfig
from jetspark.core import ProcessingGuarantee

cloudpickle.register_pickle_by_value(job_module)

MB = 1e6


def peak_rss(pid: int) -> int:
    """The process's high-water mark of resident memory (`VmHWM`), bytes; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def processes(me: psutil.Process) -> tuple[list[psutil.Process], list[psutil.Process]]:
    """This session's JVMs and Python workers (the driver's descendants only)."""
    jvms, workers = [], []
    for child in me.children(recursive=True):
        try:
            if "java" in child.name():
                jvms.append(child)
            elif "pyspark.daemon" in " ".join(child.cmdline()):
                workers.append(child)
        except psutil.Error:
            continue
    return jvms, workers


def rss(process: psutil.Process) -> int:
    try:
        return int(process.memory_info().rss)
    except psutil.Error:
        return 0


def tree_size(path: str) -> tuple[int, int]:
    """Files and bytes under `path`."""
    files = size = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                size += os.path.getsize(os.path.join(root, name))
                files += 1
            except OSError:
                continue
    return files, size


def sample(me: psutil.Process, epochs: int, started: float, work: str) -> dict[str, Any]:
    jvms, workers = processes(me)
    largest = max(workers, key=rss, default=None)
    ck_files, ck_bytes = tree_size(f"{work}/ck")
    shuffle_files, shuffle_bytes = tree_size(f"{work}/spark-local")
    out_files, _ = tree_size(f"{work}/out")
    return {
        "epochs": epochs,
        "t": time.monotonic() - started,
        "driver": rss(me) / MB,
        "driver_peak": peak_rss(me.pid) / MB,
        "worker": 0.0 if largest is None else rss(largest) / MB,
        "worker_peak": max((peak_rss(w.pid) for w in workers), default=0) / MB,
        "workers": len(workers),
        "jvm": max((rss(j) for j in jvms), default=0) / MB,
        "jvm_peak": max((peak_rss(j.pid) for j in jvms), default=0) / MB,
        "objects": len(gc.get_objects()),
        "ck_files": ck_files,
        "ck_mb": ck_bytes / MB,
        "out_files": out_files,
        "shuffle_files": shuffle_files,
        "shuffle_mb": shuffle_bytes / MB,
        "load": os.getloadavg()[0],
    }


def slope(samples: list[dict[str, Any]], name: str) -> float:
    """Least-squares slope of `name` against committed epochs, per 100 epochs."""
    xs = [s["epochs"] for s in samples]
    ys = [s[name] for s in samples]
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    var = sum((x - mean_x) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return 100 * sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / var


def show(s: dict[str, Any]) -> str:
    return (
        f"epochs {s['epochs']:5d}  t {s['t']:6.0f} s  driver {s['driver']:5.0f} (peak {s['driver_peak']:5.0f}) MB  "
        f"largest worker {s['worker']:5.0f} (peak {s['worker_peak']:5.0f}) MB of {s['workers']}  "
        f"jvm {s['jvm']:5.0f} (peak {s['jvm_peak']:5.0f}) MB  objects {s['objects']:8,d}  "
        f"checkpoints {s['ck_files']:4d} files {s['ck_mb']:6.2f} MB  sink files {s['out_files']:5d}  "
        f"Spark local dirs {s['shuffle_files']:5d} files {s['shuffle_mb']:6.1f} MB  "
        f"load {s['load']:4.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--epoch-millis", type=int, default=100)
    parser.add_argument("--every", type=int, default=50, help="sample every this many committed epochs")
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--tracemalloc", type=int, default=0, help="print the top N growing lines")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="more Spark settings"
    )
    args = parser.parse_args()
    from jetspark.runners.spark import SparkRunner
    from jetspark.runners.spark.session import get_session

    work = tempfile.mkdtemp(prefix="jetspark-epoch-memory-")
    # Spark's own scratch space (shuffle files) in a directory of this run, to be measured
    conf = {"spark.local.dir": f"{work}/spark-local", **dict(c.split("=", 1) for c in args.conf)}
    spark = get_session(args.master, extra_conf=conf)
    config = JobConfig(
        name="memory",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=args.epoch_millis,
        checkpoint_root=f"{work}/ck",
    )
    if args.tracemalloc:
        tracemalloc.start(10)
    job = SparkRunner(spark).submit(job_module.streaming_dag(f"{work}/out", None, rate=args.rate), config)
    me = psutil.Process()
    started = time.monotonic()
    samples: list[dict[str, Any]] = []
    first_trace = None
    print(
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {args.master}, epochs of "
        f"{args.epoch_millis} ms, {args.rate:g} items/s, a sample every {args.every} epochs, "
        f"Spark settings {args.conf or 'of the embedded session'}",
        flush=True,
    )
    try:
        due = args.every
        while True:
            if job.status.value in ("failed", "completed", "cancelled"):  # JobStatus values
                raise SystemExit(f"the job ended early: {job.status.value}: {job.error}")
            epochs = job.epochs_committed
            if epochs >= due or (not samples and epochs >= 1):
                samples.append(sample(me, epochs, started, work))
                print(show(samples[-1]), flush=True)
                if args.tracemalloc and first_trace is None:
                    first_trace = tracemalloc.take_snapshot()
                if epochs >= args.epochs:
                    break
                due = (epochs // args.every + 1) * args.every
            time.sleep(0.02)
        aborted = job.epochs_aborted
        last_trace = tracemalloc.take_snapshot() if args.tracemalloc else None
    finally:
        job.cancel()
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    first, last = samples[1] if len(samples) > 1 else samples[0], samples[-1]
    print(f"epochs aborted: {aborted}; from epoch {first['epochs']} to {last['epochs']}:")
    steady = samples[1:]
    second_half = [s for s in steady if s["epochs"] >= last["epochs"] / 2]
    for name in ("driver", "worker", "jvm", "ck_mb", "shuffle_mb", "objects"):
        unit = "" if name == "objects" else " MB"
        print(
            f"  {name:10s} {first[name]:10.1f} -> {last[name]:10.1f}{unit}  "
            f"slope {slope(steady, name):+8.2f}{unit} per 100 epochs, "
            f"{slope(second_half, name):+8.2f} over the second half"
        )
    if first_trace is not None and last_trace is not None:
        print(f"driver allocations that grew most (tracemalloc, top {args.tracemalloc}):")
        for stat in last_trace.compare_to(first_trace, "traceback")[: args.tracemalloc]:
            print(f"  {stat.size_diff / 1e3:+9.1f} kB {stat.count_diff:+7d} blocks")
            for line in stat.traceback.format()[-6:]:
                print(f"      {line}")


if __name__ == "__main__":
    main()

"""Throughput of the exactly-once streaming job on Spark against the same job without a guarantee.

    python benchmarks/exactly_once.py [--items 3e6] [--epoch-millis 10000] [--master local[2]] [--repeat 2]

The job is `examples/streaming_counts.py`'s: generator -> a user's keyed running count
(`RunningCount`, an `AbstractProcessor` subclass) -> `transactional_files`. With NONE it runs as
one Spark job; with EXACTLY_ONCE in epochs of `--epoch-millis` (the default is JobConfig's), each
ending in a committed snapshot and the files sink's commit. Both runs write the same rows (checked).
Reported: items per second of each, and EXACTLY_ONCE : NONE (the issue's target is >= 0.9 at the
default epoch length). The best of `--repeat` runs counts for each, in the same Spark session.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cloudpickle

import examples.streaming_counts as job_module
from jetspark import JobConfig
from jetspark.core import ProcessingGuarantee
from jetspark.processors.transactional import read_lines

cloudpickle.register_pickle_by_value(job_module)


def run_once(
    spark: object, items: int, guarantee: ProcessingGuarantee, epoch_millis: int
) -> tuple[float, int, int]:
    from jetspark.runners.spark import SparkRunner

    work = tempfile.mkdtemp(prefix="jetspark-eo-bench-")
    try:
        out = f"{work}/out"
        config = JobConfig(
            name="eo-bench",
            processing_guarantee=guarantee,
            snapshot_interval_millis=epoch_millis,
            checkpoint_root=f"{work}/ck",
        )
        started = time.perf_counter()
        job = SparkRunner(spark).submit(job_module.streaming_dag(out, items), config)
        job.join()
        elapsed = time.perf_counter() - started
        rows = len(read_lines(out))
        epochs = getattr(job, "epochs_committed", 0)
        return elapsed, rows, epochs
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=float, default=3e6)
    parser.add_argument("--epoch-millis", type=int, default=JobConfig().snapshot_interval_millis)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    from jetspark.runners.spark.session import get_session

    spark = get_session(args.master)
    items = int(args.items)
    best: dict[str, tuple[float, int]] = {}
    for _ in range(args.repeat):
        for guarantee in (ProcessingGuarantee.NONE, ProcessingGuarantee.EXACTLY_ONCE):
            elapsed, rows, epochs = run_once(spark, items, guarantee, args.epoch_millis)
            assert rows == items, f"{guarantee.value}: {rows} rows for {items} items"
            name = guarantee.value
            if name not in best or elapsed < best[name][0]:
                best[name] = (elapsed, epochs)
            print(
                f"  {name:14s} {elapsed:7.2f} s  {items / elapsed:10,.0f} items/s  epochs committed: {epochs}"
            )
    none, exactly = best["none"][0], best["exactly_once"][0]
    print(f"\nitems: {items:,}  master: {args.master}  epoch: {args.epoch_millis} ms")
    print(f"NONE          {items / none:10,.0f} items/s")
    print(f"EXACTLY_ONCE  {items / exactly:10,.0f} items/s  ({best['exactly_once'][1]} epochs)")
    print(f"EXACTLY_ONCE : NONE = {none / exactly:.2f}")
    spark.stop()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()

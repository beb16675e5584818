"""Memory over many epochs: the exactly-once streaming job runs endless, and every 10 s the
resident memory of the driver's Python process, Spark's JVM and the largest Python worker is
printed with the number of committed epochs.

    python benchmarks/epoch_memory.py [--seconds 150] [--epoch-millis 500] [--rate 40000]

Needs psutil (the `bench` extra).
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
import psutil

import examples.streaming_counts as job_module
from jetspark import JobConfig
from jetspark.core import ProcessingGuarantee

cloudpickle.register_pickle_by_value(job_module)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--epoch-millis", type=int, default=500)
    parser.add_argument("--rate", type=float, default=40_000)
    args = parser.parse_args()
    from jetspark.runners.spark import SparkRunner
    from jetspark.runners.spark.session import get_session

    work = tempfile.mkdtemp(prefix="jetspark-epoch-memory-")
    spark = get_session("local[2]")
    config = JobConfig(
        name="memory",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=args.epoch_millis,
        checkpoint_root=f"{work}/ck",
    )
    job = SparkRunner(spark).submit(job_module.streaming_dag(f"{work}/out", None, rate=args.rate), config)
    me = psutil.Process()
    started = time.monotonic()
    try:
        while time.monotonic() - started < args.seconds:
            time.sleep(10)
            workers = [
                p.memory_info().rss
                for p in psutil.process_iter(["cmdline"])
                if "pyspark.daemon" in " ".join(p.info["cmdline"] or ())
            ]
            jvm = [p.memory_info().rss for p in me.children(recursive=True) if "java" in p.name()]
            print(
                f"t={time.monotonic() - started:4.0f}s epochs={job.epochs_committed:4d} "
                f"driver={me.memory_info().rss / 1e6:5.0f} MB jvm={max(jvm, default=0) / 1e6:5.0f} MB "
                f"largest worker={max(workers, default=0) / 1e6:5.0f} MB",
                flush=True,
            )
    finally:
        job.cancel()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

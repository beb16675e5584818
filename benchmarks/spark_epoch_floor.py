"""The floor under an epoch's fixed cost: a bare PySpark job of the same shape, doing nothing.

    python benchmarks/spark_epoch_floor.py [--stages 1 2 3] [--jobs 20] [--members 2] [--master local[2]] [--spark-conf KEY=VALUE ...]

A job in epochs runs each epoch as one Spark job of one stage per DAG stage, each stage a
`mapPartitionsWithIndex` over the shuffle (`partitionBy`) of the one before, with one task per
member (`runners/spark/runner.py`). This times such a job with no data and no jetspark at all, the
way an experienced PySpark user would write it (Python workers reused, the empty input RDD made
once, nothing cached), over `--jobs` runs after two warm-up runs, and prints the median and the
best seconds per job for each stage count. Whatever a quiet epoch costs beyond this is jetspark's
(restore, snapshot, relays, the driver's build and commit); this much is Spark's and PySpark's
(scheduling, task launch, the Python worker round trip, the shuffle), paid once per epoch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Iterator
from typing import Any

from spark_conf_option import add_spark_conf_option, spark_conf


def passing(index: int, rows: Iterator[Any]) -> Iterator[Any]:
    """A stage's work: pass the rows on, keyed by the member they go to."""
    for row in rows:
        yield (index, row)


def one_job(sc: Any, empty: Any, stages: int, members: int) -> float:
    started = time.perf_counter()
    rdd = empty.mapPartitionsWithIndex(passing)
    for _ in range(stages - 1):
        rdd = rdd.partitionBy(members, lambda key: key).mapPartitionsWithIndex(passing)
    rdd.collect()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stages", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    add_spark_conf_option(parser)
    args = parser.parse_args()

    from jetspark.runners.spark.session import get_session

    spark = get_session(args.master, extra_conf=spark_conf(args))
    sc = spark.sparkContext
    empty = sc.parallelize([], args.members)
    for stages in args.stages:
        for _ in range(2):
            one_job(sc, empty, stages, args.members)
        times = sorted(one_job(sc, empty, stages, args.members) for _ in range(args.jobs))
        print(
            f"{stages} stage(s), {args.members} tasks each: median {statistics.median(times) * 1000:6.0f} ms, "
            f"best {times[0] * 1000:6.0f} ms per job  load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    spark.stop()


if __name__ == "__main__":
    main()

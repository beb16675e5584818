"""Run by test_cluster.py in a subprocess: a DAG on `local-cluster[2,1,1024]` (two executor JVMs).

Prints one JSON line: the sink's items `[n, member, global index, pid]`, the executor count and
the member count. A separate process because a process holds one SparkContext, and the test
session's is `local[2]`.
"""

from __future__ import annotations

import json
import sys

import cloudpickle

import tests
from jetspark.core.config import JobConfig
from jetspark.runners.spark import SparkRunner, get_session
from tests.spark import dags
from tests.spark.processes import wait_for_executors

cloudpickle.register_pickle_by_value(tests)


def main() -> None:
    spark = get_session("local-cluster[2,1,1024]")
    sc = spark.sparkContext
    wait_for_executors(spark, 2)
    job = SparkRunner(spark).run(dags.partitioned(count=400), JobConfig(member_count=2), timeout=240)
    items = [[n, member, index, pid] for (_, n), member, index, pid in job.result("sink")]
    executors = len(sc.statusTracker().getExecutorInfos()) - 1
    print(json.dumps({"items": items, "executors": executors, "members": job.member_count}))
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())

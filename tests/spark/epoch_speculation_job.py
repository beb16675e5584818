"""Run by test_attempts.py in a subprocess: the exactly-once streaming job on a standalone cluster
with speculation on, where one task of one epoch is slow once, so Spark launches a speculative
copy of it on the other worker.

No timing decides whether Spark speculates: the slow task does not go on by itself after a few
seconds (which a loaded machine could make look normal) but waits until Spark kills it, which it
does once the speculative copy has finished first. After 120 s it goes on anyway, so that a Spark
that never speculates fails the test's assertions instead of hanging it.

Argument: JSON `{"master", "conf", "work"}`. Prints one JSON line: whether the files hold every
row once, the epochs committed and aborted, and the last abort's reason.
"""

from __future__ import annotations

import json
import os
import sys
import time

import cloudpickle

import examples.streaming_counts as streaming
import tests
from jetspark import JobConfig
from jetspark.core import ProcessingGuarantee
from jetspark.runners.spark import SparkRunner, get_session
from tests.spark.processes import epoch_report, wait_for_executors

cloudpickle.register_pickle_by_value(tests)
cloudpickle.register_pickle_by_value(streaming)
COUNT = 6000


def slow_once(marker: str, release: str) -> object:
    """Item 2501 (member 1's source), once: its task waits for Spark to kill it (or for `release`,
    or 120 s), so it runs far longer than the other task of its stage."""

    def step(seq: int) -> int:
        if seq == 2501 and not os.path.exists(marker):
            open(marker, "w").close()
            deadline = time.monotonic() + 120
            while not os.path.exists(release) and time.monotonic() < deadline:
                time.sleep(0.01)
        return seq

    return step


def main() -> None:
    spec = json.loads(sys.argv[1])
    spark = get_session(spec["master"], extra_conf=spec["conf"])
    wait_for_executors(spark, 2)
    work = spec["work"]
    out = f"{work}/out"
    config = JobConfig(
        name="speculated",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=500,
        checkpoint_root=f"{work}/ck",
        member_count=2,
    )
    release = f"{work}/release"
    dag = streaming.streaming_dag(out, COUNT, rate=2000, step=slow_once(f"{work}/slow-once", release))
    job = SparkRunner(spark, restart_backoff=0.2).submit(dag, config)
    try:
        job.join(300)
    finally:
        open(release, "w").close()  # nothing waits any more, whatever happened
    print(json.dumps({**epoch_report(job, out, COUNT), "slowed": os.path.exists(f"{work}/slow-once")}))
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())

"""Run by test_cluster.py in a subprocess: the exactly-once streaming job on
`local-cluster[2,1,1024]`, with one executor JVM killed (SIGKILL) in the middle of an epoch.

The source waits half-way at a gate until the kill: after two committed epochs, while an epoch's
tasks run (Spark's status tracker shows them active), so the kill lands inside an epoch however
slow the machine.

Prints one JSON line: whether the files hold every row once, the epochs committed and aborted,
and how many executor JVMs were killed.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time

import cloudpickle

import examples.streaming_counts as streaming
import tests
from jetspark import JobConfig
from jetspark.core import ProcessingGuarantee
from jetspark.runners.spark import SparkRunner, get_session
from tests.gates import Gate, gated_stream
from tests.spark.processes import epoch_report, wait_for_executors

cloudpickle.register_pickle_by_value(tests)
cloudpickle.register_pickle_by_value(streaming)
COUNT = 30_000


def executor_pids() -> list[int]:
    """The executor JVMs on this machine (the cluster's; the test session runs in local mode)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as file:
                    if b"CoarseGrainedExecutorBackend" in file.read():
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


def main() -> None:
    spark = get_session("local-cluster[2,1,1024]")
    wait_for_executors(spark, 2)
    work = tempfile.mkdtemp(prefix="jetspark-epoch-cluster-")
    out = f"{work}/out"
    config = JobConfig(
        name="cluster",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=500,
        checkpoint_root=f"{work}/ck",
        member_count=2,
    )
    gate = Gate(f"{work}/gate", hold_at=COUNT // 2)
    source = gated_stream(gate, count=COUNT)
    job = SparkRunner(spark, restart_backoff=0.2).submit(
        streaming.streaming_dag(out, COUNT, source=source), config
    )
    killed = []
    tracker = spark.sparkContext.statusTracker()

    def tasks_running() -> bool:
        stages = (tracker.getStageInfo(stage) for stage in tracker.getActiveStageIds())
        return any(stage is not None and stage.numActiveTasks > 0 for stage in stages)

    def kill_one_mid_epoch() -> None:
        try:
            while not (job.epochs_committed >= 2 and tasks_running()) and not job._finished.is_set():
                time.sleep(0.01)
            pids = executor_pids()
            if pids and not job._finished.is_set():
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
        finally:
            gate.open()

    killer = threading.Thread(target=kill_one_mid_epoch, daemon=True)
    killer.start()
    job.join(400)
    killer.join(5)
    print(json.dumps({**epoch_report(job, out, COUNT), "killed": len(killed)}))
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())

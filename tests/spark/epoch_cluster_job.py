"""Run by test_cluster.py in a subprocess: the exactly-once streaming job on
`local-cluster[2,1,1024]`, with one executor JVM killed (SIGKILL) in the middle of an epoch.

The kill lands inside an epoch however slow the machine, with no timing involved: the source
waits half-way at a gate until two epochs have committed; then the gate opens, and the first item
past it blocks its Spark task (inside the source's step function) until the kill, so that epoch
cannot end. The killed executor is the one running the blocked task (the JVM above the Python
worker that reports itself blocked), so the epoch certainly loses a task and is aborted. The
restarted epoch finds the kill done and does not block again.

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


def executor_above(pid: int) -> int | None:
    """The executor JVM that (through pyspark.daemon) started the Python worker `pid`."""
    while pid > 1:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                if b"CoarseGrainedExecutorBackend" in file.read():
                    return pid
            with open(f"/proc/{pid}/stat", encoding="ascii") as file:
                pid = int(file.read().rsplit(")", 1)[1].split()[1])  # the parent's pid
        except OSError:
            return None
    return None


class BlockOnce:
    """The source's step: the item `at` blocks its task, once, until `released` exists; before
    blocking it writes its worker's pid to `blocked`."""

    def __init__(self, at: int, blocked: str, released: str) -> None:
        self.at, self.blocked, self.released = at, blocked, released

    def __call__(self, seq: int) -> int:
        if seq == self.at and not os.path.exists(self.released):
            with open(f"{self.blocked}.tmp", "w", encoding="ascii") as file:
                file.write(str(os.getpid()))
            os.replace(f"{self.blocked}.tmp", self.blocked)
            while not os.path.exists(self.released):
                time.sleep(0.01)
        return seq


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
    blocked, released = f"{work}/blocked", f"{work}/released"
    source = gated_stream(gate, count=COUNT, fn=BlockOnce(COUNT // 2, blocked, released))
    job = SparkRunner(spark, restart_backoff=0.2).submit(
        streaming.streaming_dag(out, COUNT, source=source), config
    )
    killed = []

    def kill_one_mid_epoch() -> None:
        try:
            while job.epochs_committed < 2 and not job._finished.is_set():
                time.sleep(0.01)
            gate.open()  # the next epoch's source reaches COUNT // 2 and blocks there
            while not os.path.exists(blocked) and not job._finished.is_set():
                time.sleep(0.01)
            if job._finished.is_set():
                return
            with open(blocked, encoding="ascii") as file:
                executor = executor_above(int(file.read()))
            if executor is not None:
                os.kill(executor, signal.SIGKILL)
                killed.append(executor)
        finally:
            gate.open()
            open(released, "w").close()

    killer = threading.Thread(target=kill_one_mid_epoch, daemon=True)
    killer.start()
    job.join(400)
    killer.join(5)
    print(json.dumps({**epoch_report(job, out, COUNT), "killed": len(killed)}))
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())

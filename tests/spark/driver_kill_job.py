"""A driver for `test_driver_kills.py`: the exactly-once job of `examples/streaming_counts.py`
(generator -> keyed running count -> transactional files and PostgreSQL), run on an embedded
`local[3]` Spark in its own process, so that the test can SIGKILL the whole driver process tree.

`python driver_kill_job.py '<json spec>'`; the spec names `out`, `root`, `dsn`, `count` and
`holds`, a directory of hold files. While a hold file exists the driver or a task waits at its
point, so the test finds the job there by watching the checkpoint root and `pg_prepared_xacts`
(never by timing):

- `prepare`: a sink in a stage of its own (`Holder`) waits in `snapshot_commit_prepare` of
  epoch 0, after the PostgreSQL sink's task prepared and finished: the epoch cannot end, so no
  `LATEST` is written;
- `latest`: the driver waits after writing the manifest of a snapshot >= 1, before moving `LATEST`;
- `sink-commit`: the driver waits after moving `LATEST` to a snapshot >= 1, before it commits
  the sinks' transactions of it itself (`runners.sink_commits`);
- `exit`: the driver waits after the job completed, before the process exits;
- `process`: `Holder` waits in `process` (mid-epoch, in a Python worker whose pid it leaves in
  `process.reached`), so the test can kill that worker and `pyspark.daemon`.

It prints one JSON line: how the submit ended (`completed`, `already-completed`) and the counts.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import cloudpickle

import examples.streaming_counts
import tests
from examples.streaming_counts import streaming_dag
from jetspark import Edge, JobConfig
from jetspark.checkpoint import CheckpointStore, Manifest
from jetspark.core import AbstractProcessor, ProcessingGuarantee
from jetspark.core.inbox import Inbox

cloudpickle.register_pickle_by_value(tests)
cloudpickle.register_pickle_by_value(examples.streaming_counts)

NAME = "killed"


def held(holds: str, point: str) -> bool:
    return os.path.exists(os.path.join(holds, point))


def wait_while_held(holds: str, point: str) -> None:
    """Wait here while the hold file exists (the test kills the process meanwhile)."""
    Path(holds, f"{point}.reached").write_text(str(os.getpid()))
    while held(holds, point):
        time.sleep(0.01)


class Holder(AbstractProcessor):
    """A sink of its own stage that holds epoch 0 open in `snapshot_commit_prepare`."""

    def __init__(self, holds: str) -> None:
        super().__init__()
        self.holds = holds

    def is_cooperative(self) -> bool:
        return False  # it blocks while held

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if held(self.holds, "process"):
            wait_while_held(self.holds, "process")
        inbox.drain(lambda _item: None)

    def snapshot_commit_prepare(self) -> bool:
        if held(self.holds, "prepare"):
            wait_while_held(self.holds, "prepare")
        return True


def hold_latest(holds: str) -> None:
    """The driver waits after a manifest of snapshot >= 1, before `LATEST` moves to it."""
    point = CheckpointStore._point_latest_at

    def waiting(store: CheckpointStore, manifest: Manifest) -> None:
        if manifest.snapshot_id >= 1 and held(holds, "latest"):
            wait_while_held(holds, "latest")
        point(store, manifest)

    CheckpointStore._point_latest_at = waiting  # type: ignore[method-assign]


def hold_sink_commit(holds: str) -> None:
    """Hold the driver between LATEST and its own commit of the sinks' transactions."""
    from jetspark.runners.sink_commits import SinkCommits

    commit = SinkCommits.commit

    def waiting(self: SinkCommits, store: CheckpointStore, manifest: Manifest, partition_count: int) -> None:
        if manifest.snapshot_id >= 1 and held(holds, "sink-commit"):
            wait_while_held(holds, "sink-commit")
        commit(self, store, manifest, partition_count)

    SinkCommits.commit = waiting  # type: ignore[method-assign]


def main(spec: dict[str, Any]) -> dict[str, Any]:
    from jetspark.runners.identity import CompletedBefore
    from jetspark.runners.spark import SparkRunner, get_session

    holds = spec["holds"]
    hold_latest(holds)
    hold_sink_commit(holds)
    dag = streaming_dag(spec["out"], spec["count"], spec["rate"], dsn=spec["dsn"])
    counts = dag.get_vertex("counts")
    holder = dag.new_vertex("holder", functools.partial(Holder, holds))
    dag.edge(Edge.from_(counts, 2).to(holder).distributed())
    config = JobConfig(
        name=NAME,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=300,
        checkpoint_root=spec["root"],
        member_count=2,
    )
    # three slots: the two held tasks of `holder` leave one for the other stages
    spark = get_session("local[3]", extra_conf={"spark.default.parallelism": "2"})
    job = SparkRunner(spark, restart_backoff=0.05).run(dag, config, timeout=300)
    if isinstance(job, CompletedBefore):
        return {"ended": "already-completed", "completed_at": job.completed_at, "job_id": job.job_id}
    if held(holds, "exit"):
        wait_while_held(holds, "exit")
    return {
        "ended": "completed",
        "job_id": job.job_id,
        "committed": job.epochs_committed,
        "aborted": job.epochs_aborted,
        "last_abort": job.last_abort,
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
    os._exit(0)  # no Spark shutdown: the test reads the line, then this process is gone

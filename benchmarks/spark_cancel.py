"""How long a cancelled Spark job's processors keep running after `cancel()`.

    python benchmarks/spark_cancel.py [--kill-timeout 0s] [--run-seconds 4]

A non-cooperative source appends the time to a side file at every item (a side effect, as a sink
writing to an external system has); after `--run-seconds` the job is cancelled. Reported: when
`join()` raised `JobCancelledError`, and when the last side-file write happened, both relative to
`cancel()`. `--kill-timeout` sets `spark.python.task.killTimeout` (jetspark's embedded sessions use
0s; Spark's default is 2s: pass `--kill-timeout 2s` to compare). One process holds one session, so
compare settings in separate runs.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import cloudpickle

from jetspark import processors as P
from jetspark.core import DAG, AbstractProcessor, Edge, JobConfig
from jetspark.core.errors import JobCancelledError
from jetspark.runners.spark import SparkRunner, get_session

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Ticks(AbstractProcessor):
    """Endless; appends the time to `log` with every item it emits."""

    def __init__(self, log: str) -> None:
        self.log = log

    def is_cooperative(self) -> bool:
        return False

    def complete(self) -> bool:
        time.sleep(0.001)
        if self.try_emit(time.time()):
            with open(self.log, "a", encoding="utf-8") as file:
                file.write(f"{time.time()}\n")
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kill-timeout", default="0s")
    parser.add_argument("--run-seconds", type=float, default=4.0)
    args = parser.parse_args()
    spark = get_session("local[2]", extra_conf={"spark.python.task.killTimeout": args.kill_timeout})
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "ticks.log")
        dag = DAG()
        source = dag.new_vertex("source", lambda: Ticks(log))
        dag.edge(Edge.between(source, dag.new_vertex("sink", P.noop())))
        job = SparkRunner(spark).submit(dag, JobConfig(member_count=2))
        time.sleep(args.run_seconds)
        cancelled_at = time.time()
        job.cancel()
        with contextlib.suppress(JobCancelledError):
            job.join(60)
        joined = time.time() - cancelled_at
        time.sleep(8)  # longer than any kill timeout tried
        last = max(float(line) for line in Path(log).read_text().split())
    print(
        f"spark.python.task.killTimeout={args.kill_timeout}: join() raised {joined:.2f} s after cancel(); "
        f"the last side effect happened {last - cancelled_at:.2f} s after cancel()"
    )
    spark.stop()


if __name__ == "__main__":
    main()

"""Run by test_cluster.py in a subprocess: on `local-cluster[2,1,1024]`, an exactly-once job in
epochs whose keyed count feeds two sinks (a stage read by two later stages), with no fault.

A stage read by two later stages is read by two shuffles, which Spark runs as sibling stages at
the same time. Two executors could then both compute the same member's task of the stage (the
persisted copy exists only once one of them has finished it): the second computation was refused
by the stage's claim marker and the epoch aborted and ran again, in 3 of 4 fault-free runs of a
kill probe. Many short epochs give the race many chances.

Prints one JSON line: whether both sinks hold every row once, the epochs committed and aborted,
the last abort's cause.
"""

from __future__ import annotations

import json
import sys
import tempfile

import cloudpickle

import examples.streaming_counts as streaming
import tests
from jetspark import DAG, Edge, JobConfig
from jetspark.core import ProcessingGuarantee
from jetspark.processors import generator_stream, transactional_files
from jetspark.processors.transactional import read_lines
from jetspark.runners.spark import SparkRunner, get_session
from tests.spark.processes import wait_for_executors

cloudpickle.register_pickle_by_value(tests)
cloudpickle.register_pickle_by_value(streaming)
COUNT = 40_000


def fanout_dag(out_a: str, out_b: str) -> DAG:
    """generator -> counts (partitioned by key) -> two files sinks, each its own stage."""
    dag = DAG()
    source = dag.new_vertex("source", generator_stream(count=COUNT, items_per_second=4_000))
    counts = dag.new_vertex("counts", streaming.RunningCount)
    dag.edge(Edge.between(source, counts).partitioned(streaming.key_of).distributed())
    for ordinal, out in enumerate((out_a, out_b)):
        sink = dag.new_vertex(f"files_{ordinal}", transactional_files(out, streaming.format_row))
        dag.edge(Edge.from_(counts, ordinal).to(sink).distributed())
    return dag


def main() -> None:
    spark = get_session("local-cluster[2,1,1024]")
    wait_for_executors(spark, 2)
    work = tempfile.mkdtemp(prefix="jetspark-fanout-cluster-")
    outs = (f"{work}/a", f"{work}/b")
    config = JobConfig(
        name="fanout",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=250,
        checkpoint_root=f"{work}/ck",
        member_count=2,
    )
    job = SparkRunner(spark, restart_backoff=0.2).submit(fanout_dag(*outs), config)
    job.join(400)
    expected = streaming.expected_rows(COUNT)
    report = {
        "exact": [sorted(read_lines(out)) == expected for out in outs],
        "committed": job.epochs_committed,
        "aborted": job.epochs_aborted,
        "last_abort": job.last_abort,
    }
    print(json.dumps(report))
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())

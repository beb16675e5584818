"""A job file for the `--ui` tests: numbers held at a gate (its file is argv[1]) -> count -> sink.

Run as `jetspark run [--local] --ui --ui-port 0 tests/web/gated_job.py GATE [NAME [CHECKPOINTS]]`;
the test opens the page the command announces and presses its buttons. With a CHECKPOINTS
directory the job runs EXACTLY_ONCE with snapshots there, so that it can be suspended.
"""

from __future__ import annotations

import sys

from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.api import run
from jetspark.processors import aggregate_by_key, collect, counting
from tests.gates import Gate, gated_stream

dag = DAG()
numbers = dag.new_vertex("numbers", gated_stream(Gate.at(sys.argv[1]), count=1000))
counted = aggregate_by_key(dag, "count", numbers, lambda x: x % 10, counting())
dag.edge(Edge.between(counted, dag.new_vertex("sink", collect())))
config = JobConfig(name=sys.argv[2] if len(sys.argv) > 2 else "gated")
if len(sys.argv) > 3:
    config = JobConfig(
        name=config.name,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=100,
        checkpoint_root=sys.argv[3],
    )
job = run(dag, config)
print(f"{job.name}: {sorted(job.result('sink'))}")

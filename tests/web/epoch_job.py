"""A job file for the epoch page test: numbers -> held (a `gated_pass` on the gate file argv[1]) ->
files (`write_jsonl` into argv[3]), EXACTLY_ONCE with snapshots in argv[2], so on Spark it runs
in epochs of 0.1 s.

While the gate holds, the epoch cannot end (its snapshot barrier queues behind the held items),
so the test sees one epoch's counts rise as it moves the gate. Runs until cancelled.
"""

from __future__ import annotations

import sys

from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.api import run
from jetspark.processors import generator_stream, write_jsonl
from tests.gates import Gate, gated_pass

dag = DAG()
numbers = dag.new_vertex("numbers", generator_stream(), local_parallelism=1)
held = dag.new_vertex("held", gated_pass(Gate.at(sys.argv[1])), local_parallelism=1)
files = dag.new_vertex("files", write_jsonl(sys.argv[3]), local_parallelism=1)
dag.edge(Edge.between(numbers, held).with_queue_size(16))  # the source soon waits on it
dag.edge(Edge.between(held, files))
config = JobConfig(
    name="epoch-page",
    member_count=1,
    processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
    snapshot_interval_millis=100,
    checkpoint_root=sys.argv[2],
)
run(dag, config)

"""What startpoints cost at plan time: the fan-out with nothing written (what every job that keeps
snapshots in a checkpoint root pays per plan) and with N written startpoints, on a local directory.

    nice -n 19 .venv/bin/python benchmarks/startpoints_fanout.py [N]
"""

from __future__ import annotations

import sys
import tempfile
import time

from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark import processors as P
from jetspark.checkpoint.startpoints import SourcePartition, Specific, StartpointStore
from jetspark.planning.pipeline import build_plan
from jetspark.runners import startpoints


def main(count: int) -> None:
    root = tempfile.mkdtemp()
    config = JobConfig(
        name="bench", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, checkpoint_root=root
    )
    dag = DAG()
    lines = dag.new_vertex("lines", P.directory_stream(root))
    dag.edge(Edge.between(lines, dag.new_vertex("sink", P.collect())))
    plan = build_plan(dag, config, 4)
    started = time.perf_counter()
    for _ in range(20):
        startpoints.fan_out(config, "bench", plan)
    empty = (time.perf_counter() - started) / 20
    store = StartpointStore(root, "bench")
    started = time.perf_counter()
    for index in range(count):
        store.write(SourcePartition("lines", f"f{index}.log"), Specific(index))
    written = time.perf_counter() - started
    started = time.perf_counter()
    fanned = startpoints.fan_out(config, "bench", plan)
    first = time.perf_counter() - started
    started = time.perf_counter()
    startpoints.fan_out(config, "bench", plan)  # the next plan folds in the 4 fan-out files
    again = time.perf_counter() - started
    print(f"fan-out with nothing written: {empty * 1000:.2f} ms per plan")
    print(f"write {count} startpoints: {written * 1000:.0f} ms ({written / count * 1000:.2f} ms each)")
    print(
        f"fan-out of {count} to {len(fanned)} processors: {first * 1000:.0f} ms; next plan: {again * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)

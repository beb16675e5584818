"""What the driver spends building one epoch's RDDs (`SparkRunner._build_rdds`), the step of every
epoch before its Spark job is submitted.

    python benchmarks/build_bench.py [--repeat 30] [--stages 3]

The streaming-counts shape of `epoch_state_bench.py` (source -> count -> files, three Spark stages)
is submitted EXACTLY_ONCE; its first epoch's build is captured, and then the same build (new RDDs
for a new epoch spec, including the JVM RDD of the final stage, which `collect` would create) is
timed `--repeat` times on the same session. Run it against two source trees with `PYTHONPATH` to
compare them (the script's folder comes first on `sys.path`, then `PYTHONPATH`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

import cloudpickle
import epoch_state_bench as bench

from jetspark.core import ProcessingGuarantee


class Captured(Exception):
    pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    import jetspark
    from jetspark.runners.spark import SparkRunner
    from jetspark.runners.spark import runner as runner_module
    from jetspark.runners.spark.session import get_session

    cloudpickle.register_pickle_by_value(bench)
    spark = get_session("local[2]")
    captured: dict[str, Any] = {}
    original = runner_module.SparkRunner._build_rdds

    def capture(self: Any, *a: Any, **k: Any) -> Any:
        captured.update(runner=self, args=a, kwargs=k)
        raise Captured

    runner_module.SparkRunner._build_rdds = capture  # type: ignore[method-assign]
    work = tempfile.mkdtemp(prefix="jetspark-build-bench-")
    try:
        job = SparkRunner(spark, max_restarts=0).submit(
            bench.counts_dag(f"{work}/out", 1000, None, None),
            bench._config(ProcessingGuarantee.EXACTLY_ONCE, 1000, work),
        )
        with contextlib.suppress(Exception):  # the capture aborts it
            job.join(300)
        runner_module.SparkRunner._build_rdds = original  # type: ignore[method-assign]
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            final, _ = original(captured["runner"], *captured["args"], **captured["kwargs"])
            assert final._jrdd is not None  # what collect() creates first
            times.append(time.perf_counter() - started)
        print(
            f"jetspark from {Path(jetspark.__file__).parent}: build of one epoch's RDDs, "
            f"median {1000 * statistics.median(times):.1f} ms, best {1000 * min(times):.1f} ms "
            f"over {args.repeat}; load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()

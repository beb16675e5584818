"""`run(dag)`: one call that runs a job wherever the job file was started.

The same job file works with `python job.py` (embedded `local[*]` Spark), `jetspark run job.py`,
`jetspark run --local job.py` (in process, no Spark, no Java) and `spark-submit job.py` (the
session spark-submit configured). The runner comes from the environment:

- `JETSPARK_RUNNER=local`: the local runner (member count from the job config, else 1);
- otherwise (unset or `spark`): the Spark runner on the running SparkSession if there is one,
  else the one `spark-submit` configured, else an embedded session on `JETSPARK_MASTER`
  (default `local[*]`).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG

RUNNER_ENV = "JETSPARK_RUNNER"


_log = logging.getLogger("jetspark")


def default_runner() -> Any:
    """The runner `JETSPARK_RUNNER` asks for (see the module docstring)."""
    choice = os.environ.get(RUNNER_ENV, "").strip().lower()
    if choice == "local":
        from jetspark.runners.local import LocalRunner

        return LocalRunner()
    if choice not in ("", "spark"):
        raise ValueError(f"{RUNNER_ENV}={choice!r}: expected 'local' or 'spark'")
    from jetspark.runners.spark import SparkRunner

    return SparkRunner()


def run(dag: DAG, config: JobConfig | None = None, runner: Any = None, timeout: float | None = None) -> Any:
    """Run `dag` to the end on `runner` (default: `default_runner()`); return the finished job.

    The job's `result(vertex)` and `metrics()` are then complete; a failure is re-raised
    (`JobFailedError` naming the vertex and processor).
    """
    runner = runner if runner is not None else default_runner()
    config = config or JobConfig()
    job = runner.submit(dag, config)
    try:
        return job.join(timeout)
    except KeyboardInterrupt:  # Ctrl-C: a job with snapshots stops cleanly, resumable
        if config.snapshots_enabled and hasattr(job, "suspend"):
            _log.warning("job %r: interrupted; suspending it (submit it again to resume)", job.name)
            job.suspend()
            _log.warning("job %r: suspended", job.name)
        else:
            job.cancel()
        raise

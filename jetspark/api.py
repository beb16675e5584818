"""`run(dag)`: one call that runs a job wherever the job file was started.

The same job file works with `python job.py` (embedded `local[*]` Spark), `jetspark run job.py`,
`jetspark run --local job.py` (in process, no Spark, no Java) and `spark-submit job.py` (the
session spark-submit configured). The runner comes from the environment:

- `JETSPARK_RUNNER=local`: the local runner (member count from the job config, else 1);
- otherwise (unset or `spark`): the Spark runner on the running SparkSession if there is one,
  else the one `spark-submit` configured, else an embedded session on `JETSPARK_MASTER`
  (default `local[*]`).

The `jetspark` command sets two more variables that `run` reads: `JETSPARK_PROGRESS` (`auto`:
a progress display on standard error when it is a terminal; `always`: also when it is not, for
`jetspark submit`, whose job runs behind spark-submit's pipe; unset or `off`: none) and
`JETSPARK_UI` (`host:port`: serve the web UI of this driver's jobs there, `jetspark.web`).
`jetspark dag` runs a job file with `capturing_dag()`, in which `run` hands back the DAG instead
of running it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.errors import JetsparkError

RUNNER_ENV = "JETSPARK_RUNNER"
PROGRESS_ENV = "JETSPARK_PROGRESS"
UI_ENV = "JETSPARK_UI"  # the same name as jetspark.runners.spark.session.UI_ENV
#: Set (to 1) by `--ui-keep`: the web UI serves on after the job file ends, until Ctrl-C.
UI_KEEP_ENV = "JETSPARK_UI_KEEP"


class WebUIError(JetsparkError):
    """The web UI that `JETSPARK_UI` asks for cannot be served (its port is taken, say)."""


class DagCaptured(Exception):
    """Raised by `run` inside `capturing_dag()`: carries the DAG and config instead of running them."""

    def __init__(self, dag: DAG, config: JobConfig) -> None:
        super().__init__(f"captured the DAG {dag!r}")
        self.dag = dag
        self.config = config


_capturing = False


@contextlib.contextmanager
def capturing_dag() -> Iterator[None]:
    """Inside: `run(dag)` raises `DagCaptured(dag, config)` instead of running the job."""
    global _capturing
    _capturing = True
    try:
        yield
    finally:
        _capturing = False


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
    config = config or JobConfig()
    if _capturing:
        raise DagCaptured(dag, config)
    ui = os.environ.get(UI_ENV, "").strip()
    if ui:  # before submit: the UI sees jobs as they are created
        from jetspark.web import serve_address

        try:
            serve_address(ui)
        except (OSError, ValueError) as error:
            raise WebUIError(f"{error} (--ui-port picks another port; 0 any free one)") from error
    runner = runner if runner is not None else default_runner()
    job = runner.submit(dag, config)
    try:
        with _progress(job):
            return job.join(timeout)
    except KeyboardInterrupt:  # Ctrl-C: a job with snapshots stops cleanly, resumable
        if config.snapshots_enabled and hasattr(job, "suspend"):
            _log.warning("job %r: interrupted; suspending it (submit it again to resume)", job.name)
            job.suspend()
            raise KeyboardInterrupt(f"job {job.name!r} suspended: run it again to resume") from None
        job.cancel()
        raise KeyboardInterrupt(f"job {job.name!r} cancelled") from None


def _progress(job: Any) -> contextlib.AbstractContextManager[object]:
    """The terminal progress display `JETSPARK_PROGRESS` asks for, or nothing."""
    mode = os.environ.get(PROGRESS_ENV, "off").strip().lower()
    if mode in ("", "off", "0", "no"):
        return contextlib.nullcontext()
    if mode not in ("auto", "always"):
        raise ValueError(f"{PROGRESS_ENV}={mode!r}: expected 'auto', 'always' or 'off'")
    from jetspark.cli.progress import progress_display

    return progress_display(job, force_terminal=mode == "always")

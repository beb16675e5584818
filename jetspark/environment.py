"""What the `jetspark` command and `jetspark.api.run` agree on, declared once.

The command (`jetspark.cli.main`) sets environment variables and runs a job file; the job file's
`run(dag)` (`jetspark.api`), the Spark session (`runners.spark.session`) and the web UI read them.
Every name is declared here and imported from here, so that neither side imports the other:

- `JETSPARK_RUNNER`: `local` or `spark` (`run` picks the runner);
- `JETSPARK_MASTER`: the master of an embedded Spark session (default `local[*]`);
- `JETSPARK_PROGRESS`: `auto`, `always` or `off`, the terminal progress display;
- `JETSPARK_UI`: `host:port` the web UI serves on (and embedded sessions start Spark's UI);
- `JETSPARK_UI_KEEP`: `1` keeps the web UI serving after the job file ends, until Ctrl-C;
- `JETSPARK_START_OVER`: `1` turns on `JobConfig.start_over`;
- `JETSPARK_LOG_LEVEL`, `JETSPARK_SPARK_LOG_LEVEL`: jetspark's and Spark's log levels.

Also the two things `jetspark dag` and `jetspark run` catch from a job file: `DagCaptured`
(`run` inside `capturing_dag()` hands the DAG back instead of running it) and `WebUIError`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import attrs

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.errors import JetsparkError

RUNNER_ENV = "JETSPARK_RUNNER"
MASTER_ENV = "JETSPARK_MASTER"
PROGRESS_ENV = "JETSPARK_PROGRESS"
UI_ENV = "JETSPARK_UI"
#: Set (to 1) by `--ui-keep`: the web UI serves on after the job file ends, until Ctrl-C.
UI_KEEP_ENV = "JETSPARK_UI_KEEP"
#: Set (to 1) by `--start-over`: `run` and every runner's `submit` set `JobConfig.start_over`
#: (a completed job runs again).
START_OVER_ENV = "JETSPARK_START_OVER"
LOG_LEVEL_ENV = "JETSPARK_LOG_LEVEL"
#: Log level of sessions jetspark creates (embedded, or first created under spark-submit).
SPARK_LOG_LEVEL_ENV = "JETSPARK_SPARK_LOG_LEVEL"


class WebUIError(JetsparkError):
    """The web UI that `JETSPARK_UI` asks for cannot be served (its port is taken, say)."""


class DagCaptured(Exception):
    """Raised by `run` inside `capturing_dag()`: carries the DAG and config instead of running them."""

    def __init__(self, dag: DAG, config: JobConfig) -> None:
        super().__init__(f"captured the DAG {dag!r}")
        self.dag = dag
        self.config = config


_capturing = False
#: Jobs submitted to a runner in this process (`capture_if_asked` counts them).
_submitted = 0


@contextlib.contextmanager
def capturing_dag() -> Iterator[None]:
    """Inside: `run(dag)` raises `DagCaptured(dag, config)` instead of running the job."""
    global _capturing
    _capturing = True
    try:
        yield
    finally:
        _capturing = False


def capturing() -> bool:
    """Whether `run` is inside `capturing_dag()`."""
    return _capturing


def with_command_line(config: JobConfig) -> JobConfig:
    """`config` as the command line asks: `jetspark run --start-over` reaches a job file that
    submits to a runner itself (`SparkRunner().submit(dag, config)`), not only `run`'s."""
    if os.environ.get(START_OVER_ENV) == "1" and not config.start_over:
        return attrs.evolve(config, start_over=True)
    return config


def check_submit_arguments(runner: str, dag: object, config: object) -> None:
    """A runner's `submit` takes a DAG and, optionally, a JobConfig: anything else (a dict of
    settings, the two swapped) is refused in one line saying so, not as an attrs error later."""
    if not isinstance(dag, DAG) or not (config is None or isinstance(config, JobConfig)):
        raise TypeError(
            f"{runner}.submit(dag, config) takes a DAG and a JobConfig (or None), got "
            f"{type(dag).__name__} and {type(config).__name__}; settings go in JobConfig(...), "
            "e.g. JobConfig(member_count=2)"
        )


def capture_if_asked(dag: DAG, config: JobConfig | None) -> None:
    """Inside `capturing_dag()`: raise `DagCaptured` instead of running the job. Called by
    `run` and by every runner's `submit`, so that `jetspark dag` of a job file that submits to a
    runner itself (`SparkRunner().submit(dag, config)`) shows the DAG rather than running it."""
    global _submitted
    if _capturing:
        raise DagCaptured(dag, config or JobConfig())
    _submitted += 1


def jobs_submitted() -> int:
    """How many jobs this process submitted to a runner so far (`jetspark run` tells a job file
    that never submits one)."""
    return _submitted

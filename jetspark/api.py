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
`JETSPARK_UI` (`host:port`: serve the web UI of this driver's jobs there, `jetspark.web`);
`--start-over` sets `JETSPARK_START_OVER=1`, which turns on `JobConfig.start_over`.
`jetspark dag` runs a job file with `capturing_dag()`, in which `run` hands back the DAG instead
of running it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.ctrl_c import plain_ctrl_c
from jetspark.environment import (
    PROGRESS_ENV,
    RUNNER_ENV,
    START_OVER_ENV,
    UI_ENV,
    UI_KEEP_ENV,
    DagCaptured,
    WebUIError,
    capturing,
    capturing_dag,
    with_command_line,
)
from jetspark.log_level import apply_log_level
from jetspark.runners.job import JobHandle, JobStatus

__all__ = [  # the environment's names, as `jetspark.api` always offered them
    "PROGRESS_ENV",
    "RUNNER_ENV",
    "START_OVER_ENV",
    "UI_ENV",
    "UI_KEEP_ENV",
    "DagCaptured",
    "WebUIError",
    "capturing_dag",
    "default_runner",
    "run",
]

_log = logging.getLogger("jetspark")


def _completed_before(config: JobConfig) -> JobHandle | None:
    """The job completed in an earlier run (its record says so), read before any session starts;
    a job another driver runs now is refused then too."""
    if not config.snapshots_enabled or config.checkpoint_root is None or config.name is None:
        return None
    from jetspark.checkpoint import CheckpointStore
    from jetspark.runners.identity import completed_before, refuse_if_running_elsewhere

    store = CheckpointStore(config.checkpoint_root, config.name, tidy=False)
    refuse_if_running_elsewhere(store)
    return completed_before(store, config.start_over)


def _spark_chosen() -> bool:
    return os.environ.get(RUNNER_ENV, "").strip().lower() in ("", "spark")


def default_runner() -> Any:
    """The runner `JETSPARK_RUNNER` asks for (see the module docstring). With a progress display
    asked for, a Spark runner's session is started here, under a line that says so."""
    choice = os.environ.get(RUNNER_ENV, "").strip().lower()
    if choice == "local":
        from jetspark.runners.local import LocalRunner

        return LocalRunner()
    if choice not in ("", "spark"):
        raise ValueError(f"{RUNNER_ENV}={choice!r}: expected 'local' or 'spark'")
    from jetspark.runners.spark import SparkRunner
    from jetspark.runners.spark.session import MASTER_ENV, session_running, under_spark_submit

    runner = SparkRunner()
    mode = _progress_mode()
    if mode is not None and not session_running():  # tens of seconds: say what is happening
        from jetspark.cli.progress import spark_start_display

        master = "spark-submit" if under_spark_submit() else os.environ.get(MASTER_ENV) or "local[*]"
        with spark_start_display(master, force_terminal=mode == "always"):
            runner.spark  # noqa: B018 - starts the session
    return runner


def run(
    dag: DAG, config: JobConfig | None = None, runner: Any = None, timeout: float | None = None
) -> JobHandle:
    """Run `dag` to the end on `runner` (default: `default_runner()`); return the finished job.

    The job's `result(vertex)` and `metrics()` are then complete; a failure is re-raised
    (`JobFailedError` naming the vertex and processor). A job suspended from the web UI that
    `JETSPARK_UI` serves is not over: `run` says so and waits until it is resumed (and then for its
    end) or cancelled there.
    """
    config = with_command_line(config or JobConfig())
    if capturing():
        raise DagCaptured(dag, config)
    apply_log_level()  # `jetspark run/submit --log-level`
    ui = os.environ.get(UI_ENV, "").strip()
    server = None
    if ui:  # before submit: the UI sees jobs as they are created
        from jetspark.web import serve_address

        try:
            server = serve_address(ui)
        except (OSError, ValueError) as error:
            raise WebUIError(f"{error} (--ui-port picks another port; 0 any free one)") from error
    if runner is None and _spark_chosen():
        # what needs no Spark is checked before default_runner starts the session (10-90 s)
        from jetspark.runners.preflight import check_before_spark

        dag.validate()
        check_before_spark(dag, config)
        done = _completed_before(config)
        if done is not None:  # nothing to run: no session to start
            return done
    runner = runner if runner is not None else default_runner()
    job: JobHandle = runner.submit(dag, config)
    with plain_ctrl_c():  # PySpark's own handler would abort the epoch a suspend lets commit
        return _wait(job, config, server, timeout)


def _wait(job: JobHandle, config: JobConfig, server: Any, timeout: float | None) -> JobHandle:
    """Wait for `job`; on Ctrl-C suspend it (snapshots on) or cancel it, and say which."""
    try:
        with _progress(job):
            if server is None:
                job.join(timeout)  # through a suspension, as Jet's join
            else:  # a suspension from the UI is reported, and waited out, below
                job.join(timeout, until_suspended=True)
            while server is not None and job.status is JobStatus.SUSPENDED:  # suspended from the UI
                from jetspark.web.server import wait_while_suspended

                wait_while_suspended(job, server)  # until resumed or cancelled there
                job.join(timeout, until_suspended=True)
            return job
    except KeyboardInterrupt:  # Ctrl-C: a job with snapshots stops cleanly, resumable
        if job.status is JobStatus.SUSPENDED:  # already: it stays so
            raise
        if config.snapshots_enabled and job.capabilities().can_suspend:
            job.suspend()  # the caller says so, in one line (jetspark run: `jetspark: interrupted; ...`)
            if config.checkpoint_root is not None:
                raise KeyboardInterrupt(f"job {job.name!r} suspended: run it again to resume") from None
            raise KeyboardInterrupt(
                f"job {job.name!r} suspended: its snapshot is kept in this process only (no checkpoint_root), "
                "so running it again starts from the beginning"
            ) from None
        job.cancel()
        raise KeyboardInterrupt(f"job {job.name!r} cancelled") from None


def _progress_mode() -> str | None:
    """`auto` or `always` as `JETSPARK_PROGRESS` asks for a progress display, else None."""
    mode = os.environ.get(PROGRESS_ENV, "off").strip().lower()
    if mode in ("", "off", "0", "no"):
        return None
    if mode not in ("auto", "always"):
        raise ValueError(f"{PROGRESS_ENV}={mode!r}: expected 'auto', 'always' or 'off'")
    return mode


def _progress(job: JobHandle) -> contextlib.AbstractContextManager[object]:
    """The terminal progress display `JETSPARK_PROGRESS` asks for, or nothing."""
    mode = _progress_mode()
    if mode is None:
        return contextlib.nullcontext()
    from jetspark.cli.progress import progress_display

    return progress_display(job, force_terminal=mode == "always")

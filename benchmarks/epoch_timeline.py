"""An epoch's timeline on Spark: when each task of each stage started, restored, ran, saved and
ended, and what the driver did before and after the Spark job, from timers wrapped around
jetspark's own methods (the benchmark patches them; jetspark itself is unchanged).

`enable()` (before the Spark session starts) puts a `sitecustomize.py` on the Python workers'
`PYTHONPATH`, so that every `pyspark.daemon` (and each worker it forks) wraps the epoch task's
methods from its start; each task appends one JSON line to the file named by `JETSPARK_TIMELINE`.
`watch(job)` wraps the driver's epoch loop of one job. `breakdown(path, job_events, first, last)`
sums both into the seconds per epoch of each step, in the order they happen:

- driver, before the Spark job: read `LATEST` and the manifest, make the epoch's spec; then take
  the epoch's RDDs (built while the epoch before ran, `runners/spark/prebuild.py`: what is left
  is the wait for that build, or the whole build for the first epoch);
- Spark: from the job's submission to the first task of the first stage (scheduling, the task's
  launch in a Python worker, unpickling the command and the task spec);
- per stage: its tasks' steps (the slowest member's): state cache lookup, reading the share
  (`restore_data`), the engine's setup, applying the entries (`restore_from_snapshot_entry`), the
  span, the processors' save (offer + pickle), the file write (encode, SHA-256, write + fsync),
  the transactional sinks' prepare/commit, closing or keeping the processors; then the gap to the
  next stage's first task (Spark: the stage's end, the shuffle, the next stage's launch);
- Spark: from the last task's end to `collect` returning on the driver;
- driver: reading the tasks' reports, the commit (manifest, `LATEST`, retention), and the rest of
  the loop until the next epoch starts.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV = "JETSPARK_TIMELINE"

_SITECUSTOMIZE = """\
import os, sys
if os.environ.get({env!r}):
    sys.path.insert(0, {here!r})
    try:
        import epoch_timeline
        epoch_timeline.install_worker(os.environ[{env!r}])
    except Exception as error:  # never break the worker
        print("epoch_timeline: not installed:", error, file=sys.stderr)
"""


def enable(path: str) -> None:
    """Make Python processes started from now on (the Spark JVM's workers) record into `path`."""
    hooks = tempfile.mkdtemp(prefix="jetspark-timeline-")
    here = str(Path(__file__).resolve().parent)
    Path(hooks, "sitecustomize.py").write_text(_SITECUSTOMIZE.format(env=ENV, here=here))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (hooks, os.environ.get("PYTHONPATH")) if p)
    os.environ[ENV] = path


# ---- in the Python workers ---------------------------------------------------------------------


class _PerThread(threading.local):
    """The running task's figures: one per thread, since a worker that holds a member's
    processors may run a relayed task (`handoff`) on a thread beside its own task."""

    def __init__(self) -> None:
        self.task: dict[str, Any] = {}


_local = _PerThread()
_lock = threading.Lock()


def _add(name: str, seconds: float) -> None:
    task = _local.task
    if task:
        task[name] = task.get(name, 0.0) + seconds


def install_worker(path: str) -> None:
    """Wrap the epoch task's and the tasklets' methods in this process (see the module)."""
    from jetspark.engine import tasklet
    from jetspark.runners.spark import epoch_task

    task_class = epoch_task.EpochTask

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.time()
            try:
                return fn(*args, **kwargs)
            finally:
                _add(name, time.time() - started)

        return wrapper

    original_init = task_class.__init__
    original_refusal = task_class.refusal
    original_tick = task_class.on_tick
    original_report = task_class.report
    original_finish = task_class.finish_keeping

    def init(self: Any, spec: Any, *args: Any, **kwargs: Any) -> None:
        task = _local.task
        task.clear()
        task.update(start=time.time(), epoch=spec.epoch, commit_only=spec.commit_only, pid=os.getpid())
        original_init(self, spec, *args, **kwargs)
        task.update(member=self.member, job=self.plan.job_id, relayed=self.relayed)

    def refusal(self: Any, stage: int, carrier: int) -> Any:
        _local.task["stage"] = stage
        return timed("claim", original_refusal)(self, stage, carrier)

    def on_tick(self: Any) -> None:
        task = _local.task
        if "loop" not in task:
            task["loop"] = time.time()
        original_tick(self)
        if self._started and "due" not in task:
            task["due"] = time.time()

    def report(self: Any, carrier: int, stage: int) -> Any:
        _local.task["loop_end"] = time.time()
        return original_report(self, carrier, stage)

    def finish_keeping(self: Any, tasklets: Any, success: bool, *args: Any, **kwargs: Any) -> None:
        task = _local.task
        task["close"] = time.time()
        original_finish(self, tasklets, success, *args, **kwargs)
        task.update(end=time.time(), kept=len(self.kept), keeping=len(self.keeping))
        line = json.dumps(task)
        task.clear()
        with _lock, open(path, "a") as out:
            out.write(line + "\n")

    task_class.__init__ = init  # type: ignore[method-assign]
    task_class.refusal = refusal  # type: ignore[method-assign]
    task_class.on_tick = on_tick  # type: ignore[method-assign]
    task_class.report = report  # type: ignore[method-assign]
    task_class.finish_keeping = finish_keeping  # type: ignore[method-assign]
    for name in ("take_kept", "restore_data", "_write", "snapshot_context"):
        setattr(task_class, name, timed(name, getattr(task_class, name)))
    handlers = tasklet._HANDLERS
    state = tasklet.State
    for key, name in (
        (state.RESTORE, "apply"),
        (state.FINISH_RESTORE, "apply"),
        (state.SAVE_SNAPSHOT__PROCESS, "save"),
        (state.SAVE_SNAPSHOT__COMPLETE, "save"),
        (state.COMMIT_PREPARE__PROCESS, "prepare"),
        (state.COMMIT_PREPARE__COMPLETE, "prepare"),
        (state.COMMIT_FINISH__PROCESS, "commit_finish"),
        (state.COMMIT_FINISH__COMPLETE, "commit_finish"),
        (state.COMMIT_FINISH__FINAL, "commit_finish"),
    ):
        handlers[key] = timed(name, handlers[key])


# ---- on the driver -----------------------------------------------------------------------------


def watch(job: Any) -> list[dict[str, Any]]:
    """Wrap `job`'s epoch loop (an `EpochJob`); returns the list its epochs' events go to."""
    events: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    execute, run_epoch, take, commit = job.execute, job._run_epoch, job._rdds.take, job._commit

    def timed_execute() -> Any:
        current.clear()
        current["start"] = time.time()
        try:
            return execute()
        finally:
            current.update(end=time.time(), epoch=job._epoch)
            events.append(dict(current))

    def stamped(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            current[f"{name}_start"] = time.time()
            try:
                return fn(*args)
            finally:
                current[f"{name}_end"] = time.time()

        return wrapper

    job.execute = timed_execute
    job._run_epoch = stamped("job", run_epoch)
    job._rdds.take = stamped("build", take)  # the RDDs, built while the epoch before ran
    job._commit = stamped("commit", commit)
    return events


def _read_tasks(path: str, job_id: str) -> dict[int, list[dict[str, Any]]]:
    tasks: dict[int, list[dict[str, Any]]] = defaultdict(list)
    with open(path) as lines:
        for line in lines:
            task = json.loads(line)
            if task.get("job") == job_id and not task.get("commit_only") and "stage" in task:
                tasks[task["epoch"]].append(task)
    return tasks


def breakdown(
    path: str, job_id: str, driver: list[dict[str, Any]], epochs: set[int]
) -> list[tuple[str, float]]:
    """(step, mean seconds per epoch) of job `job_id` over `epochs` (see the module docstring)."""
    tasks = _read_tasks(path, job_id)
    rows: dict[str, list[float]] = defaultdict(list)
    order: list[str] = []

    def add(name: str, seconds: float) -> None:
        if name not in order:
            order.append(name)
        rows[name].append(seconds)

    by_epoch = {e["epoch"]: e for e in driver if "commit_end" in e}
    starts = sorted(e["start"] for e in driver)
    for epoch in sorted(epochs):
        d = by_epoch.get(epoch)
        mine = tasks.get(epoch, [])
        if d is None or not mine or "build_start" not in d:
            continue
        add("driver: LATEST, manifest, spec", d["build_start"] - d["start"])
        add("driver: take the epoch's RDDs (built ahead)", d["build_end"] - d["build_start"])
        stages = sorted({t["stage"] for t in mine})
        previous = d["build_end"]
        for stage in stages:
            group = [t for t in mine if t["stage"] == stage]
            first = min(t["start"] for t in group)
            gap = (
                "Spark: submit the job, launch stage"
                if stage == stages[0]
                else "Spark: stage boundary, launch stage"
            )
            add(f"{gap} {stage}'s tasks", first - previous)
            slowest = max(group, key=lambda t: t["end"] - t["start"])
            for step, seconds in _task_steps(slowest):
                add(f"stage {stage}: {step}", seconds)
            previous = max(t["end"] for t in group)
        add("Spark: last task's end to collect() returning", d["job_end"] - previous)
        add("driver: read reports, ledger", d["commit_start"] - d["job_end"])
        add("driver: commit (manifest, LATEST, retention)", d["commit_end"] - d["commit_start"])
        later = [s for s in starts if s > d["start"]]
        if later:
            add("driver: until the next epoch starts", later[0] - d["commit_end"])
    return [(name, sum(rows[name]) / len(rows[name])) for name in order]


def _task_steps(t: dict[str, Any]) -> list[tuple[str, float]]:
    """A task's steps, in order; the timed pieces inside the loop are taken out of its run."""
    loop = t.get("loop", t["start"])
    loop_end = t.get("loop_end", t["close"])
    before_loop = t.get("claim", 0.0) + t.get("take_kept", 0.0) + t.get("restore_data", 0.0)
    inside = t.get("apply", 0.0) + t.get("save", 0.0) + t.get("_write", 0.0)
    inside += t.get("prepare", 0.0) + t.get("commit_finish", 0.0)
    return [
        ("start, claim marker", t.get("claim", 0.0)),
        ("state cache lookup", t.get("take_kept", 0.0)),
        ("read the share (restore_data)", t.get("restore_data", 0.0)),
        ("engine setup (unpickle + route the entries, make processors)", loop - t["start"] - before_loop),
        ("apply the entries (restore_from_snapshot_entry)", t.get("apply", 0.0)),
        ("run: items, waiting for the span or for the upstream's end", loop_end - loop - inside),
        ("processors save (offer + pickle)", t.get("save", 0.0)),
        ("write the file (encode, SHA-256, write + fsync)", t.get("_write", 0.0)),
        ("sinks prepare / commit", t.get("prepare", 0.0) + t.get("commit_finish", 0.0)),
        ("report, close or keep processors", t["end"] - loop_end),
    ]

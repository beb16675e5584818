"""The terminal progress display of `jetspark run` and `jetspark submit`, drawn with rich.

While a job runs, a table on standard error shows per vertex the items received and emitted and
their rate, read from the job handle's `metrics()` (live on the local runner; on Spark the
figures of a batch job are the counts its tasks send while they run, about every second, and the
exact ones when it ends; a job in epochs shows each committed epoch's), and on Spark the
progress of each Spark stage of the job (`SparkJob.spark_stages()`, from Spark's status tracker).
The display stays quiet when standard error is not a terminal, unless forced (`jetspark submit`
forces it when its own standard error is a terminal, as spark-submit pipes the job's output).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from rich.console import Console, Group
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

#: Seconds between two redraws.
REFRESH = 0.5


class JobProgress:
    """The figures of one job at each reading, and the table that shows them."""

    def __init__(self, job: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.job = job
        self._clock = clock
        self._started = clock()
        self._previous: tuple[float, dict[str, dict[str, int]]] | None = None
        self._rates: dict[str, float] = {}

    def read(self) -> dict[str, dict[str, int]]:
        """The job's metrics now; updates the per-vertex rates (items received per second)."""
        now = self._clock()
        metrics: dict[str, dict[str, int]] = self.job.metrics() or _live(self.job)
        if self._previous is not None and now > self._previous[0]:
            then, before = self._previous
            for vertex, figures in metrics.items():
                done = figures.get("received", 0) or figures.get("emitted", 0)
                was = before.get(vertex, {})
                was_done = was.get("received", 0) or was.get("emitted", 0)
                self._rates[vertex] = max(done - was_done, 0) / (now - then)
        self._previous = (now, metrics)
        return metrics

    def table(self) -> Group:
        """Job line, per-vertex table and, on Spark, the stage bars."""
        metrics = self.read()
        elapsed = self._clock() - self._started
        status = getattr(self.job.status, "value", str(self.job.status))
        title = Text.assemble(
            ("jetspark ", "bold"), (str(self.job.name), "bold cyan"), f"  {status}  {elapsed:.1f} s"
        )
        vertices = Table(box=None, pad_edge=False, show_edge=False)
        for header in ("vertex", "received", "emitted", "items/s"):
            vertices.add_column(header, justify="left" if header == "vertex" else "right")
        for name in _vertex_names(self.job):
            figures = metrics.get(name)
            if figures is None:
                vertices.add_row(Text(name), "…", "…", "")
                continue
            rate = self._rates.get(name)
            vertices.add_row(
                Text(name),  # never read as rich markup: names may hold brackets
                f"{figures.get('received', 0):,}",
                f"{figures.get('emitted', 0):,}",
                f"{rate:,.0f}" if rate is not None else "",
            )
        parts: list[Any] = [title, vertices]
        stages = _spark_stages(self.job)
        if stages:
            bars = Table(box=None, pad_edge=False, show_edge=False, show_header=False)
            bars.add_column("stage")
            bars.add_column("bar", width=24)
            bars.add_column("tasks", justify="right")
            for stage in stages:
                total = max(stage["tasks"], 1)
                bars.add_row(
                    Text(f"Spark stage {stage['stage_id']}: {_short(stage['name'], self.job.name)}"),
                    ProgressBar(total=total, completed=stage["completed"], width=24),
                    f"{stage['completed']}/{stage['tasks']} tasks",
                )
            parts.append(bars)
            if not metrics:
                parts.append(Text("per-vertex counts arrive as the tasks report them", style="dim"))
        return Group(*parts)


def _live(job: Any) -> dict[str, dict[str, int]]:
    """A Spark job's counts as its running tasks report them (`SparkJob.live_metrics`), if any."""
    live = getattr(job, "live_metrics", None)
    found: dict[str, dict[str, int]] = live() if live is not None else {}
    return found


def _short(stage_name: str, job_name: str) -> str:
    """A Spark stage's name without the `jetspark <job>: ` the title already says."""
    prefix = f"jetspark {job_name}: "
    return stage_name[len(prefix) :] if stage_name.startswith(prefix) else stage_name


def _vertex_names(job: Any) -> list[str]:
    dag = getattr(job, "dag", None)
    if dag is None:
        return sorted(job.metrics())
    return [vertex.name for vertex in dag]


def _spark_stages(job: Any) -> list[dict[str, Any]]:
    stages = getattr(job, "spark_stages", None)
    if stages is None:
        return []
    try:
        found: list[dict[str, Any]] = stages()
    except Exception:  # the session is going away: no stage figures, no failure
        return []
    return found


@contextlib.contextmanager
def progress_display(
    job: Any, force_terminal: bool = False, file: IO[str] | None = None, refresh: float = REFRESH
) -> Iterator[JobProgress | None]:
    """Show the job's progress while the block runs (on `file`, default standard error), and its
    final figures after; nothing at all when the output is not a terminal and not forced."""
    console = Console(file=file or sys.stderr, force_terminal=True if force_terminal else None)
    if not console.is_terminal:
        yield None
        return
    from rich.live import Live

    view = JobProgress(job)
    stop = threading.Event()
    with Live(view.table(), console=console, auto_refresh=False, transient=False) as live:

        def redraw() -> None:
            while not stop.wait(refresh):
                live.update(view.table(), refresh=True)

        thread = threading.Thread(target=redraw, name="jetspark progress", daemon=True)
        thread.start()
        try:
            yield view
        finally:
            stop.set()
            thread.join()
            live.update(view.table(), refresh=True)

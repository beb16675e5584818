"""The terminal progress display of `jetspark run` and `jetspark submit`, drawn with rich.

While a job runs, a table on standard error shows per vertex the items received and emitted,
their input and output rates and the share of time the vertex was back-pressured, read from the
job handle's `metrics()` (live on the local runner; on Spark the figures of a batch job are the
counts its tasks send while they run, about every second, and the exact ones when it ends; a job
in epochs shows its committed epochs' counts plus the running epoch's as its tasks last reported
them, `EpochJob.epoch_stats`), and on Spark the progress of each Spark stage of the job
(`SparkJob.spark_stages()`, from Spark's status tracker). A job in epochs also shows the running
epoch, how long it has run, the last committed one's duration, items and snapshot size. A source that knows its size (a bounded `from_iterable` or `generator_stream`) gets a
line with the share of it emitted and, at its current output rate, the time left. When nothing moves (no count, no epoch, no Spark task) for `STALL` seconds a line says
so; once the job has ended the rates are its averages. Before that, `spark_start_display` says
that the Spark session is starting (tens of seconds of a JVM starting up, otherwise silent).
The display stays quiet when standard error is not a terminal, unless forced (`jetspark submit`
forces it when its own standard error is a terminal, as spark-submit pipes the job's output).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

from rich.console import Console, Group
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from jetspark.runners.job import JobHandle

#: Seconds between two redraws.
REFRESH = 0.5
#: Seconds without any change in the job's figures after which the display says so.
STALL = 30.0
#: Statuses after which the figures no longer change.
_ENDED = ("completed", "failed", "cancelled", "suspended")


class JobProgress:
    """The figures of one job at each reading, and the table that shows them."""

    def __init__(
        self, job: JobHandle, clock: Callable[[], float] = time.monotonic, stall: float = STALL
    ) -> None:
        self.job = job
        self._clock = clock
        self._started = clock()
        self._stall = stall
        self._previous: tuple[float, dict[str, dict[str, int]]] | None = None
        #: vertex -> (items received per second, items emitted per second, share back-pressured)
        self._rates: dict[str, tuple[float, float, float]] = {}
        #: What was seen last (counts, epochs, Spark tasks) and since when it has not changed.
        self._seen: tuple[Any, float] | None = None

    def read(self) -> dict[str, dict[str, int]]:
        """The job's metrics now; updates the per-vertex input and output rates: since the last
        reading while the job runs, its averages over the whole run once it has ended."""
        now = self._clock()
        metrics = _counts(self.job)
        if _status(self.job) in _ENDED and now > self._started:
            for vertex, figures in metrics.items():
                self._rates[vertex] = _rates(self.job, vertex, figures, {}, now - self._started)
        elif self._previous is not None and now > self._previous[0]:
            then, before = self._previous
            for vertex, figures in metrics.items():
                self._rates[vertex] = _rates(self.job, vertex, figures, before.get(vertex, {}), now - then)
        self._previous = (now, metrics)
        self._note_progress(now, metrics)
        return metrics

    def _note_progress(self, now: float, metrics: dict[str, dict[str, int]]) -> None:
        epochs = self.job.epoch_stats()
        seen = (
            sorted((v, f.get("received", 0), f.get("emitted", 0)) for v, f in metrics.items()),
            epochs.committed if epochs is not None else None,
            epochs.running if epochs is not None else None,
            [(s["stage_id"], s["completed"]) for s in _spark_stages(self.job)],
        )
        if self._seen is None or self._seen[0] != seen:
            self._seen = (seen, now)

    def _source_lines(self, metrics: dict[str, dict[str, int]]) -> list[Text]:
        """Per source whose size is known (`items_total` of its supplier: a bounded `from_iterable`
        or `generator_stream`): the share emitted, and at the current output rate the time left."""
        lines = []
        for name, total in _source_totals(self.job).items():
            emitted = metrics.get(name, {}).get("emitted", 0)
            line = f"{name}: {min(emitted / total, 1.0):.0%} of {total:,} items"
            rate = self._rates.get(name, (0.0, 0.0))[1]
            if rate > 0 and emitted < total:
                line += f", about {(total - emitted) / rate:,.0f} s left"
            lines.append(Text(line))
        return lines

    def stalled_for(self) -> float | None:
        """Seconds the running job's figures have not moved, once that is `stall` or more."""
        if self._seen is None or _status(self.job) != "running":
            return None
        idle = self._clock() - self._seen[1]
        return idle if idle >= self._stall else None

    def table(self) -> Group:
        """Job line, per-vertex table and, on Spark, the stage bars."""
        metrics = self.read()
        elapsed = self._clock() - self._started
        status = _status(self.job)
        title = Text.assemble(
            ("jetspark ", "bold"), (str(self.job.name), "bold cyan"), f"  {status}  {elapsed:.1f} s"
        )
        vertices = Table(box=None, pad_edge=False, show_edge=False)
        for header in ("vertex", "received", "emitted", "in/s", "out/s", "back-pressured"):
            vertices.add_column(header, justify="left" if header == "vertex" else "right")
        fused = _fused(self.job)
        for name in _vertex_names(self.job):
            label = Text(f"{name} (+ {', '.join(fused[name])})" if name in fused else name)
            figures = metrics.get(name)
            if figures is None:
                vertices.add_row(label, "…", "…", "", "", "")
                continue
            rates = self._rates.get(name)
            vertices.add_row(
                label,  # never read as rich markup: names may hold brackets
                f"{figures.get('received', 0):,}",
                f"{figures.get('emitted', 0):,}",
                *(
                    (f"{rates[0]:,.0f}", f"{rates[1]:,.0f}", f"{rates[2]:.0%}")
                    if rates is not None
                    else ("", "", "")
                ),
            )
        parts: list[Any] = [title]
        epochs = _epoch_line(self.job, time.monotonic())  # the epochs' times are monotonic
        if epochs is not None:
            parts.append(epochs)
        parts.append(vertices)
        if status in _ENDED:
            parts.append(
                Text(
                    "in/s and out/s: items received and emitted per second, averaged over the run",
                    style="dim",
                )
            )
            parts.append(Text("back-pressured: the share of the time a full queue held it up", style="dim"))
        if status == "running":
            parts.extend(self._source_lines(metrics))
        stalled = self.stalled_for()
        if stalled is not None:
            parts.append(
                Text(
                    f"no progress for {stalled:.0f} s: no vertex received or emitted an item", style="yellow"
                )
            )
        stages = _spark_stages(self.job)
        if stages:
            bars = Table(box=None, pad_edge=False, show_edge=False, show_header=False)
            bars.add_column("stage")
            bars.add_column("bar", width=24)
            bars.add_column("tasks", justify="right")
            for stage in stages:
                total = max(stage["tasks"], 1)
                bars.add_row(
                    Text(f"{_short(stage['name'], self.job.name)} (Spark stage {stage['stage_id']})"),
                    ProgressBar(total=total, completed=stage["completed"], width=24),
                    f"{stage['completed']}/{stage['tasks']} tasks",
                )
            parts.append(bars)
            if not metrics:
                parts.append(Text("per-vertex counts arrive as the tasks report them", style="dim"))
        return Group(*parts)


def _status(job: JobHandle) -> str:
    return job.status.value


def _epoch_line(job: JobHandle, now: float) -> Text | None:
    """A job in epochs: the running epoch and its time so far, the last committed one's duration,
    and how many were committed and aborted. None for other jobs."""
    stats = job.epoch_stats()
    if stats is None:
        return None
    parts = []
    if stats.running is not None and _status(job) == "running":
        parts.append(f"epoch {stats.running[0]} running {now - stats.running[1]:.1f} s")
    if stats.last_committed is not None:
        parts.append(f"epoch {stats.last_committed[0]} committed in {stats.last_committed[1]:.1f} s")
    parts.append(f"{stats.committed} committed, {stats.aborted} aborted")
    figures = next((e for e in stats.epochs if e["outcome"] == "committed"), None)
    if figures is not None:
        parts.append(
            f"epoch {figures['epoch']}: {figures['items_in'] or 0:,} items in, {figures['items_out'] or 0:,} out, "
            f"state {_size(figures['state_bytes'] or 0)} in {figures['state_entries'] or 0:,} entries"
        )
    return Text("  ".join(parts))


def _size(count: int) -> str:
    """Bytes as B, kB, MB or GB (powers of 1000)."""
    for unit in ("B", "kB", "MB"):
        if count < 1000:
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1000  # type: ignore[assignment]
    return f"{count:,.1f} GB"


def _counts(job: JobHandle) -> dict[str, dict[str, int]]:
    """The job's per-vertex figures now (`JobHandle.current_metrics`): `metrics()`; on a Spark
    batch job before it ends, the counts its tasks report; on a job in epochs, its committed
    epochs' counts plus the running epoch's."""
    return job.current_metrics()


def _rates(
    job: JobHandle, vertex: str, figures: dict[str, int], before: dict[str, int], seconds: float
) -> tuple[float, float, float]:
    """Items in and out per second and the share of time back-pressured over `seconds`, since
    the figures `before` (empty: since the start)."""

    def grown(name: str) -> float:
        return max(figures.get(name, 0) - before.get(name, 0), 0) / seconds

    share = grown("backpressured_ms") / 1000 / _processors(job, vertex)
    return grown("received"), grown("emitted"), min(share, 1.0)


def _processors(job: JobHandle, vertex: str) -> int:
    """Processors the job's plan deploys for `vertex` (1 where it has no plan)."""
    plan = job.plan
    planned = plan.vertices.get(vertex) if plan is not None else None
    return max(len(planned.processor_ids()), 1) if planned is not None else 1


def _source_totals(job: JobHandle) -> dict[str, int]:
    """vertex -> items it emits in all, for the sources whose supplier knows (`items_total`)."""
    totals = {}
    for vertex in job.dag or []:
        supplier = getattr(vertex.meta_supplier, "supplier", None)
        total = getattr(supplier, "items_total", None)
        if isinstance(total, int) and total > 0:
            totals[vertex.name] = total
    return totals


def _short(stage_name: str, job_name: str) -> str:
    """A Spark stage's name without the `jetspark <job>: ` the title already says."""
    prefix = f"jetspark {job_name}: "
    return stage_name[len(prefix) :] if stage_name.startswith(prefix) else stage_name


def _fused(job: JobHandle) -> Mapping[str, tuple[str, ...]]:
    """Vertex -> the user's vertices fused into it (their figures are its figures)."""
    prepared = getattr(job, "prepared", None)
    return getattr(prepared, "fused", None) or {}


def _vertex_names(job: JobHandle) -> list[str]:
    if job.dag is None:
        return sorted(job.metrics())
    return [vertex.name for vertex in job.dag]


def _spark_stages(job: JobHandle) -> list[dict[str, Any]]:
    try:
        return job.spark_stages()
    except Exception:  # the session is going away: no stage figures, no failure
        return []


@contextlib.contextmanager
def progress_display(
    job: JobHandle, force_terminal: bool = False, file: IO[str] | None = None, refresh: float = REFRESH
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


@contextlib.contextmanager
def spark_start_display(
    master: str, force_terminal: bool = False, file: IO[str] | None = None, refresh: float = REFRESH
) -> Iterator[None]:
    """Say that Spark is starting, with the seconds so far, while the block runs (it starts the
    session); then how long it took. Quiet like `progress_display` when not on a terminal."""
    console = Console(file=file or sys.stderr, force_terminal=True if force_terminal else None)
    if not console.is_terminal:
        yield
        return
    from rich.live import Live

    started = time.monotonic()

    def line() -> Text:
        return Text(f"Starting Spark ({master}) ... {time.monotonic() - started:.0f} s", style="bold")

    stop = threading.Event()
    with Live(line(), console=console, auto_refresh=False, transient=True) as live:

        def redraw() -> None:
            while not stop.wait(refresh):
                live.update(line(), refresh=True)

        thread = threading.Thread(target=redraw, name="jetspark spark start", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
    console.print(Text(f"Spark ({master}) started in {time.monotonic() - started:.1f} s", style="dim"))

"""Per-epoch figures of a job in epochs on Spark, and its counts while an epoch runs.

An epoch's metrics reach the driver only with its tasks' last records, and count only once the
epoch commits (`epochs`). A person watching the job wants more than the totals after each
commit: what each epoch did (items in and out, the size of the snapshot it ended with, the bytes
its sinks wrote, how long it ran and how long its commit took on the driver, and why an epoch
aborted) and, while an epoch runs, the counts its tasks report (`live.LiveMetrics`, tagged with
the epoch).

`EpochLedger` is kept by the job's handle (`EpochJob.ledger`); the epoch loop tells it when an
epoch starts, commits, completes the job or aborts. The web UI, the Prometheus export and the
progress display read it through the typed handle: `JobHandle.epoch_stats().epochs` (`epochs()`)
and `JobHandle.current_metrics()` (`counts()`). Its own totals of the committed
epochs' counters and the live counts of the running epoch change under one lock, so a reader never
sees an epoch's items both committed and live.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from jetspark.runners.spark.live import FIGURES, LiveMetrics

#: Epochs whose figures a job keeps (`EpochLedger.epochs`), the newest.
MAX_EPOCHS = 100
#: The custom metric (`Processor.custom_metrics`) in which sinks count the bytes they wrote.
BYTES_WRITTEN = "bytes_written"

#: `EpochFigures.outcome` values.
RUNNING, COMMITTED, COMPLETED, ABORTED = "running", "committed", "completed", "aborted"


@attrs.define
class EpochFigures:
    """One epoch, as the job page lists it."""

    epoch: int
    #: `running`, `committed`, `completed` (the job's last epoch: nothing left to snapshot) or `aborted`.
    outcome: str
    #: Wall-clock times (seconds since 1970) of its start and end; `ended` is None while it runs.
    started: float
    ended: float | None = None
    #: Seconds from its start to its end (for a committed epoch: to the end of its commit).
    duration_s: float | None = None
    #: Seconds its sources ran before the terminal snapshot (`epoch_span`: the interval, or less
    #: when the sources had caught up).
    span_s: float | None = None
    #: The least share of its span a task of the sources' stages sat idle (`epoch_span`: at least
    #: a quarter in every task means the sources caught up, and the next span is shortened).
    sources_idle: float | None = None
    #: Items the DAG's sources emitted (once per item, though a source feeding several edges emits
    #: each to every one) and its sinks received in the epoch.
    items_in: int | None = None
    items_out: int | None = None
    #: The snapshot the epoch ended with: bytes, entries and files written to the checkpoint store.
    state_bytes: int | None = None
    state_entries: int | None = None
    state_files: int | None = None
    #: Bytes the sinks wrote (their `bytes_written` counter; None where no sink counts bytes).
    sink_bytes: int | None = None
    #: Milliseconds the driver took to commit the snapshot (write its manifest, move `LATEST`).
    commit_ms: float | None = None
    #: Why it aborted, in one line.
    cause: str | None = None
    #: Per vertex: `received`, `emitted`, `backpressured_ms` in the epoch.
    vertices: dict[str, dict[str, int]] = attrs.Factory(dict)

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


class EpochLedger:
    """The figures of a job's last epochs and of the running one; see the module docstring."""

    def __init__(
        self,
        sources: Iterable[str],
        sinks: Iterable[str],
        live: LiveMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        fan_out: Mapping[str, int] | None = None,
    ) -> None:
        self.sources = tuple(sources)
        #: Outbound edges per source: its `emitted` counts an item once per edge it goes to.
        self.fan_out = dict(fan_out or {})
        self.sinks = tuple(sinks)
        self._live = live
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._ended: deque[EpochFigures] = deque(maxlen=MAX_EPOCHS)
        #: The running epoch and its start (`clock()`), or None between epochs.
        self._running: tuple[EpochFigures, float] | None = None
        #: The committed epochs' counters (`FIGURES`) per vertex, summed.
        self._totals: dict[str, dict[str, int]] = {}

    @classmethod
    def of_dag(cls, dag: Any, live: LiveMetrics | None = None) -> EpochLedger:
        """Sources are the vertices without inbound edges, sinks those without outbound ones."""
        names = [vertex.name for vertex in dag]
        sources = [n for n in names if not dag.inbound_edges(n)]
        return cls(
            sources,
            [n for n in names if not dag.outbound_edges(n)],
            live,
            fan_out={n: len(dag.outbound_edges(n)) for n in sources},
        )

    # ---- told by the epoch loop --------------------------------------------------------------

    def started(self, epoch: int, commit_only: bool = False, span: float | None = None) -> None:
        """Epoch `epoch` starts, its sources to run `span` s (a commit-only pass, at a stop, is no
        epoch: nothing to count)."""
        with self._lock:
            self._end_unfinished()
            if commit_only:
                self._running = None
                if self._live is not None:
                    self._live.pause()
                return
            span_s = None if span is None else round(span, 3)
            self._running = (EpochFigures(epoch, RUNNING, self._wall(), span_s=span_s), self._clock())
            if self._live is not None:
                self._live.follow(epoch)

    @contextlib.contextmanager
    def commit(self, epoch: int, outcome: Any, sources_idle: float | None = None) -> Iterator[None]:
        """Times the driver's commit of `epoch` (the block); the epoch counts as committed only if
        the block returns. `outcome` is the epoch's `records.DriverReports`; `sources_idle` the
        least share of its span a sources' task sat idle."""
        begun = self._clock()
        yield
        self._end(
            epoch, COMMITTED, outcome, commit_ms=(self._clock() - begun) * 1000, sources_idle=sources_idle
        )

    def completed(self, epoch: int, outcome: Any) -> None:
        """`epoch` was the job's last: every processor completed, no snapshot to commit."""
        self._end(epoch, COMPLETED, outcome)

    def aborted(self, epoch: int, cause: str, outcome: Any = None) -> None:
        """`epoch` aborted for `cause`; what it did is thrown away (its figures are kept, if any)."""
        self._end(epoch, ABORTED, outcome, cause=cause)

    def close(self) -> None:
        """The job ended: no more live counts."""
        with self._lock:
            self._end_unfinished()
            self._running = None
        if self._live is not None:
            self._live.close()

    # ---- read by the web UI and the progress display --------------------------------------

    def epochs(self) -> list[dict[str, Any]]:
        """The last epochs, newest first; the running one (with its live counts) first of all."""
        with self._lock:
            ended = [e.to_json() for e in reversed(self._ended)]
        running = self.running()
        return [running, *ended] if running is not None else ended

    def running(self) -> dict[str, Any] | None:
        """The running epoch: its figures so far (as its tasks last reported them), or None."""
        with self._lock:
            if self._running is None:
                return None
            figures, begun = self._running
            live = self._live.figures() if self._live is not None else {}
            now = self._clock()
        out = figures.to_json()
        out["duration_s"] = round(now - begun, 2)
        out["vertices"] = live
        out["items_in"], out["items_out"] = self._items(live)
        return out

    def counts(self) -> dict[str, dict[str, int]]:
        """Per vertex, `received`, `emitted` and `backpressured_ms` so far: the committed epochs'
        and the running epoch's as its tasks last reported them."""
        with self._lock:
            live = self._live.figures() if self._live is not None and self._running is not None else {}
            out = {vertex: dict(figures) for vertex, figures in self._totals.items()}
        _add(out, live)
        return out

    # ---- inside -----------------------------------------------------------------------------

    def _end(
        self,
        epoch: int,
        outcome_name: str,
        outcome: Any,
        commit_ms: float | None = None,
        cause: str | None = None,
        sources_idle: float | None = None,
    ) -> None:
        with self._lock:
            if self._running is not None and self._running[0].epoch == epoch:
                figures, begun = self._running
            else:  # not seen to start (an abort before its tasks ran): no duration
                figures, begun = EpochFigures(epoch, outcome_name, self._wall()), None
            self._running = None
            if self._live is not None:
                self._live.pause()
            figures.outcome, figures.ended, figures.cause = outcome_name, self._wall(), cause
            if begun is not None:
                figures.duration_s = round(self._clock() - begun, 3)
            if commit_ms is not None:
                figures.commit_ms = round(commit_ms, 1)
            if sources_idle is not None:
                figures.sources_idle = round(sources_idle, 3)
            if outcome is not None:
                self._take(figures, outcome)
                if outcome_name != ABORTED:
                    _add(self._totals, figures.vertices)
            self._ended.append(figures)

    def _take(self, figures: EpochFigures, outcome: Any) -> None:
        metrics: dict[str, dict[str, int]] = outcome.metrics
        figures.vertices = {
            vertex: {name: int(values.get(name, 0)) for name in FIGURES} for vertex, values in metrics.items()
        }
        figures.items_in, figures.items_out = self._items(figures.vertices)
        files: list[dict[str, Any]] = outcome.snapshot_files
        figures.state_bytes = sum(int(f.get("size", 0)) for f in files)
        figures.state_entries = sum(int(f.get("entries", 0)) for f in files)
        figures.state_files = len(files)
        written = [values[BYTES_WRITTEN] for values in metrics.values() if BYTES_WRITTEN in values]
        figures.sink_bytes = sum(written) if written else None

    def _items(self, vertices: dict[str, dict[str, int]]) -> tuple[int, int]:
        items_in = sum(
            vertices.get(v, {}).get("emitted", 0) // max(self.fan_out.get(v, 1), 1) for v in self.sources
        )
        items_out = sum(vertices.get(v, {}).get("received", 0) for v in self.sinks)
        return items_in, items_out

    def _end_unfinished(self) -> None:
        """A running epoch that was neither committed nor aborted was stopped on request."""
        if self._running is None:
            return
        figures, begun = self._running
        figures.outcome, figures.ended = ABORTED, self._wall()
        figures.duration_s = round(self._clock() - begun, 3)
        figures.cause = "stopped: the job was asked to cancel, suspend or restart"
        self._ended.append(figures)
        self._running = None


def _add(total: dict[str, dict[str, int]], more: dict[str, dict[str, int]]) -> None:
    for vertex, figures in more.items():
        slot = total.setdefault(vertex, dict.fromkeys(FIGURES, 0))
        for name in FIGURES:
            slot[name] = slot.get(name, 0) + int(figures.get(name, 0))

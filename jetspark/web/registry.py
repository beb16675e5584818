"""The jobs the web UI shows, and what it shows of each: plain dicts read from the job handles.

The registry holds the driver's jobs (every job handle created while it observes, plus any added
by hand), numbered from 1 in order of submission; pages and API calls name a job by that number
only. What a page shows comes from the handle itself: `status`, `metrics()` (per vertex items
received and emitted, milliseconds back-pressured, the processors' own counters, and the gauges
`queued` and `input_watermark`: the items in its inbound queues and the last watermark its
processors accepted, the lowest of them), the plan's parallelism, the job's last snapshots or
epochs, its failures, and on Spark the stage progress and the Spark UI links, all through the typed
handle (`runners.job.JobHandle`). Rates, back-pressure shares and the charts come from the samples
the registry's sampler takes once a second (`jetspark.web.history`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from jetspark.planning.pictures import edge_label
from jetspark.runners.job import MAX_SNAPSHOTS, JobHandle, JobStatus, observe_jobs
from jetspark.web import figures
from jetspark.web.history import HISTORY_SECONDS, History, Rates, Sampler, processor_counts, read_counters

#: Jobs kept; the oldest ended ones go first.
MAX_JOBS = 200


class JobRegistry:
    """Numbered job handles, and the last figures of each (for rates)."""

    def __init__(self, observe: bool = True, sample: bool = True) -> None:
        self._lock = threading.Lock()
        self._jobs: OrderedDict[int, JobHandle] = OrderedDict()
        self._next = 1
        self._histories: dict[int, History] = {}
        #: Jobs whose final figures are sampled (they ended and were read once more).
        self._final: set[int] = set()
        self._unobserve = observe_jobs(self.add) if observe else None
        self._sampler = Sampler(self.sample) if sample else None

    def close(self) -> None:
        if self._unobserve is not None:
            self._unobserve()
            self._unobserve = None
        if self._sampler is not None:
            self._sampler.stop()
            self._sampler = None

    def sample(self) -> None:
        """Read every running job's counters into its history, and an ended job's once more."""
        with self._lock:
            jobs = list(self._jobs.items())
        for key, job in jobs:
            if job.status is JobStatus.NOT_STARTED or key in self._final:
                continue
            ended = job.ended
            history = self._histories.setdefault(key, History())
            history.add(time.time(), read_counters(job))
            if ended:
                self._final.add(key)
            else:
                self._final.discard(key)  # resumed

    def add(self, job: JobHandle) -> int:
        """Register `job` (once); returns its number."""
        with self._lock:
            for key, known in self._jobs.items():
                if known is job:
                    return key
            key = self._next
            self._next += 1
            self._jobs[key] = job
            while len(self._jobs) > MAX_JOBS:
                oldest = next((k for k, j in self._jobs.items() if j.ended), None)
                if oldest is None:
                    break
                del self._jobs[oldest]
                self._histories.pop(oldest, None)
                self._final.discard(oldest)
            return key

    def get(self, key: int) -> JobHandle | None:
        with self._lock:
            return self._jobs.get(key)

    def history(self, key: int) -> History:
        with self._lock:
            return self._histories.get(key) or History()

    def numbers(self) -> list[int]:
        with self._lock:
            return [k for k, job in self._jobs.items() if job.status is not JobStatus.NOT_STARTED]

    # ---- what a page shows ----------------------------------------------------------------

    def summary(self, key: int) -> dict[str, Any]:
        """The jobs list's row: id, name, state, runner, start time, duration."""
        job = self._jobs[key]
        ended = job.ended_at
        end = ended if ended is not None and job.ended else time.time()
        return {
            "key": key,
            "id": str(job.job_id),
            "name": job.name,
            "state": job.status.value,
            "runner": job.runner,
            "members": job.member_count,
            "submitted": job.submitted_at,
            "submitted_text": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.submitted_at)),
            "duration": round(max(end - job.submitted_at, 0.0), 3),
            "error": _error_text(job),
        }

    def details(self, key: int) -> dict[str, Any]:
        """The job page: the summary, vertices with figures, edges, actions, snapshots or epochs,
        failures, Spark stages and links."""
        job = self._jobs[key]
        out = self.summary(key)
        # a running Spark job: the counts its tasks last reported (in epochs: the running epoch's)
        out["live"] = job.status is JobStatus.RUNNING and job.capabilities().live_metrics
        metrics = read_counters(job)
        plan = job.plan
        dag = job.dag
        names = [vertex.name for vertex in dag] if dag is not None else []
        rates = self.history(key).rates(processor_counts(job, names))
        now = time.time()
        vertices = []
        for index, name in enumerate(names):
            found = metrics.get(name)
            planned = plan.vertices.get(name) if plan is not None else None
            rate = rates.get(name, Rates(0.0, 0.0, 0.0) if found is not None else None)
            share = None if rate is None else round(rate.backpressure, 3)
            vertices.append(
                {
                    "name": name,
                    "index": index,
                    "parallelism": planned.local_parallelism if planned is not None else None,
                    "received": None if found is None else found.get("received", 0),
                    "emitted": None if found is None else found.get("emitted", 0),
                    "queued": None if found is None else found.get("queued"),
                    **figures.watermark(None if found is None else found.get("input_watermark"), now),
                    # the two other watermarks of seed 004's per-stage three (docs/quiescence.md)
                    "upstream_watermark_text": figures.watermark(
                        None if found is None else found.get("upstream_watermark"), now
                    )["watermark_text"],
                    "output_watermark_text": figures.watermark(
                        None if found is None else found.get("output_watermark"), now
                    )["watermark_text"],
                    "rate_in": 0.0 if rate is None else round(rate.rate_in, 1),
                    "rate_out": 0.0 if rate is None else round(rate.rate_out, 1),
                    "backpressured_ms": None if found is None else found.get("backpressured_ms"),
                    "backpressure": share,
                    "backpressure_pct": None if share is None else round(share * 100),
                    "backpressure_level": figures.backpressure_level(share),
                    "custom": figures.custom_metrics(found),
                    "custom_text": ", ".join(f"{k} {v:,}" for k, v in figures.custom_metrics(found).items()),
                }
            )
        edges = []
        for edge in dag.edges if dag is not None else ():
            assert edge.destination is not None
            edges.append(
                {
                    "source": edge.source.name,
                    "destination": edge.destination.name,
                    "routing": edge.routing.value,
                    "distributed": edge.is_distributed,
                    "priority": edge.priority,
                    "label": edge_label(edge),
                }
            )
        out["vertices"] = vertices
        out["edges"] = edges
        out["actions"] = actions(job)
        out["snapshots"] = _snapshots(job)
        out["snapshot_list"] = committed_snapshots(job)
        out["has_snapshots"] = job.config is not None and job.config.snapshots_enabled
        out["epochs"] = figures.epochs(job, out["snapshot_list"])
        out["exceptions"] = figures.exceptions(job)
        out["chart_span_s"] = HISTORY_SECONDS
        no_stages: list[dict[str, Any]] = []
        no_links: list[tuple[str, str]] = []
        out["spark_stages"] = _safely(job.spark_stages, no_stages)
        out["spark_ui"] = _safely(job.spark_ui_url, None)
        out["spark_links"], out["spark_links_left_out"] = figures.bounded_links(
            _safely(job.spark_ui_links, no_links)
        )
        return out

    def durations(self, key: int) -> tuple[str, list[str], list[float]]:
        """The chart of the last snapshots' durations (local runner, measured) or the last epochs'
        that counted (on Spark: from start to commit), oldest first."""
        job = self._jobs[key]
        if job.epoch_stats() is not None:
            listed = figures.epochs(job, committed_snapshots(job)) or {"list": []}
            timed = [
                e
                for e in reversed(listed["list"])
                if e["duration_s"] is not None and e.get("outcome") in figures.ENDED_WELL
            ]
            return "epoch duration", [f"epoch {e['epoch']}" for e in timed], [e["duration_s"] for e in timed]
        taken = job.taken_snapshots()[-MAX_SNAPSHOTS:]
        return "snapshot duration", [f"snapshot {h.id}" for h in taken], [h.duration_s or 0.0 for h in taken]


def actions(job: JobHandle) -> dict[str, bool]:
    """Which buttons work now: cancel a running or suspended job; suspend a running job that takes
    snapshots; resume a suspended one."""
    status = job.status
    can = job.capabilities()
    return {
        "cancel": status in (JobStatus.RUNNING, JobStatus.SUSPENDED),
        "suspend": status is JobStatus.RUNNING and can.can_suspend,
        "resume": status is JobStatus.SUSPENDED and can.can_suspend,
    }


def _error_text(job: JobHandle) -> str | None:
    if job.error is None:
        return None
    return f"{type(job.error).__name__}: {job.error}"


def committed_snapshots(job: JobHandle) -> list[dict[str, Any]]:
    """The job's last snapshots (`JobHandle.snapshots`), newest first, as the page shows them."""
    return [
        {
            "id": info.id,
            "created": info.created,
            "created_text": time.strftime("%H:%M:%S", time.localtime(info.created)),
            "duration_ms": round(info.duration_s * 1000, 1) if info.duration_s is not None else None,
            "entries": info.entries,
            "bytes": info.bytes,
            "files": info.files,
        }
        for info in job.snapshots(MAX_SNAPSHOTS)
    ]


def _snapshots(job: JobHandle) -> dict[str, Any]:
    """Snapshot and epoch counts the handle keeps."""
    out: dict[str, Any] = dict(job.snapshot_figures())
    epochs = job.epoch_stats()
    if epochs is not None:
        out["epochs_committed"] = epochs.committed
        out["epochs_aborted"] = epochs.aborted
        if epochs.last_abort is not None:
            out["last_abort"] = epochs.last_abort
    return out


T = TypeVar("T")


def _safely(read: Callable[[], T], default: T) -> T:
    try:
        return read()
    except Exception:  # the Spark session is stopping: show nothing rather than fail the page
        return default

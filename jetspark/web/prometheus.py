"""The job metrics in Prometheus' text format: `GET /metrics` on the web UI's server.

Read at scrape time from the same handles the pages show (`JobRegistry`), so a scrape costs one
`metrics()` call per job and nothing while nobody scrapes. Per job and vertex (labels `job`, the
job's name, and `vertex`): items received and emitted (counters), the gauges the job reports
(`queued`, `input_watermark`, ...) and every processor's own counters (`custom_metrics()`, for
example `late_items_dropped`), each a metric `jetspark_vertex_<name>`; on a running Spark job the
counts include what its tasks last reported (for a job in epochs, the running epoch's). Per job:
its status (one series per status, 1 for the current one), restarts, and, for jobs in epochs,
epochs committed and aborted, the running epoch's number and the last committed epoch's figures
(`jetspark_job_last_epoch_<figure>`: duration, items in and out, state bytes and entries, sink
bytes, commit seconds).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from jetspark.runners.job import JobHandle, JobStatus
from jetspark.web.history import read_counters
from jetspark.web.registry import JobRegistry

#: The figures that only grow, exported as counters; every other number is a gauge.
COUNTERS = {
    "received": ("jetspark_vertex_items_received", "Items the vertex's processors took from their inboxes"),
    "emitted": ("jetspark_vertex_items_emitted", "Items the vertex's processors emitted downstream"),
}
_NOT_A_NAME = re.compile(r"[^a-zA-Z0-9_]")
#: The last committed epoch's figures (`EpochStats.epochs()`), as gauges: name, help, scale.
LAST_EPOCH = {
    "duration_s": ("jetspark_job_last_epoch_duration_seconds", "Seconds from its start to its commit", 1.0),
    "items_in": ("jetspark_job_last_epoch_items_in", "Items the sources emitted in it", 1.0),
    "items_out": ("jetspark_job_last_epoch_items_out", "Items the sinks received in it", 1.0),
    "state_bytes": ("jetspark_job_last_epoch_state_bytes", "Bytes of the snapshot it ended with", 1.0),
    "state_entries": ("jetspark_job_last_epoch_state_entries", "Entries of the snapshot it ended with", 1.0),
    "sink_bytes": ("jetspark_job_last_epoch_sink_bytes", "Bytes the file sinks wrote in it", 1.0),
    "commit_ms": ("jetspark_job_last_epoch_commit_seconds", "Seconds the driver's commit took", 0.001),
}


def metric_name(figure: str) -> str:
    """`jetspark_vertex_<figure>`, with anything Prometheus does not allow in a name as `_`."""
    return "jetspark_vertex_" + _NOT_A_NAME.sub("_", figure)


class JobsCollector(Collector):
    """Collects the figures of every job in `registry` at each scrape."""

    def __init__(self, registry: JobRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        families: dict[str, CounterMetricFamily | GaugeMetricFamily] = {}
        status = GaugeMetricFamily(
            "jetspark_job_status", "1 for the job's current status", labels=["job", "status"]
        )
        restarts = GaugeMetricFamily("jetspark_job_restarts", "Restarts after failures", labels=["job"])
        epochs = CounterMetricFamily(
            "jetspark_job_epochs_committed", "Epochs committed (jobs in epochs)", labels=["job"]
        )
        aborted = CounterMetricFamily(
            "jetspark_job_epochs_aborted", "Epochs aborted (jobs in epochs)", labels=["job"]
        )
        running = GaugeMetricFamily(
            "jetspark_job_running_epoch", "The epoch running now (jobs in epochs)", labels=["job"]
        )
        last_epoch = {
            field: GaugeMetricFamily(name, f"The last committed epoch: {text}", labels=["job"])
            for field, (name, text, _) in LAST_EPOCH.items()
        }
        for key in self._registry.numbers():
            job = self._registry.get(key)
            if job is None:
                continue
            name = job.name
            for each in JobStatus:
                status.add_metric([name, each.value], 1.0 if job.status is each else 0.0)
            restarts.add_metric([name], float(job.restarts))
            stats = job.epoch_stats()
            if stats is not None:
                epochs.add_metric([name], float(stats.committed))
                aborted.add_metric([name], float(stats.aborted))
                _epoch_figures(stats.epochs, name, running, last_epoch)
            for vertex, figures in _metrics_of(job).items():
                for figure, value in figures.items():
                    if isinstance(value, bool) or not isinstance(value, (int, float)):
                        continue
                    _family(families, figure).add_metric([name, vertex], float(value))
        yield status
        yield restarts
        yield epochs
        yield aborted
        yield running
        yield from last_epoch.values()
        yield from families.values()


def _metrics_of(job: JobHandle) -> dict[str, dict[str, Any]]:
    try:
        return read_counters(job)
    except Exception:  # a job between states: no figures this scrape
        return {}


def _epoch_figures(
    listed: tuple[dict[str, Any], ...],
    name: str,
    running: GaugeMetricFamily,
    last_epoch: dict[str, GaugeMetricFamily],
) -> None:
    """The running epoch's number and the last committed epoch's figures of a job in epochs
    (`EpochStats.epochs`, newest first)."""
    now = next((e for e in listed if e["outcome"] == "running"), None)
    if now is not None:
        running.add_metric([name], float(now["epoch"]))
    last = next((e for e in listed if e["outcome"] == "committed"), None)
    if last is None:
        return
    for field, (_, _, scale) in LAST_EPOCH.items():
        value = last.get(field)
        if isinstance(value, (int, float)):
            last_epoch[field].add_metric([name], float(value) * scale)


def _family(
    families: dict[str, CounterMetricFamily | GaugeMetricFamily], figure: str
) -> CounterMetricFamily | GaugeMetricFamily:
    if figure not in families:
        if figure in COUNTERS:
            name, text = COUNTERS[figure]
            families[figure] = CounterMetricFamily(name, text, labels=["job", "vertex"])
        else:
            families[figure] = GaugeMetricFamily(
                metric_name(figure), f"The job's {figure!r} figure per vertex", labels=["job", "vertex"]
            )
    return families[figure]


def metrics_registry(registry: JobRegistry) -> CollectorRegistry:
    """A Prometheus registry holding only the jobs' figures (no process metrics of this server)."""
    scraped = CollectorRegistry(auto_describe=False)
    scraped.register(JobsCollector(registry))
    return scraped

"""`GET /metrics`: every job's figures in Prometheus' text format, read over HTTP as Prometheus
would scrape them, equal to the job's own `metrics()`."""

from __future__ import annotations

from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from jetspark import DAG, AbstractProcessor, Edge, JobConfig
from jetspark.processors import collect, from_iterable, insert_watermarks
from jetspark.runners.local import LocalRunner
from jetspark.runners.spark.epoch_stats import EpochLedger
from jetspark.runners.spark.records import DriverReports
from jetspark.web import WebServer
from jetspark.web.prometheus import metric_name, metrics_registry
from jetspark.web.registry import JobRegistry
from tests.web.epoch_stand_in import EpochJobStandIn
from tests.web.test_pages import counted_dag


def scraped(server: WebServer) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """name -> {sorted labels: value} of one scrape."""
    answer = httpx.get(f"{server.url}metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=")  # the exposition format
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def test_counts_and_status_of_a_finished_job_are_its_own(server: WebServer) -> None:
    job = LocalRunner(2).run(counted_dag(from_iterable(range(1000))), JobConfig(name="tens"))
    metrics = job.metrics()
    samples = scraped(server)
    for vertex, figures in metrics.items():
        labels = (("job", "tens"), ("vertex", vertex))
        assert samples["jetspark_vertex_items_received_total"][labels] == figures["received"]
        assert samples["jetspark_vertex_items_emitted_total"][labels] == figures["emitted"]
    assert samples["jetspark_vertex_items_received_total"][(("job", "tens"), ("vertex", "sink"))] == 100
    status = samples["jetspark_job_status"]
    assert status[(("job", "tens"), ("status", "completed"))] == 1
    assert status[(("job", "tens"), ("status", "running"))] == 0


class OddCounter(AbstractProcessor):
    """Passes items on and counts the odd ones in its own metric."""

    def __init__(self) -> None:
        super().__init__()
        self.odd = 0

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not self.try_emit(item):
            return False
        self.odd += item % 2
        return True

    def custom_metrics(self) -> dict[str, int]:
        return {"odd_items": self.odd}


def test_gauges_and_processors_own_counters_are_exported() -> None:
    """Watermarks and queue sizes show as gauges, a processor's own counter under its name."""
    server = WebServer("127.0.0.1", 0)
    try:
        dag = DAG()
        source = dag.new_vertex("source", from_iterable([10, 21, 30, 41, 51]))
        stamped = dag.new_vertex("stamped", insert_watermarks(lambda t: t, 0))
        odd = dag.new_vertex("odd", OddCounter)
        sink = dag.new_vertex("sink", collect())
        dag.edge(Edge.between(source, stamped).isolated())
        dag.edge(Edge.between(stamped, odd))
        dag.edge(Edge.between(odd, sink))
        job = LocalRunner(1).run(dag, JobConfig(name="stamps"))
        metrics = job.metrics()
        samples = scraped(server)
        assert samples["jetspark_vertex_odd_items"][(("job", "stamps"), ("vertex", "odd"))] == 3
        assert samples["jetspark_vertex_output_watermark"][(("job", "stamps"), ("vertex", "stamped"))] == 51
        for vertex, figures in metrics.items():
            for figure, value in figures.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    name = {"received": "jetspark_vertex_items_received_total"}.get(figure)
                    name = name or {"emitted": "jetspark_vertex_items_emitted_total"}.get(figure)
                    name = name or metric_name(figure)
                    assert samples[name][(("job", "stamps"), ("vertex", vertex))] == value, figure
    finally:
        server.stop()


def test_metric_names_are_valid_for_any_figure_name() -> None:
    assert metric_name("late_items_dropped") == "jetspark_vertex_late_items_dropped"
    assert metric_name("bytes.written-per s") == "jetspark_vertex_bytes_written_per_s"


def test_a_job_in_epochs_exports_its_running_epoch_and_the_last_committed_epochs_figures() -> None:
    clock = [10.0]
    stats = EpochLedger(["numbers"], ["sink"], clock=lambda: clock[0], wall=lambda: clock[0])
    reports = DriverReports(["numbers", "sink"])
    reports.metrics["numbers"]["emitted"] = 40
    reports.metrics["sink"].update(received=40, bytes_written=512)
    reports.snapshot_files = [{"size": 90, "entries": 4}]
    stats.started(0)
    clock[0] = 12.0
    with stats.commit(0, reports):
        clock[0] = 12.25
    stats.started(1)
    stats.aborted(1, "task lost")
    stats.started(1)
    registry = JobRegistry(observe=False, sample=False)
    registry.add(
        EpochJobStandIn(
            "epochs", stats, {"numbers": {"received": 0, "emitted": 40, "queued": 3}}, epochs=(1, 1)
        )
    )
    samples: dict[str, float] = {}
    for family in metrics_registry(registry).collect():
        for sample in family.samples:
            if sample.labels.get("vertex") in (None, "numbers") and "status" not in sample.labels:
                samples[sample.name] = sample.value
    assert samples["jetspark_job_epochs_committed_total"] == 1
    assert samples["jetspark_job_epochs_aborted_total"] == 1
    assert samples["jetspark_job_running_epoch"] == 1
    assert samples["jetspark_job_last_epoch_duration_seconds"] == 2.25
    assert samples["jetspark_job_last_epoch_items_in"] == samples["jetspark_job_last_epoch_items_out"] == 40
    assert samples["jetspark_job_last_epoch_state_bytes"] == 90
    assert samples["jetspark_job_last_epoch_state_entries"] == 4
    assert samples["jetspark_job_last_epoch_sink_bytes"] == 512
    assert samples["jetspark_job_last_epoch_commit_seconds"] == 0.25
    # the vertex counters: committed epochs' (the 40 of epoch 0), the gauges from metrics()
    assert samples["jetspark_vertex_items_emitted_total"] == 40
    assert samples["jetspark_vertex_queued"] == 3

"""Seed 004 audit (Prism's small web UI for jobs): what docs/web-ui.md promises of the JSON API
and the actions, checked over HTTP with httpx (no browser), jobs on the local runner."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from jetspark import DAG, Edge, JobConfig
from jetspark.core import AbstractProcessor, Watermark
from jetspark.processors import collect, from_iterable
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner
from jetspark.web import WebServer
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until


def chain(source: Any) -> DAG:
    dag = DAG()
    numbers = dag.new_vertex("numbers", source)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(numbers, sink))
    return dag


def token_of(server: WebServer, key: int) -> str:
    found = re.search(r'name=token value="([^"]+)"', httpx.get(f"{server.url}jobs/{key}").text)
    assert found is not None
    return found.group(1)


def test_the_jobs_list_api_has_every_documented_column(server: WebServer) -> None:
    """docs/web-ui.md: the jobs list shows "its id, name, state, runner, member count, start time
    and duration"."""
    job = LocalRunner(2).run(chain(from_iterable(range(100))), JobConfig(name="listed"))
    [row] = [r for r in httpx.get(f"{server.url}api/jobs").json() if r["name"] == "listed"]
    assert row["id"] == str(job.job_id)
    assert row["state"] == "completed"
    assert row["runner"] == "local"
    assert row["members"] == 2
    assert abs(row["submitted"] - job.submitted_at) < 1e-6
    assert 0 <= row["duration"] < 120
    assert row["error"] is None


def test_the_job_api_gives_the_jobs_own_per_vertex_figures(server: WebServer) -> None:
    class Stamps(AbstractProcessor):
        def try_process_item(self, ordinal: int, item: Any) -> bool:
            return self.try_emit(item)

        def complete(self) -> bool:
            return self.try_emit(Watermark(77))

    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(50)))
    stamps = dag.new_vertex("stamps", Stamps)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(numbers, stamps)).edge(Edge.between(stamps, sink))
    job = LocalRunner(1).run(dag, JobConfig(name="figures"))
    key = next(r["key"] for r in httpx.get(f"{server.url}api/jobs").json() if r["name"] == "figures")
    details = httpx.get(f"{server.url}api/jobs/{key}").json()
    metrics = job.metrics()
    shown = {v["name"]: v for v in details["vertices"]}
    assert set(shown) == set(metrics)
    for name, figures in metrics.items():
        assert shown[name]["received"] == figures["received"]
        assert shown[name]["emitted"] == figures["emitted"]
        assert shown[name]["queued"] == figures["queued"]
        assert shown[name]["backpressured_ms"] == figures["backpressured_ms"]
    # "its watermark": the last watermark the vertex's processors accepted (input_watermark)
    assert shown["sink"]["watermark"] == metrics["sink"]["input_watermark"] == 77
    # the other two of each vertex's three: what its producers sent, what it sent on
    assert shown["sink"]["upstream_watermark_text"] == metrics["sink"]["upstream_watermark"] == 77
    assert shown["stamps"]["output_watermark_text"] == metrics["stamps"]["output_watermark"] == 77
    assert shown["numbers"]["upstream_watermark_text"] is None  # a source has no producers
    page = httpx.get(f"{server.url}jobs/{key}").text
    assert "<th>upstream watermark</th>" in page and "<th>output watermark</th>" in page
    assert [(e["source"], e["destination"]) for e in details["edges"]] == [
        ("numbers", "stamps"),
        ("stamps", "sink"),
    ]


def test_an_unknown_job_is_404_on_every_route(server: WebServer) -> None:
    answer = httpx.get(f"{server.url}api/jobs/4242")
    assert answer.status_code == 404 and answer.json() == {"error": "no such job"}
    assert httpx.get(f"{server.url}jobs/4242").status_code == 404
    assert httpx.get(f"{server.url}jobs/4242/charts/durations.svg").status_code == 404
    assert httpx.get(f"{server.url}jobs/4242/charts/throughput/0.svg").status_code == 404


def test_the_token_header_works_like_the_form_field(server: WebServer, tmp_path: Path) -> None:
    """app.py: the token is "a form field or the `X-Jetspark-Token` header"."""
    gate = Gate(tmp_path / "gate", hold_at=5)
    job = LocalRunner(1).submit(chain(gated_stream(gate, count=100)), JobConfig(name="header"))
    try:
        key = server.registry.add(job)
        token = token_of(server, key)
        wrong = httpx.post(f"{server.url}jobs/{key}/cancel", headers={"X-Jetspark-Token": "guess"})
        assert wrong.status_code == 403 and job.status is JobStatus.RUNNING
        done = httpx.post(f"{server.url}jobs/{key}/cancel", headers={"X-Jetspark-Token": token})
        assert done.status_code == 303
        assert done.headers["location"] == f"/jobs/{key}"
        wait_until(lambda: job.ended, "the job to end")
        assert job.status is JobStatus.CANCELLED
    finally:
        gate.open()


def test_buttons_that_do_not_apply_are_refused_with_the_reason(server: WebServer, tmp_path: Path) -> None:
    """docs/web-ui.md: cancel "any running or suspended job", suspend and resume "jobs with a
    processing guarantee". A job without one cannot be suspended; an ended job cannot be cancelled."""
    gate = Gate(tmp_path / "gate", hold_at=5)
    job = LocalRunner(1).submit(chain(gated_stream(gate, count=10)), JobConfig(name="plain"))
    try:
        key = server.registry.add(job)
        token = token_of(server, key)
        actions = httpx.get(f"{server.url}api/jobs/{key}").json()["actions"]
        assert actions == {"cancel": True, "suspend": False, "resume": False}
        refused = httpx.post(f"{server.url}jobs/{key}/suspend", data={"token": token})
        assert refused.status_code == 409
        assert refused.text == "job 'plain' is running: cannot suspend"
        assert job.status is JobStatus.RUNNING
        gate.open()
        job.join(60)
        ended = httpx.post(f"{server.url}jobs/{key}/cancel", data={"token": token})
        assert ended.status_code == 409 and ended.text == "job 'plain' is completed: cannot cancel"
        assert httpx.post(f"{server.url}jobs/{key}/explode", data={"token": token}).status_code == 404
    finally:
        gate.open()


def test_metrics_endpoint_exports_every_watermark_and_pending_gauge(
    server: WebServer, tmp_path: Path
) -> None:
    """docs/web-ui.md: `jetspark_vertex_<figure>` for "every other figure of `job.metrics()`",
    the three watermarks of docs/quiescence.md included, read at each scrape (a running job)."""
    gate = Gate(tmp_path / "gate", hold_at=30)
    dag = DAG()
    numbers = dag.new_vertex("numbers", gated_stream(gate, count=60, timestamp_fn=lambda x: x))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(numbers, sink))
    job = LocalRunner(1).submit(dag, JobConfig(name="scraped"))
    try:
        wait_until(
            lambda: job.metrics()["sink"].get("input_watermark") is not None, "a watermark at the sink"
        )
        text = httpx.get(f"{server.url}metrics").text
        for figure in ("upstream_watermark", "input_watermark", "queued", "inbox", "outbox"):
            assert re.search(rf'^jetspark_vertex_{figure}\{{job="scraped",vertex="sink"\}} ', text, re.M), (
                figure
            )
        assert re.search(r'^jetspark_vertex_output_watermark\{job="scraped",vertex="numbers"\} ', text, re.M)
        assert 'jetspark_job_status{job="scraped",status="running"} 1.0' in text
    finally:
        gate.open()
        job.join(60)
    text = httpx.get(f"{server.url}metrics").text
    assert 'jetspark_job_status{job="scraped",status="completed"} 1.0' in text

"""The web UI in a real browser: the jobs list and a job page show the job's own figures, the DAG
is drawn, and cancel / suspend / resume act on the job. Jobs run on the local runner here (the
Spark ones are in `test_cli_ui.py`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.core.errors import JobCancelledError
from jetspark.processors import aggregate_by_key, collect, counting, from_iterable, generator_stream
from jetspark.processors import map as map_p
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from jetspark.web import WebServer
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until
from tests.web.browser import wait_for_figure, wait_for_state


def counted_dag(source: Any) -> DAG:
    """source -> tens (x // 10, lp 2) -> count per key (two-stage, distributed) -> sink."""
    dag = DAG()
    numbers = dag.new_vertex("numbers", source)
    tens = dag.new_vertex("tens", map_p(lambda x: x // 10), 2)
    dag.edge(Edge.between(numbers, tens).distributed())
    counted = aggregate_by_key(dag, "count", tens, lambda x: x, counting())
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(counted, sink))
    return dag


def shown_figures(page: Any) -> dict[str, dict[str, int]]:
    """The vertices table as the page shows it now: vertex -> received, emitted."""
    figures: dict[str, dict[str, int]] = {}
    for row in page.locator("#vertices tbody tr").all():
        name = row.get_attribute("data-vertex")
        cells = {f: row.locator(f'[data-field="{f}"]').inner_text() for f in ("received", "emitted")}
        figures[name] = {f: int(text.replace(",", "")) for f, text in cells.items()}
    return figures


def test_a_finished_job_shows_its_metrics_and_its_dag(server: WebServer, page: Any) -> None:
    job: LocalJob = LocalRunner(2).run(counted_dag(from_iterable(range(1000))), JobConfig(name="tens"))
    page.goto(server.url)
    row = page.locator("#jobs tr", has_text="tens")
    assert row.locator('[data-field="state"]').inner_text() == "completed"
    assert row.locator('[data-field="id"]').inner_text() == job.job_id
    assert row.locator('[data-field="runner"]').inner_text() == "local"
    row.locator("a").click()
    page.wait_for_selector("svg.dag")
    metrics = job.metrics()
    assert shown_figures(page) == {
        v: {"received": m["received"], "emitted": m["emitted"]} for v, m in metrics.items()
    }
    assert shown_figures(page)["sink"] == {"received": 100, "emitted": 0}  # 100 keys counted
    vertices = page.locator("svg.dag g.vertex")
    assert sorted(vertices.evaluate_all("els => els.map(e => e.dataset.vertex)")) == sorted(metrics)
    assert "lp 2" in (page.locator('svg.dag g.vertex[data-vertex="tens"]').text_content() or "")
    labels = page.locator("svg.dag g.edge text").all_text_contents()
    assert "partitioned, distributed" in labels and "unicast, distributed" in labels, labels
    assert page.locator("svg.dag g.edge.distributed").count() == 2
    page.wait_for_function("() => document.querySelector('svg.dag text[data-counts=\"sink\"]')?.textContent")
    assert page.locator('svg.dag text[data-counts="sink"]').text_content() == "in 100 · out 0"
    assert page.locator("#cancel").is_disabled() and page.locator("#resume").is_disabled()


def test_pages_follow_a_running_job_by_themselves(server: WebServer, page: Any, tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=300)
    job = LocalRunner(1).submit(counted_dag(gated_stream(gate, count=1000)), JobConfig(name="held"))
    try:
        page.goto(server.url)
        page.locator("#jobs a", has_text="held").click()
        wait_until(lambda: job.metrics().get("numbers", {}).get("emitted") == 300, "300 items out")
        wait_for_figure(page, "numbers", "emitted", "300")
        wait_for_state(page, "running")
        gate.hold_at(800)  # the page shows the new figures without being reloaded
        wait_for_figure(page, "numbers", "emitted", "800")
        assert shown_figures(page)["tens"]["received"] == job.metrics()["tens"]["received"] == 800
        page.goto(server.url)  # a job submitted while the list is open appears in it
        second = LocalRunner(1).submit(counted_dag(from_iterable(range(10))), JobConfig(name="second"))
        second.join(30)
        page.wait_for_selector("#jobs a:text('second')")
    finally:
        gate.open()
        job.join(60)


def test_the_cancel_button_cancels_the_job(server: WebServer, page: Any, tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=100)
    job = LocalRunner(2).submit(counted_dag(gated_stream(gate, count=1000)), JobConfig(name="doomed"))
    page.goto(server.url)
    page.locator("#jobs a", has_text="doomed").click()
    wait_until(lambda: job.metrics().get("numbers", {}).get("emitted") == 100, "100 items out")
    page.locator("#cancel").click()
    wait_for_state(page, "cancelled")
    with pytest.raises(JobCancelledError):
        job.join(30)
    assert job.status is JobStatus.CANCELLED
    assert page.locator("#cancel").is_disabled()
    gate.open()


def test_suspend_and_resume_buttons(server: WebServer, page: Any, tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=400)
    config = JobConfig(
        name="pausable",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=50,
        checkpoint_root=str(tmp_path / "checkpoints"),
    )
    job = LocalRunner(1).submit(counted_dag(gated_stream(gate, count=1000)), config)
    page.goto(server.url)
    page.locator("#jobs a", has_text="pausable").click()
    wait_until(lambda: job.metrics().get("numbers", {}).get("emitted") == 400, "400 items out")
    page.wait_for_function("() => document.getElementById('suspend')?.disabled === false")
    page.locator("#suspend").click()
    wait_for_state(page, "suspended")
    assert job.status is JobStatus.SUSPENDED
    assert job.store is not None
    page.wait_for_selector("#snapshot-list tbody tr")
    # the page's refresh fills the job's own fields (its `id` among them) before it refills the
    # snapshot rows: filling must leave the rows' cells alone
    page.evaluate("fill(document.getElementById('job'), {id: 'the job id'})")
    shown = [row.locator("td").all_inner_texts() for row in page.locator("#snapshot-list tbody tr").all()]
    kept = [job.store.load_manifest(job.store.snapshot_dir(i)) for i in job.store.committed_ids()]
    # columns: snapshot, taken, duration (ms), entries, bytes, files
    # the last snapshots taken; bytes for those the checkpoint store still retains
    stored = [(int(r[0]), int(r[4].replace(",", ""))) for r in shown if r[4]]
    assert stored == [(m.snapshot_id, m.total_bytes) for m in kept]
    assert [int(r[0]) for r in shown] == sorted(h["id"] for h in job.snapshot_history)[::-1][:10]
    history = {h["id"]: h for h in job.snapshot_history}
    for row in shown:
        taken = history[int(row[0])]
        assert float(row[2].replace(",", "")) == round(taken["duration"] * 1000, 1)
        assert int(row[3].replace(",", "")) == taken["entries"]
    assert kept and kept[0].snapshot_id == job.last_snapshot.snapshot_id  # type: ignore[union-attr]
    gate.open()
    page.locator("#resume").click()
    job._finished.wait(60)
    wait_for_state(page, "completed")
    assert sorted(job.join(1).result("sink")) == [(k, 10) for k in range(100)]


def test_actions_need_the_pages_token_and_the_servers_own_host(server: WebServer, tmp_path: Path) -> None:
    """A cross-site form post (no token) and a request for another host name (DNS rebinding) are
    refused; the job goes on."""
    gate = Gate(tmp_path / "gate", hold_at=10)
    job = LocalRunner(1).submit(counted_dag(gated_stream(gate, count=100)), JobConfig(name="kept"))
    try:
        key = server.registry.add(job)
        assert httpx.post(f"{server.url}jobs/{key}/cancel", data={"token": "guess"}).status_code == 403
        assert httpx.post(f"{server.url}jobs/{key}/cancel").status_code == 403
        assert httpx.get(server.url, headers={"Host": "attacker.example"}).status_code == 400
        assert httpx.get(f"{server.url}jobs/999").status_code == 404
        assert httpx.get(f"{server.url}jobs/..%2F..%2Fetc%2Fpasswd").status_code == 404
        assert job.status is JobStatus.RUNNING
        page_html = httpx.get(f"{server.url}jobs/{key}").text
        token = re.search(r'name=token value="([^"]+)"', page_html)
        assert token is not None
        done = httpx.post(f"{server.url}jobs/{key}/cancel", data={"token": token.group(1)})
        assert done.status_code == 303 and job.status is JobStatus.CANCELLED
    finally:
        gate.open()


def test_per_vertex_watermarks_are_the_jobs(server: WebServer, page: Any) -> None:
    dag = DAG()
    source = dag.new_vertex("events", generator_stream(count=500, timestamp_fn=lambda x: x * 10))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, sink))
    job = LocalRunner(1).run(dag, JobConfig(name="timed"), timeout=60)
    watermark = job.metrics()["sink"]["input_watermark"]  # the last one the sink accepted
    assert 0 < watermark <= 4990
    page.goto(server.url)
    page.locator("#jobs a", has_text="timed").click()
    cell = page.locator('tr[data-vertex="sink"] [data-field="watermark_text"]')
    assert int(cell.inner_text().replace(",", "")) == watermark
    source_watermark = job.metrics()["events"].get("input_watermark")  # a source: none comes in
    shown = page.locator('tr[data-vertex="events"] [data-field="watermark_text"]').inner_text()
    assert shown == ("" if source_watermark is None else f"{source_watermark:,}")

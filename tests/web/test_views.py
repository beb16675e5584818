"""The job page's views in a real browser: a wide DAG scrolls inside the page, back-pressure
colours the vertex a throttled step holds back, watermarks read as times with their lag, the
processors' own counters, the exceptions list with tracebacks, and the throughput charts."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobConfig
from jetspark.core.errors import JobFailedError, RestartableError
from jetspark.processors import collect, from_iterable, generator_stream
from jetspark.processors import map as map_p
from jetspark.runners.local import LocalRunner
from jetspark.web import WebServer
from tests.gates import Gate, gated_pass, gated_stream
from tests.unit.processors.test_windows import SLIDING, window_dag
from tests.waiting import wait_until
from tests.web.browser import wait_for_state


def open_job(page: Any, server: WebServer, name: str) -> None:
    page.goto(server.url)
    page.locator("#jobs a", has_text=name).click()
    page.wait_for_selector("svg.dag")


def cell(page: Any, vertex: str, field: str) -> str:
    text: str = page.locator(f'tr[data-vertex="{vertex}"] [data-field="{field}"]').inner_text()
    return text


def test_a_wide_dag_scrolls_within_the_page(server: WebServer, page: Any) -> None:
    dag = DAG()
    previous = dag.new_vertex("numbers", from_iterable(range(10)))
    for step in range(8):  # 10 vertices in a row: about 4,000 px of DAG
        following = dag.new_vertex(f"step-{step}", map_p(lambda x: x))
        dag.edge(Edge.between(previous, following).distributed())  # not fused away
        previous = following
    dag.edge(Edge.between(previous, dag.new_vertex("sink", collect())))
    LocalRunner(1).run(dag, JobConfig(name="wide"), timeout=60)
    open_job(page, server, "wide")
    width, viewport = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= viewport, f"the page is {width} px wide in a {viewport} px window"
    box = page.evaluate(
        "() => { const d = document.getElementById('dag'); return [d.scrollWidth, d.clientWidth]; }"
    )
    assert box[0] > box[1], "the DAG scrolls inside its own box"


def test_backpressure_colours_the_vertex_a_throttled_step_holds_back(
    server: WebServer, page: Any, tmp_path: Path
) -> None:
    gate = Gate(tmp_path / "gate", hold_at=50)
    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(5000)))
    held = dag.new_vertex("held", gated_pass(gate))
    dag.edge(Edge.between(numbers, held).with_queue_size(16))
    dag.edge(Edge.between(held, dag.new_vertex("sink", collect())))
    job = LocalRunner(1).submit(dag, JobConfig(name="throttled"))
    try:
        open_job(page, server, "throttled")
        # the sampler takes a sample a second: once two fall in the hold, numbers was blocked
        # all the time between them
        page.wait_for_selector('svg.dag g.vertex[data-vertex="numbers"][data-backpressure="high"]')
        assert page.locator('tr[data-vertex="numbers"] td[data-backpressure="high"]').count() == 1
        assert int(cell(page, "numbers", "backpressure_pct")) >= 50
        assert job.metrics()["numbers"]["backpressured_ms"] > 0
        for unhindered in ("held", "sink"):  # their queues downstream have room
            assert (
                page.locator(f'svg.dag g.vertex[data-vertex="{unhindered}"][data-backpressure="ok"]').count()
                == 1
            )
    finally:
        gate.open()
    job.join(60)
    assert len(job.result("sink")) == 5000


def test_watermarks_read_as_times_with_their_lag(server: WebServer, page: Any) -> None:
    start = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC, in milliseconds
    dag = DAG()
    events = dag.new_vertex("events", generator_stream(count=500, timestamp_fn=lambda x: start + x * 10))
    dag.edge(Edge.between(events, dag.new_vertex("sink", collect())))
    job = LocalRunner(1).run(dag, JobConfig(name="clocked"), timeout=60)
    watermark = job.metrics()["sink"]["input_watermark"]
    assert start < watermark <= start + 4990
    before = time.time()
    open_job(page, server, "clocked")
    page.wait_for_function(
        '() => document.querySelector(\'tr[data-vertex="sink"] [data-field="watermark_lag"]\')?.textContent'
    )
    expected = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(watermark / 1000)) + f".{watermark % 1000:03d}"
    assert cell(page, "sink", "watermark_text") == expected
    lag = float(cell(page, "sink", "watermark_lag").replace(",", ""))
    assert before - watermark / 1000 - 1 <= lag <= time.time() - watermark / 1000 + 1


def test_late_items_dropped_and_the_processors_own_counters_are_shown(server: WebServer, page: Any) -> None:
    rng = random.Random(11)
    events = [(rng.randrange(0, 300), rng.choice("abc")) for _ in range(300)]
    job = LocalRunner(1).run(window_dag(events, SLIDING, 20, 1), JobConfig(name="late"), timeout=60)
    dropped = job.metrics()["windows-frames"]["late_items_dropped"]
    assert dropped > 0
    open_job(page, server, "late")
    page.wait_for_function(
        '() => document.querySelector(\'tr[data-vertex="windows-frames"] [data-field="custom_text"]\')?.textContent'
    )
    assert cell(page, "windows-frames", "custom_text") == f"late_items_dropped {dropped:,}"
    assert cell(page, "sink", "custom_text") == ""  # a collecting sink counts nothing of its own


class FailsOnce(AbstractProcessor):
    """Asks for a restart at its first item, once per marker file; then passes items on."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not self.marker.exists():
            self.marker.write_text("failed once")
            raise RestartableError("the first attempt breaks")
        return self.try_emit(item)


class Breaks(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        raise ValueError(f"cannot take {item!r}")


def test_exceptions_list_restarts_and_the_failure_with_tracebacks(
    server: WebServer, page: Any, tmp_path: Path
) -> None:
    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(10)))
    flaky = dag.new_vertex("flaky", lambda: FailsOnce(tmp_path / "marker"))
    dag.edge(Edge.between(numbers, flaky))
    dag.edge(Edge.between(flaky, dag.new_vertex("sink", collect())))
    LocalRunner(1).run(dag, JobConfig(name="flaky"), timeout=60)
    open_job(page, server, "flaky")
    wait_for_state(page, "completed")
    page.wait_for_selector("#exceptions .exception")
    entries = page.locator("#exceptions .exception")
    assert entries.count() == 1 and page.locator("#exception-count").inner_text() == "1"
    line = entries.first.locator("p").inner_text()
    assert "restart 1" in line and "the first attempt breaks" in line and "'flaky'" in line, line
    entries.first.locator("summary").click()
    trace = entries.first.locator("pre").inner_text()
    assert "RestartableError: the first attempt breaks" in trace
    assert 'raise RestartableError("the first attempt breaks")' in trace  # the user's own line

    broken = DAG()
    source = broken.new_vertex("numbers", from_iterable(range(3)))
    broken.edge(Edge.between(source, broken.new_vertex("breaks", Breaks)))
    with pytest.raises(JobFailedError):
        LocalRunner(1).run(broken, JobConfig(name="broken"), timeout=60)
    open_job(page, server, "broken")
    wait_for_state(page, "failed")
    page.wait_for_selector("#exceptions .exception")
    line = page.locator("#exceptions .exception p").first.inner_text()
    assert "job failed" in line and "cannot take 0" in line, line
    trace = page.locator("#exceptions .exception pre").first.text_content() or ""
    assert "ValueError: cannot take 0" in trace and "raise ValueError(" in trace


def test_throughput_charts_show_each_vertex_over_time(server: WebServer, page: Any, tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=300)
    dag = DAG()
    numbers = dag.new_vertex("numbers", gated_stream(gate, count=1000))
    dag.edge(Edge.between(numbers, dag.new_vertex("sink", collect())))
    job = LocalRunner(1).submit(dag, JobConfig(name="charted"))
    try:
        key = server.registry.add(job)
        open_job(page, server, "charted")
        images = page.locator("#charts img")
        assert images.count() == 2  # a chart per vertex; no snapshots, no duration chart
        wait_until(lambda: len(server.registry.history(key).series("numbers")[0]) >= 2, "two rates sampled")
        chart = httpx.get(f"{server.url}jobs/{key}/charts/throughput/0.svg")
        assert chart.headers["content-type"].startswith("image/svg+xml")
        assert "numbers" in chart.text and "<script" not in chart.text
        points = re.search(r'<polyline class="in" points="([^"]*)"', chart.text)
        assert points is not None and len(points.group(1).split()) >= 2
        page.wait_for_function(
            "() => [...document.querySelectorAll('#charts img')].every(i => i.complete && i.naturalWidth === 300)"
        )
        assert httpx.get(f"{server.url}jobs/{key}/charts/throughput/2.svg").status_code == 404
    finally:
        gate.open()
    job.join(60)

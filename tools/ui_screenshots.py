"""Screenshots of the web UI for docs/web-ui.md: `python tools/ui_screenshots.py [docs/images]`;
with `--spark`, the pages of a batch job and of a job in epochs on an embedded Spark `local[2]`
(with Spark's UI on) instead.

Runs three small jobs on the local runner (one completed, one cancelled, one still running,
slowed by its map step, so that its source is back-pressured, and restarted once), serves the UI
on a free loopback port and photographs the jobs list and the running job's page with Debian's
headless chromium (Playwright, `executable_path`).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.core.errors import RestartableError
from jetspark.processors import aggregate_by_key, collect, counting, flat_map, generator_stream, write_jsonl
from jetspark.runners.local import LocalRunner
from jetspark.web import serve

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests package
from tests.web.browser import CHROMIUM, CHROMIUM_ARGS


def slow_tens(x: int) -> list[int]:
    """Eight items per number, slowly: the step emits fewer numbers' worth per call than its
    source sends, so the source waits for room (back-pressure)."""
    time.sleep(0.0005)
    return [x // 1000] * 8


_failed: list[bool] = []


def flaky_thousands(x: int) -> list[int]:
    """`slow_tens`, but the first call at item 10,000 asks for a restart (for the exceptions list)."""
    if x == 10_000 and not _failed:
        _failed.append(True)
        raise RestartableError("a flaky step: item 10,000 failed once")
    return slow_tens(x)


def now_millis(_item: Any) -> int:
    """Event time = the wall clock, in milliseconds: the watermark reads as a time."""
    return int(time.time() * 1000)


def demo(count: int, name: str, flaky: bool = False) -> DAG:
    dag = DAG()
    numbers = dag.new_vertex("numbers", generator_stream(count=count, timestamp_fn=now_millis))
    tens = dag.new_vertex("thousands", flat_map(flaky_thousands if flaky else slow_tens), 2)
    dag.edge(Edge.between(numbers, tens).distributed())
    counted = aggregate_by_key(dag, "count", tens, lambda k: k, counting())
    dag.edge(Edge.between(counted, dag.new_vertex("sink", collect())).with_priority(0))
    return dag


def main(target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    ui = serve(port=0)
    runner = LocalRunner(2)
    runner.run(demo(5_000, "small"), JobConfig(name="warm-up"))
    cancelled = runner.submit(demo(1_000_000, "big"), JobConfig(name="cancelled-one"))
    time.sleep(0.5)
    cancelled.cancel()
    config = JobConfig(
        name="thousands",
        processing_guarantee=ProcessingGuarantee.AT_LEAST_ONCE,
        snapshot_interval_millis=2000,
    )
    running = runner.submit(demo(2_000_000, "big", flaky=True), config)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 420})
        page.goto(ui.url)
        time.sleep(2.5)
        page.screenshot(path=str(target / "web-ui-jobs.png"), full_page=True)
        page.set_viewport_size({"width": 1560, "height": 900})
        page.locator("#jobs a", has_text="thousands").click()
        time.sleep(25)  # a few snapshots, and 25 s of charts
        page.screenshot(path=str(target / "web-ui-job.png"), full_page=True)
        browser.close()
    running.cancel()
    ui.stop()


def spark_page(target: Path) -> None:
    import os

    os.environ["JETSPARK_UI"] = "127.0.0.1:0"  # embedded sessions then start Spark's UI too
    from jetspark.runners.spark import SparkRunner, get_session

    spark = get_session("local[2]")
    ui = serve(port=0)
    job = SparkRunner(spark).submit(demo(400_000, "big"), JobConfig(name="thousands-on-spark"))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1560, "height": 900})
        page.goto(ui.url)
        page.locator("#jobs a", has_text="thousands-on-spark").click(timeout=60_000)
        page.wait_for_selector("#stages tr", timeout=120_000)
        time.sleep(6)
        page.screenshot(path=str(target / "web-ui-spark-job.png"), full_page=True)
        job.cancel()
        checkpoints = tempfile.mkdtemp(prefix="jetspark-screenshots-")
        config = JobConfig(
            name="streaming-on-spark",
            processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
            snapshot_interval_millis=2000,
            checkpoint_root=checkpoints,
        )
        streaming = DAG()
        numbers = streaming.new_vertex(
            "numbers", generator_stream(items_per_second=20_000, timestamp_fn=now_millis)
        )
        counted = aggregate_by_key(streaming, "count", numbers, lambda x: x % 10, counting())
        streaming.edge(Edge.between(counted, streaming.new_vertex("sink", collect())))
        files = streaming.new_vertex("files", write_jsonl(tempfile.mkdtemp(prefix="jetspark-screenshots-")))
        streaming.edge(Edge.from_(numbers, 1).to(files))  # its bytes: the epochs' sink bytes
        epochs = SparkRunner(spark).submit(streaming, config)
        page.goto(ui.url)
        page.locator("#jobs a", has_text="streaming-on-spark").click(timeout=60_000)
        page.wait_for_function(
            "() => Number(document.querySelector('[data-field=\"epochs.committed\"]').textContent) >= 12",
            timeout=300_000,
        )
        time.sleep(2)
        page.screenshot(path=str(target / "web-ui-spark-epochs.png"), full_page=True)
        browser.close()
    epochs.cancel()
    ui.stop()
    spark.stop()


if __name__ == "__main__":
    words = [w for w in sys.argv[1:] if w != "--spark"]
    folder = Path(words[0] if words else "docs/images")
    if "--spark" in sys.argv[1:]:
        spark_page(folder)
    else:
        main(folder)

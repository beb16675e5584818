"""Screenshots of the web UI for docs/web-ui.md: `python tools/ui_screenshots.py [docs/images]`;
with `--spark`, the page of a job on an embedded Spark `local[2]` (with Spark's UI on) instead.

Runs three small jobs on the local runner (one completed, one cancelled, one still running,
slowed by its map step), serves the UI on a free loopback port and photographs the jobs list and
the running job's page with Debian's headless chromium (Playwright, `executable_path`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from jetspark import DAG, Edge, JobConfig
from jetspark.processors import aggregate_by_key, collect, counting, from_iterable
from jetspark.processors import map as map_p
from jetspark.runners.local import LocalRunner
from jetspark.web import serve

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests package
from tests.web.browser import CHROMIUM, CHROMIUM_ARGS


def slow_tens(x: int) -> int:
    time.sleep(0.0005)
    return x // 1000


def demo(count: int, name: str) -> DAG:
    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(count)))
    tens = dag.new_vertex("thousands", map_p(slow_tens), 2)
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
    running = runner.submit(demo(2_000_000, "big"), JobConfig(name="thousands"))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 420})
        page.goto(ui.url)
        time.sleep(2.5)
        page.screenshot(path=str(target / "web-ui-jobs.png"), full_page=True)
        page.set_viewport_size({"width": 1560, "height": 900})
        page.locator("#jobs a", has_text="thousands").click()
        time.sleep(3.5)
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
        browser.close()
    job.cancel()
    ui.stop()
    spark.stop()


if __name__ == "__main__":
    words = [w for w in sys.argv[1:] if w != "--spark"]
    folder = Path(words[0] if words else "docs/images")
    if "--spark" in sys.argv[1:]:
        spark_page(folder)
    else:
        main(folder)

"""The page of a job in epochs, in Chromium: the running epoch's counts rise while it runs (its
tasks report them; the vertices table and the epochs table show them before any commit), and each
committed epoch shows its items, state size, sink bytes and commit time, each aborted one its
cause. First with a stand-in handle fed real datagrams (fast, no Spark), then on Spark."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from jetspark import DAG, Edge
from jetspark.processors import collect, generator_stream
from jetspark.runners.spark.epoch_stats import EpochLedger
from jetspark.runners.spark.live import LiveMetrics, LiveReporter
from jetspark.runners.spark.records import DriverReports
from jetspark.web import WebServer
from tests.gates import Gate
from tests.web.browser import wait_for_figure, wait_for_state
from tests.web.epoch_stand_in import EpochJobStandIn
from tests.web.test_cli_ui import Command, on_spark, open_the_job, start

__all__ = ["start"]  # the fixture, shared with test_cli_ui

JOB = Path(__file__).with_name("epoch_job.py")
RUNNING = '#epoch-list tr[data-outcome="running"]'


def running_field(page: Any, field: str, value: str, timeout: float = 120) -> None:
    """Wait until the running epoch's row shows `value` as `field`."""
    page.wait_for_function(
        f"() => document.querySelector('{RUNNING} [data-field=\"{field}\"]')?.textContent === '{value}'",
        timeout=timeout * 1000,
    )


def number(text: str) -> float:
    return float(text.replace(",", "")) if text.strip() else 0.0


def test_the_running_epochs_reported_counts_rise_then_its_commit_and_an_abort_are_listed(
    server: WebServer, page: Any
) -> None:
    dag = DAG()
    numbers = dag.new_vertex("numbers", generator_stream())
    dag.edge(Edge.between(numbers, dag.new_vertex("sink", collect())))
    live = LiveMetrics("127.0.0.1")
    stats = EpochLedger.of_dag(dag, live)
    job = EpochJobStandIn("stand-in", stats, dag=dag)
    task = LiveReporter(live.address, stage=0, member=0, attempt=1, epoch=0)
    try:
        stats.started(0)
        task.send({"numbers": {"emitted": 100}, "sink": {"received": 100}})
        page.goto(server.url)
        page.locator("#jobs a", has_text="stand-in").click()
        running_field(page, "items_out", "100")
        wait_for_figure(page, "sink", "received", "100")
        task.send({"numbers": {"emitted": 250, "backpressured_ms": 900}, "sink": {"received": 250}})
        running_field(page, "items_in", "250")
        running_field(page, "items_out", "250")
        wait_for_figure(page, "sink", "received", "250")
        outcome = DriverReports(["numbers", "sink"])
        outcome.metrics["numbers"]["emitted"] = 250
        outcome.metrics["sink"].update(received=250, bytes_written=2048)
        outcome.snapshot_files = [{"size": 90, "entries": 4}]
        with stats.commit(0, outcome):
            job.committed = {
                "numbers": {"received": 0, "emitted": 250},
                "sink": {"received": 250, "emitted": 0},
            }
            job.epochs_committed = 1
        stats.started(1)
        stats.aborted(1, "stage 0 member 0: the task was stopped")
        job.epochs_aborted = 1
        aborted = '#epoch-list tr[data-outcome="aborted"] [data-field="cause"]'
        page.wait_for_function(
            f"() => document.querySelector('{aborted}')?.textContent === 'stage 0 member 0: the task was stopped'"
        )
        row = page.locator('#epoch-list tr[data-outcome="committed"]')
        assert row.count() == 1 and page.locator(RUNNING).count() == 0
        shown = {
            field: row.locator(f'[data-field="{field}"]').inner_text()
            for field in ("epoch", "items_in", "items_out", "state_bytes", "state_entries", "sink_bytes")
        }
        assert shown == {
            "epoch": "0",
            "items_in": "250",
            "items_out": "250",
            "state_bytes": "90",
            "state_entries": "4",
            "sink_bytes": "2,048",
        }
        assert number(row.locator('[data-field="commit_ms"]').inner_text()) >= 0
        assert page.locator('#epoch-facts [data-field="epochs.committed"]').inner_text() == "1"
        wait_for_figure(page, "sink", "received", "250")  # committed once, not also live
    finally:
        task.close()
        stats.close()


@on_spark
def test_an_epochs_live_counts_rise_and_committed_epochs_show_their_figures(
    page: Any, tmp_path: Path, start: Callable[..., Command]
) -> None:
    gate = Gate(tmp_path / "gate", hold_at=100)
    run = start(
        "run",
        "--master",
        "local[1]",
        "--quiet",
        "--ui",
        "--ui-port",
        "0",
        str(JOB),
        gate.path,
        str(tmp_path / "checkpoints"),
        str(tmp_path / "out"),
    )
    open_the_job(page, run.wait_for_url(240), "epoch-page", timeout=200)
    # epoch 0 cannot end while the gate holds: these are its tasks' reports, not a commit's
    running_field(page, "items_out", "100", timeout=200)
    wait_for_figure(page, "files", "received", "100")
    assert page.locator(f"{RUNNING} [data-field='epoch']").inner_text() == "0"
    assert page.locator('#epoch-facts [data-field="epochs.committed"]').inner_text() == "0"
    gate.hold_at(250)
    running_field(page, "items_out", "250")
    wait_for_figure(page, "files", "received", "250")
    assert page.locator(f"{RUNNING} [data-field='epoch']").inner_text() == "0"  # the same epoch
    assert page.locator('#epoch-facts [data-field="epochs.committed"]').inner_text() == "0"
    running_text = page.locator('#epoch-facts [data-field="epochs.running"]').inner_text()
    assert running_text.startswith("epoch 0, "), running_text
    page.wait_for_function(  # the held source's back-pressure, from the same reports
        "() => ['low', 'high'].includes(document.querySelector("
        "'svg.dag g.vertex[data-vertex=\"numbers\"]')?.dataset.backpressure)"
    )
    gate.open()
    page.wait_for_function(
        "() => Number(document.querySelector('#epoch-facts [data-field=\"epochs.committed\"]')"
        "?.textContent) >= 3",
        timeout=200_000,
    )
    committed = page.locator('#epoch-list tr[data-outcome="committed"]')
    assert committed.count() >= 3
    for row in committed.all():
        shown = {
            field: row.locator(f'[data-field="{field}"]').inner_text()
            for field in (
                "items_in",
                "items_out",
                "state_bytes",
                "state_entries",
                "sink_bytes",
                "commit_ms",
                "duration_s",
                "span_s",
                "sources_idle",
            )
        }
        assert number(shown["items_in"]) > 0 and number(shown["items_out"]) > 0, shown
        assert number(shown["state_bytes"]) > 0 and number(shown["state_entries"]) >= 1, shown
        assert number(shown["sink_bytes"]) > 0, shown  # each epoch's items became a file
        assert number(shown["commit_ms"]) > 0 and number(shown["duration_s"]) > 0, shown
        assert number(shown["span_s"]) > 0 and shown["sources_idle"].strip(), shown
        assert 0 <= number(shown["sources_idle"]) <= 1, shown
    first = committed.last  # epoch 0: its 250 held items and whatever followed the opening
    assert first.locator('[data-field="epoch"]').inner_text() == "0"
    assert number(first.locator('[data-field="items_out"]').inner_text()) >= 250
    page.locator("#cancel").click()
    wait_for_state(page, "cancelled", timeout=120)
    code, out = run.finish(120)
    assert code == 1 and "job 'epoch-page' was cancelled" in out, out

"""The page of a job in epochs on Spark, in Chromium: the running epoch's counts rise while it
runs (its tasks report them; the vertices table and the epochs table show them before any commit),
and each committed epoch shows its items, state size, sink bytes and commit time."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.gates import Gate
from tests.web.browser import wait_for_figure, wait_for_state
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
            )
        }
        assert number(shown["items_in"]) > 0 and number(shown["items_out"]) > 0, shown
        assert number(shown["state_bytes"]) > 0 and number(shown["state_entries"]) >= 1, shown
        assert number(shown["sink_bytes"]) > 0, shown  # each epoch's items became a file
        assert number(shown["commit_ms"]) > 0 and number(shown["duration_s"]) > 0, shown
    first = committed.last  # epoch 0: its 250 held items and whatever followed the opening
    assert first.locator('[data-field="epoch"]').inner_text() == "0"
    assert number(first.locator('[data-field="items_out"]').inner_text()) >= 250
    page.locator("#cancel").click()
    wait_for_state(page, "cancelled", timeout=120)
    code, out = run.finish(120)
    assert code == 1 and "job 'epoch-page' was cancelled" in out, out

"""`jetspark run --ui` as a person uses it: start the job, open the address the command prints in
a browser, watch the figures, press cancel; on Spark, follow the link to Spark's own UI."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gates import Gate
from tests.waiting import wait_until
from tests.web.browser import wait_for_figure, wait_for_state

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("gated_job.py")


class Command:
    """`jetspark ...` in a subprocess, its standard output and error read together (spark-submit
    pipes its Python driver's error stream into its output); `url` is the web UI address printed."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jetspark.cli.main", *args],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.output: list[str] = []
        self._url = threading.Event()
        self.url = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            found = re.search(r"web UI at (http://\S+)", line)
            if found and not self.url:
                self.url = found.group(1)
                self._url.set()

    def wait_for_url(self, timeout: float) -> str:
        assert self._url.wait(timeout), "".join(self.output)
        return self.url

    def printed(self) -> str:
        return "".join(self.output)

    def finish(self, timeout: float) -> tuple[int, str]:
        """Exit code and everything printed."""
        self.process.wait(timeout)
        self._reader.join(10)
        return self.process.returncode, "".join(self.output)


@pytest.fixture
def start() -> Iterator[Callable[..., Command]]:
    """`start(*args)` runs `jetspark *args`; whatever still runs at the end of the test is killed."""
    started: list[Command] = []

    def run(*args: str) -> Command:
        started.append(Command(*args))
        return started[-1]

    yield run
    for each in started:
        if each.process.poll() is None:
            each.process.kill()
            each.process.wait(30)


def on_spark(test: Callable[..., None]) -> Callable[..., None]:
    """A test that starts a Spark driver of its own: marked spark and slow, with 300 s."""
    marked: Callable[..., None] = pytest.mark.spark(pytest.mark.slow(pytest.mark.timeout(300)(test)))
    return marked


def open_the_job(page: Any, url: str, name: str, timeout: float = 30) -> None:
    """Open the jobs list and, once the job is in it (the list refreshes itself), its page."""
    page.goto(url)
    page.locator("#jobs a", has_text=name).click(timeout=timeout * 1000)
    page.wait_for_selector("svg.dag")


def test_run_local_with_ui_then_cancel_in_the_browser(
    page: Any, tmp_path: Path, start: Callable[..., Command]
) -> None:
    gate = Gate(tmp_path / "gate", hold_at=200)
    run = start("run", "--local", "--quiet", "--ui", "--ui-port", "0", str(JOB), gate.path, "watched")
    url = run.wait_for_url(60)
    assert url.startswith("http://127.0.0.1:")
    open_the_job(page, url, "watched")
    wait_for_figure(page, "numbers", "emitted", "200")
    page.locator("#cancel").click()
    wait_for_state(page, "cancelled")
    code, out = run.finish(60)
    assert code == 1 and "job 'watched' was cancelled" in out and "Traceback" not in out, out
    assert "watched: [" not in out  # the job file did not go on as if the job had completed


def test_a_job_suspended_in_the_browser_waits_there_to_be_resumed(
    page: Any, tmp_path: Path, start: Callable[..., Command]
) -> None:
    """Suspended is not done: the command says how to resume, keeps the UI up, and the resume
    button continues the job to its end."""
    gate = Gate(tmp_path / "gate", hold_at=300)
    checkpoints = str(tmp_path / "checkpoints")
    run = start(
        "run", "--local", "--quiet", "--ui", "--ui-port", "0", str(JOB), gate.path, "paused", checkpoints
    )
    url = run.wait_for_url(60)
    open_the_job(page, url, "paused")
    wait_for_figure(page, "numbers", "emitted", "300")
    page.wait_for_function("() => document.getElementById('suspend')?.disabled === false")
    page.locator("#suspend").click()
    wait_for_state(page, "suspended")
    wait_until(lambda: "is suspended" in run.printed(), "the command to say the job is suspended")
    said = run.printed()
    assert f"job 'paused' is suspended, not done: resume (or cancel) it at {url}jobs/1" in said, said
    assert "run the job file again to resume it" in said  # it has a checkpoint store
    assert "paused: [" not in said  # the job file did not go on as if the job had ended
    assert run.process.poll() is None  # the UI is still up: the page answers
    page.reload()
    wait_for_state(page, "suspended")
    page.locator("#resume").click()
    wait_for_state(page, "running")  # held at the gate still: the page cannot miss it
    gate.open()  # now it completes, and the command ends (its UI 5 s later)
    code, out = run.finish(60)
    assert code == 0 and "paused: [(0, 100), (1, 100)" in out and "(9, 100)]" in out, out


def test_ctrl_c_leaves_a_job_suspended_from_the_ui_suspended(
    tmp_path: Path, start: Callable[..., Command]
) -> None:
    gate = Gate(tmp_path / "gate", hold_at=100)
    checkpoints = tmp_path / "checkpoints"
    run = start(
        "run", "--local", "--quiet", "--ui", "--ui-port", "0", str(JOB), gate.path, "left", str(checkpoints)
    )
    url = run.wait_for_url(60)
    token = re.search(r'name=token value="([^"]+)"', httpx.get(f"{url}jobs/1").text)
    assert token is not None
    wait_until(lambda: '"emitted":100' in httpx.get(f"{url}api/jobs/1").text.replace(" ", ""), "100 out")
    wait_until(lambda: httpx.get(f"{url}api/jobs/1").json()["actions"]["suspend"], "suspend allowed")
    answer = httpx.post(f"{url}jobs/1/suspend", data={"token": token.group(1)}, timeout=130)
    assert answer.status_code == 303, answer.text
    wait_until(lambda: "is suspended" in run.printed(), "the command to say the job is suspended")
    run.process.send_signal(signal.SIGINT)
    code, out = run.finish(60)
    assert code == 130 and "Traceback" not in out, out
    assert (checkpoints / "left").is_dir()  # its snapshots stay, for the next run to resume from


@on_spark
def test_run_on_spark_with_ui_links_to_the_spark_ui_and_cancels(
    page: Any, tmp_path: Path, start: Callable[..., Command]
) -> None:
    gate = Gate(tmp_path / "gate", hold_at=300)
    run = start(
        "run", "--master", "local[1]", "--quiet", "--ui", "--ui-port", "0", str(JOB), gate.path, "sparked"
    )
    open_the_job(page, run.wait_for_url(240), "sparked", timeout=200)  # after Spark has started
    wait_for_state(page, "running")
    page.wait_for_selector("#spark-links a", timeout=120_000)
    link = page.locator("#spark-links a").first
    spark_job = link.get_attribute("href")
    assert spark_job is not None and re.search(r"/jobs/job/\?id=\d+$", spark_job), spark_job
    page.wait_for_selector("#stages tr")  # the Spark stages with their task counts
    spark_page = page.context.new_page()
    spark_page.goto(spark_job)
    assert "jetspark job sparked" in spark_page.content()  # Spark's page of this job's Spark job
    spark_page.close()
    page.locator("#cancel").click()
    wait_for_state(page, "cancelled", timeout=120)
    code, out = run.finish(120)
    assert code == 1 and "job 'sparked' was cancelled" in out, out


@on_spark
def test_submit_with_ui_serves_the_job_run_by_spark_submit(
    page: Any, tmp_path: Path, start: Callable[..., Command]
) -> None:
    gate = Gate(tmp_path / "gate", hold_at=100)
    submit = start(
        "submit",
        "--quiet",
        "--ui",
        "--ui-port",
        "0",
        "--master",
        "local[1]",
        str(JOB),
        gate.path,
        "submitted",
    )
    open_the_job(page, submit.wait_for_url(240), "submitted", timeout=200)
    wait_for_state(page, "running")
    gate.open()  # the job completes; the page shows it before the driver exits (the UI lingers)
    wait_for_state(page, "completed", timeout=120)
    assert page.locator('tr[data-vertex="sink"] [data-field="received"]').inner_text() == "10"
    code, out = submit.finish(120)
    assert code == 0 and "submitted: [(0, 100), (1, 100)" in out, out


@on_spark
def test_a_job_in_epochs_on_spark_shows_its_epochs_and_bounds_its_links(
    page: Any, tmp_path: Path, start: Callable[..., Command]
) -> None:
    gate = Gate(tmp_path / "gate", hold_at=300)
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
        "epochs",
        str(tmp_path / "checkpoints"),  # EXACTLY_ONCE: on Spark, in epochs of 0.1 s
    )
    url = run.wait_for_url(240)
    open_the_job(page, url, "epochs", timeout=200)
    assert page.locator("#job td", has_text="spark (epochs)").count() == 1
    committed = '#epoch-facts [data-field="epochs.committed"]'
    page.wait_for_function(  # more epochs, so more Spark jobs, than the links listed
        f"() => Number(document.querySelector('{committed}')?.textContent) >= 12", timeout=200_000
    )
    rows = page.locator('#epoch-list tbody tr[data-outcome="committed"]')
    assert 2 <= rows.count() <= 20
    durations = [row.locator('[data-field="duration_s"]').inner_text() for row in rows.all()]
    assert all(float(d) > 0 for d in durations), durations  # from its start to its commit
    assert float(page.locator('#epoch-facts [data-field="epochs.last_duration_s"]').inner_text()) > 0
    page.wait_for_function("() => document.querySelectorAll('#spark-links li').length === 10")
    assert int(page.locator('[data-field="spark_links_left_out"]').inner_text()) >= 2
    chart = httpx.get(f"{url}jobs/1/charts/durations.svg").text
    assert "epoch duration" in chart and chart.count('<rect class="bar"') >= 2
    page.locator("#cancel").click()
    wait_for_state(page, "cancelled", timeout=120)
    code, out = run.finish(120)
    assert code == 1 and "job 'epochs' was cancelled" in out, out

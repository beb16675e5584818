"""Seed 004 audit (Prism's small web UI for jobs) in a real browser: the jobs list follows new
jobs by itself, and a job the quiescence check failed shows why on its page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, Edge, JobConfig
from jetspark.core import AbstractProcessor
from jetspark.core.errors import QuiescenceError
from jetspark.processors import collect, from_iterable
from jetspark.runners.local import LocalRunner
from jetspark.web import WebServer
from tests.gates import Gate, gated_stream
from tests.web.browser import wait_for_state


def chain(source: Any, middle: Any = None) -> DAG:
    dag = DAG()
    numbers = dag.new_vertex("numbers", source)
    sink = dag.new_vertex("sink", collect())
    if middle is None:
        dag.edge(Edge.between(numbers, sink))
    else:
        mid = dag.new_vertex("stuck", middle)
        dag.edge(Edge.between(numbers, mid)).edge(Edge.between(mid, sink))
    return dag


def test_the_jobs_list_shows_a_job_submitted_after_it_was_opened(
    server: WebServer, page: Any, tmp_path: Path
) -> None:
    """docs/web-ui.md: the jobs list has "every job this driver submitted since the UI started
    ... It refreshes itself every second": no reload."""
    page.goto(server.url)
    page.wait_for_selector("#jobs", state="attached")
    assert page.locator("#jobs tr", has_text="late-comer").count() == 0
    gate = Gate(tmp_path / "gate", hold_at=5)
    job = LocalRunner(3).submit(chain(gated_stream(gate, count=10)), JobConfig(name="late-comer"))
    try:
        row = page.locator("#jobs tr", has_text="late-comer")
        row.wait_for()
        page.wait_for_function(
            "() => [...document.querySelectorAll('#jobs tr')].some(tr => tr.textContent.includes('late-comer')"
            " && tr.querySelector('[data-field=\"state\"]').textContent === 'running')"
        )
        assert row.locator('[data-field="members"]').inner_text() == "3"
        assert row.locator('[data-field="id"]').inner_text() == str(job.job_id)
        assert row.locator('[data-field="submitted_text"]').inner_text() != ""
        first = float(row.locator('[data-field="duration"]').inner_text().replace(",", ""))
        page.wait_for_function(  # the duration of a running job goes up by itself
            "(first) => { const tr = [...document.querySelectorAll('#jobs tr')]"
            ".find(t => t.textContent.includes('late-comer'));"
            " return tr && parseFloat(tr.querySelector('[data-field=\"duration\"]').textContent) > first; }",
            arg=first,
        )
        gate.open()
        job.join(60)
        page.wait_for_function(
            "() => [...document.querySelectorAll('#jobs tr')].some(tr => tr.textContent.includes('late-comer')"
            " && tr.querySelector('[data-field=\"state\"]').textContent === 'completed')"
        )
    finally:
        gate.open()


class NeverCompletes(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return True

    def complete(self) -> bool:
        return False


def test_a_job_the_quiescence_check_failed_shows_the_dump_on_its_page(server: WebServer, page: Any) -> None:
    """A stuck job's reason (docs/quiescence.md's dump, naming the processor) reaches the person
    watching the UI: the state, the error line and the exceptions list."""
    with pytest.raises(QuiescenceError):
        LocalRunner(1).run(
            chain(from_iterable(range(10)), NeverCompletes),
            JobConfig(name="stuck-job", quiescence_timeout_seconds=0.3),
        )
    page.goto(server.url)
    page.locator("#jobs a", has_text="stuck-job").click()
    wait_for_state(page, "failed")
    error = page.locator("#error").inner_text()
    assert "QuiescenceError" in error
    assert "nothing in progress for 0.3 s" in error
    assert "vertex 'stuck' processor #0" in error and "every input ended, not completed" in error
    exceptions = page.locator("#exceptions").inner_text()
    assert "nothing in progress for 0.3 s" in exceptions

"""Seed 004 audit (Prism's small web UI for jobs): defaults and limits docs/web-ui.md states that
no other test pins down, without a server or a browser."""

from __future__ import annotations

import inspect
from typing import Any

from jetspark.cli.main import _parser
from jetspark.runners.job import JobStatus
from jetspark.web import pages, serve, server
from jetspark.web.registry import MAX_JOBS, JobRegistry


class StubJob:
    """What the registry reads of a handle when it adds one: `ended` and `status`."""

    def __init__(self, ended: bool) -> None:
        self.ended = ended
        self.status = JobStatus.COMPLETED if ended else JobStatus.RUNNING


def test_the_registry_keeps_the_last_200_jobs_dropping_the_oldest_ended_first() -> None:
    """docs/web-ui.md: "The UI serves the jobs of the driver it runs in; it keeps the last 200
    jobs". A running job is never dropped for a newer one."""
    assert MAX_JOBS == 200
    registry = JobRegistry(observe=False, sample=False)
    running = StubJob(ended=False)
    first = registry.add(running)  # type: ignore[arg-type]
    ended: list[Any] = [StubJob(ended=True) for _ in range(250)]
    keys = [registry.add(job) for job in ended]
    numbers = registry.numbers()
    assert len(numbers) == 200
    assert first in numbers and registry.get(first) is running
    assert numbers[-199:] == keys[-199:]  # the newest 199 ended jobs, in order of submission
    assert registry.get(keys[0]) is None
    assert registry.add(ended[-1]) == keys[-1]  # a job is registered once
    registry.close()


def test_serve_binds_loopback_port_8740_by_default() -> None:
    """docs/web-ui.md: `serve(host="127.0.0.1", port=8740, jobs=())`, and the command prints
    `http://127.0.0.1:8740/`."""
    parameters = inspect.signature(serve).parameters
    assert parameters["host"].default == "127.0.0.1"
    assert parameters["port"].default == 8740
    assert parameters["jobs"].default == ()


def test_run_and_submit_serve_on_loopback_port_8740_unless_told() -> None:
    for command in (["run", "--ui", "job.py"], ["submit", "--ui", "job.py"]):
        args = _parser().parse_args(command)
        assert args.ui and args.ui_host == "127.0.0.1" and args.ui_port == 8740 and not args.ui_keep


def test_the_ui_serves_five_seconds_after_the_job_file_ends_by_default() -> None:
    assert server.LINGER_SECONDS == 5


def test_pages_refresh_every_second_and_charts_every_five_seconds() -> None:
    """docs/web-ui.md: the jobs list "refreshes itself every second"; the script "asks the JSON
    API every second"; charts are "asked for again every 5 seconds"."""
    listed = pages.jobs_page([])
    assert "every(1000, refreshJobs);" in listed
    assert "fetch('/api/jobs'" in listed
    job = {
        "key": 3, "name": "j", "id": "x", "state": "running", "runner": "local", "members": 1,
        "submitted_text": "", "duration": 0.0, "error": None, "actions": dict.fromkeys(("cancel", "suspend", "resume"), False),
        "snapshots": {}, "snapshot_list": [], "has_snapshots": False, "epochs": None, "exceptions": [],
        "vertices": [], "chart_span_s": 300.0, "spark_links": [], "spark_links_left_out": 0, "spark_ui": None,
    }  # fmt: skip
    html = pages.job_page(job, "", "token")
    assert "every(1000, () => refreshJob(3));" in html
    assert "every(5000, refreshCharts);" in html
    assert "<script src" not in html and "<link" not in html  # nothing fetched from elsewhere


def test_the_web_ui_reads_jobs_through_the_handle_and_loads_no_runner() -> None:
    """Seed 004: the web package "will primarily abstract access to pipeline data through a
    JobManagement API client"; docs/architecture.md: read "through the typed `JobHandle` only".
    Importing the UI loads neither runner, nor the CLI, nor pyspark."""
    import subprocess
    import sys

    code = "import sys, jetspark.web\nprint(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
        ).stdout.split()
    )
    assert "jetspark.web.registry" in loaded and "jetspark.runners.job" in loaded
    for forbidden in (
        "jetspark.runners.local",
        "jetspark.runners.spark",
        "jetspark.cli",
        "jetspark.api",
        "pyspark",
    ):
        assert forbidden not in loaded, forbidden

"""Where the web UI listens: loopback unless asked, a wider address only with a warning, and a
port in use is an error naming the address."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from jetspark.cli.main import main
from jetspark.web import WebServer
from jetspark.web.server import is_loopback


def test_a_wider_address_answers_any_host_name() -> None:
    server = WebServer("0.0.0.0", 0)
    try:
        assert server.url.startswith("http://0.0.0.0:")
        answer = httpx.get(f"http://127.0.0.1:{server.port}/api/jobs", headers={"Host": "build-box:1"})
        assert answer.status_code == 200
    finally:
        server.stop()


def test_a_port_in_use_is_an_error_naming_the_address() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(OSError, match=f"web UI: cannot listen on 127.0.0.1:{port}"):
            WebServer("127.0.0.1", port)
    finally:
        taken.close()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("::1", True), ("localhost", True), ("0.0.0.0", False), ("10.1.2.3", False)],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_run_warns_when_the_ui_binds_a_wider_address(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("JETSPARK_UI", "JETSPARK_PROGRESS", "JETSPARK_RUNNER", "JETSPARK_UI_KEEP"):
        monkeypatch.setenv(name, "")  # restored after the test: main() sets them for the job file
    job = tmp_path / "job.py"
    job.write_text("import os\nprint('ui:', os.environ['JETSPARK_UI'])\n")  # runs no job: no UI starts
    assert main(["run", "--local", "--ui", "--ui-host", "0.0.0.0", "--ui-port", "0", str(job)]) == 2
    captured = capsys.readouterr()
    assert "anyone who can reach it can see and cancel your jobs" in captured.err
    assert "ended without calling jetspark.api.run(dag)" in captured.err
    assert "ui: 0.0.0.0:0" in captured.out
    assert main(["run", "--local", "--ui", "--ui-port", "0", str(job)]) == 2
    assert "anyone" not in capsys.readouterr().err


def test_run_with_the_ui_port_taken_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("JETSPARK_UI", "JETSPARK_PROGRESS", "JETSPARK_RUNNER", "JETSPARK_UI_KEEP"):
        monkeypatch.setenv(name, "")
    job = tmp_path / "job.py"
    job.write_text(
        "from jetspark import DAG\nfrom jetspark.api import run\nfrom jetspark.processors import noop\n"
        "dag = DAG()\ndag.new_vertex('v', noop())\nrun(dag)\n"
    )
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = str(taken.getsockname()[1])
        assert main(["run", "--local", "--quiet", "--ui", "--ui-port", port, str(job)]) == 2
    finally:
        taken.close()
    error = capsys.readouterr().err
    assert f"web UI: cannot listen on 127.0.0.1:{port}" in error and "--ui-port" in error, error
    assert "Traceback" not in error

"""Serving the web UI with uvicorn on a thread of the driver, and the one server of the process.

`serve()` binds the socket itself (so a port in use fails at once, in the caller, and port 0
picks a free one), then runs uvicorn on a daemon thread. The UI that `serve_address` starts for a
job file (`--ui`) serves on for `LINGER_SECONDS` after the file ends, so that a browser still sees
how the job ended (cancelled from the page, say); with `JETSPARK_UI_KEEP=1` (`--ui-keep`) it
serves on until Ctrl-C.
"""

from __future__ import annotations

import atexit
import ipaddress
import os
import socket
import sys
import threading
import time

from jetspark.core.errors import JobAlreadyRunningError
from jetspark.environment import UI_KEEP_ENV
from jetspark.runners.job import JobHandle, JobStatus
from jetspark.web.app import create_app
from jetspark.web.registry import JobRegistry

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8740
#: Seconds the `--ui` server serves on after the job file ends.
LINGER_SECONDS = 5.0
#: How often `wait_while_suspended` looks at the job's status (seconds).
SUSPENDED_POLL = 0.2


_current: WebServer | None = None
_current_lock = threading.Lock()


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and `localhost`."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class WebServer:
    """A running web UI: `url`, `registry` (add jobs made before it started), `stop()`, `wait()`."""

    def __init__(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, observe: bool = True) -> None:
        import uvicorn

        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host, port))
        except OSError as error:
            self._socket.close()
            raise OSError(f"web UI: cannot listen on {host}:{port}: {error.strerror or error}") from error
        self._socket.listen(64)
        self.host = host
        self.port = self._socket.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/"
        self.registry = JobRegistry(observe=observe)
        hosts = ["*"] if not is_loopback(host) else ["127.0.0.1", "localhost", "[::1]", "::1"]
        self.app = create_app(self.registry, hosts)
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="jetspark web UI", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._server.started:
            raise RuntimeError(f"web UI: the server on {self.url} did not start")

    def add(self, job: JobHandle) -> int:
        """Show `job` (a job submitted before the server started); returns its number."""
        return self.registry.add(job)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self.registry.close()
        self._socket.close()

    def wait(self, timeout: float | None = None) -> None:
        """Serve until Ctrl-C, or for `timeout` seconds; then stop."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while self._thread.is_alive() and (deadline is None or time.monotonic() < deadline):
                self._thread.join(0.2)
        except KeyboardInterrupt:
            pass
        self.stop()


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, jobs: tuple[JobHandle, ...] = ()) -> WebServer:
    """Serve the web UI of this driver's jobs: every job submitted from now on, and `jobs`.

    Binds to the loopback interface unless `host` says otherwise; a wider address lets anyone who
    reaches it see the jobs and press cancel (the pages take no paths and run no code). Returns the
    running server (`url`, `stop()`); the first server started becomes `current_server()`.
    """
    global _current
    server = WebServer(host, port)
    for job in jobs:
        server.add(job)
    with _current_lock:
        if _current is None:
            _current = server
    return server


def current_server() -> WebServer | None:
    """The server `serve_address` (or the first `serve`) started in this process, if any."""
    return _current


def serve_address(address: str) -> WebServer:
    """Start the process's web UI on `host:port` (`[::1]:port` for IPv6) unless it runs already,
    and say where on standard error. With `JETSPARK_UI_KEEP=1` it serves on at exit until Ctrl-C."""
    with _current_lock:
        running = _current
    if running is not None:
        return running
    host, _, port_text = address.rpartition(":")
    host = host.strip("[]") or DEFAULT_HOST
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"web UI address {address!r}: expected host:port, such as 127.0.0.1:8740") from None
    server = serve(host, port)
    print(f"jetspark: web UI at {server.url}", file=sys.stderr, flush=True)
    keep = os.environ.get(UI_KEEP_ENV) == "1"

    def linger() -> None:
        until = "until Ctrl-C" if keep else f"for {LINGER_SECONDS:g} s (--ui-keep: until Ctrl-C)"
        print(f"jetspark: the job file has ended; web UI still at {server.url} {until}", file=sys.stderr)
        server.wait(None if keep else LINGER_SECONDS)

    atexit.register(linger)
    return server


def wait_while_suspended(job: JobHandle, server: WebServer) -> None:
    """Say on standard error that `job` is suspended and how to resume it, then wait until it is
    no longer suspended (resumed or cancelled from `server`'s page); Ctrl-C leaves it suspended."""
    key = server.add(job)
    if job.capabilities().durable:
        later = "run the job file again to resume it from its last snapshot"
    else:
        later = "its snapshot is in this process only (JobConfig.checkpoint_root keeps it): the job ends"
    print(
        f"jetspark: job {job.name!r} is suspended, not done: resume (or cancel) it at "
        f"{server.url}jobs/{key}; Ctrl-C leaves it suspended ({later})",
        file=sys.stderr,
        flush=True,
    )
    looks = 0
    while job.status is JobStatus.SUSPENDED:
        looks += 1
        # about once a second: the job file run again (as said above) takes the job over
        if looks % 5 == 0 and job.taken_over() and job.status is JobStatus.SUSPENDED:
            raise JobAlreadyRunningError(
                f"job {job.name!r} was taken over by another submit while suspended here; "
                "this process lets it go"
            )
        time.sleep(SUSPENDED_POLL)

"""Per-vertex counts of a running Spark job, sent by its tasks to the driver while they run.

A batch job's exact metrics reach the driver with the tasks' last records, when the Spark job
ends; a job in epochs' with each epoch's commit. For the progress display and the web UI
meanwhile, each task sends its member's counts (items received and emitted, and milliseconds
back-pressured, per vertex of its stage) about once a second in one UDP datagram to a socket the
driver opened for the job, on `spark.driver.host`. Best effort by design: a lost datagram, or a
network that does not let executors reach the driver over UDP, only leaves the figures older;
nothing of the job depends on them. Datagrams are JSON (never unpickled) and carry the job's
random token, so stray or forged packets are ignored.

A task of an epoch tags its reports with the epoch's number; the driver keeps only the reports of
the epoch it `follow`s (the running one), so a late datagram of an epoch that has committed or
aborted never counts twice or counts what was thrown away.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable

_log = logging.getLogger("jetspark.spark.live")

#: Seconds between two reports of one task.
REPORT_INTERVAL = 1.0
#: (host, port, token) of a job's live metrics socket.
Address = tuple[str, int, str]
#: The epoch tag of a batch job's reports (they carry none).
NO_EPOCH = -1
#: What `LiveMetrics.pause` follows: no report has it.
_NONE_FOLLOWED = -2
#: The figures a report carries per vertex, in its order.
FIGURES = ("received", "emitted", "backpressured_ms")


class LiveMetrics:
    """The driver's side: the latest counts of each (stage, member), summed per vertex."""

    def __init__(self, host: str) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_DGRAM)
        self._socket.bind((host, 0))
        self._socket.settimeout(0.2)
        self.address: Address = (host, self._socket.getsockname()[1], secrets.token_hex(8))
        self._lock = threading.Lock()
        self._latest: dict[tuple[int, int], tuple[int, dict[str, list[int]]]] = {}
        self._epoch = NO_EPOCH
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._receive, name="jetspark live metrics", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, host: str) -> LiveMetrics | None:
        """A socket on `host`, or None (logged) when none can be opened there."""
        try:
            return cls(host)
        except OSError as error:
            _log.info("no live metrics: cannot open a UDP socket on %s: %s", host, error)
            return None

    def figures(self) -> dict[str, dict[str, int]]:
        """Per vertex: `received`, `emitted` and `backpressured_ms` so far, over the members that
        reported (in a job in epochs: so far in the epoch followed)."""
        out: dict[str, dict[str, int]] = {}
        with self._lock:
            reports = [counts for _, counts in self._latest.values()]
        for counts in reports:
            for vertex, values in counts.items():
                slot = out.setdefault(vertex, dict.fromkeys(FIGURES, 0))
                for name, value in zip(FIGURES, values):
                    slot[name] += value
        return out

    def reset(self) -> None:
        """Forget every report (the job runs again from the beginning)."""
        with self._lock:
            self._latest.clear()

    def follow(self, epoch: int) -> None:
        """Forget every report and from now on keep only those of `epoch` (it starts)."""
        with self._lock:
            self._latest.clear()
            self._epoch = epoch

    def pause(self) -> None:
        """Forget every report and keep none until the next `follow` (an epoch ended)."""
        self.follow(_NONE_FOLLOWED)

    def close(self) -> None:
        self._closed.set()
        self._thread.join(2)
        self._socket.close()

    def _receive(self) -> None:
        token = self.address[2]
        while not self._closed.is_set():
            try:
                data = self._socket.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                report = json.loads(data)
                if report.get("t") != token:
                    continue
                key, attempt = (int(report["s"]), int(report["m"])), int(report["a"])
                epoch = int(report.get("e", NO_EPOCH))
                counts = {str(v): [int(n) for n in c[: len(FIGURES)]] for v, c in report["v"].items()}
            except (ValueError, KeyError, TypeError, IndexError, AttributeError):
                continue
            with self._lock:
                if epoch != self._epoch:  # an epoch that ended, or one not begun here yet
                    continue
                known = self._latest.get(key)
                if known is None or attempt >= known[0]:  # a retried task's figures replace the old
                    self._latest[key] = (attempt, counts)


class LiveReporter:
    """A task's side: sends its member's counts at most every `interval` seconds (tagged with
    `epoch` in a job in epochs)."""

    def __init__(
        self, address: Address, stage: int, member: int, attempt: int, epoch: int = NO_EPOCH
    ) -> None:
        self._host, self._port, self._token = address
        self._head: dict[str, object] = {"t": self._token, "s": stage, "m": member, "a": attempt}
        if epoch != NO_EPOCH:
            self._head["e"] = epoch
        self._socket: socket.socket | None = None
        self._next = 0.0

    def tick(
        self, counts: Callable[[], dict[str, dict[str, int]]], interval: float = REPORT_INTERVAL
    ) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + interval
        self.send(counts())

    def send(self, counts: dict[str, dict[str, int]]) -> None:
        figures = {v: [c.get(name, 0) for name in FIGURES] for v, c in counts.items()}
        try:
            if self._socket is None:
                family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
                self._socket = socket.socket(family, socket.SOCK_DGRAM)
            self._socket.sendto(json.dumps({**self._head, "v": figures}).encode(), (self._host, self._port))
        except OSError:  # best effort: the figures on the driver just stay older
            pass

    def close(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()

"""The next epoch's RDDs, built while the current epoch runs.

Every epoch is a new Spark job over new RDDs (a shuffle Spark has written once is never run
again, so the RDDs cannot be reused), and building them takes tens of py4j calls: about 50 ms of
an idle driver's time per epoch, more under load, between one epoch's commit and the next one's
start. The RDDs do not depend on the epoch: its spec reaches the tasks with the Spark job's local
property (`epoch_task.SPEC_PROPERTY`), set by the thread that submits the job. So while epoch `e`
runs, a thread builds the RDDs epoch `e + 1` will run on, and `take` hands them over. A build
that failed in the background is done again, in the caller's thread, where its error surfaces;
one that has not finished within `WAIT_SECONDS` is left to end on its own (its result unused) and
the RDDs are built on the spot, so a stuck background build never holds up the epochs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

_log = logging.getLogger("jetspark.spark.prebuild")

T = TypeVar("T")

#: Seconds `take` waits for a background build before it builds on the spot.
WAIT_SECONDS = 30.0


class _Build(threading.Thread, Generic[T]):
    """One background build and its outcome."""

    def __init__(self, build: Callable[[], T], name: str) -> None:
        super().__init__(name=f"jetspark-prebuild-{name}", daemon=True)
        self._make = build
        self.result: T | None = None
        self.failed = False

    def run(self) -> None:
        try:
            self.result = self._make()
        except Exception:  # built again where it is needed, and its error raised there
            self.failed = True
            _log.debug("%s: building the next epoch's RDDs ahead failed", self.name, exc_info=True)


class Prebuilt(Generic[T]):
    """One build ahead of its use (see the module docstring)."""

    def __init__(self, build: Callable[[], T], name: str, wait: float = WAIT_SECONDS) -> None:
        self._build = build
        self._name = name
        self._wait = wait
        self._ahead: _Build[T] | None = None
        #: Builds handed over from the background, and done on the spot (tests, figures).
        self.ahead = 0
        self.on_the_spot = 0

    def take(self) -> T:
        """The build made ahead, or a new one now when none was made, it failed, or it has not
        finished within the wait."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.join(self._wait)
            if ahead.is_alive():
                _log.warning(
                    "%s: building the next epoch's RDDs ahead has taken over %.0f s; building them now",
                    self._name,
                    self._wait,
                )
            elif not ahead.failed and ahead.result is not None:
                self.ahead += 1
                return ahead.result
        self.on_the_spot += 1
        return self._build()

    def start_next(self) -> None:
        """Begin the next build in the background (once: a build already under way stays)."""
        if self._ahead is not None:
            return
        self._ahead = _Build(self._build, self._name)
        self._ahead.start()

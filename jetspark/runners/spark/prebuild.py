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

The build waits a moment before it starts (`start_next(delay)`): started with the epoch's job, its
py4j calls compete with the job's submission and the launch of its first tasks for the driver,
the JVM and the two cores of `local[2]` (measured: the launch took 52-62 ms instead of 40-43).
`take` cuts the wait short, so a late build costs nothing beyond the build itself.
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

    def __init__(self, build: Callable[[], T], name: str, delay: float) -> None:
        super().__init__(name=f"jetspark-prebuild-{name}", daemon=True)
        self._make = build
        self._delay = delay
        self._hurry = threading.Event()
        self.result: T | None = None
        self.failed = False

    def hurry(self) -> None:
        """Start building now, if still waiting for the delay."""
        self._hurry.set()

    def run(self) -> None:
        if self._delay > 0:
            self._hurry.wait(self._delay)
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
            ahead.hurry()
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

    def start_next(self, delay: float = 0.0) -> None:
        """Begin the next build in the background, after `delay` s unless `take` asks for it
        first (once: a build already under way stays)."""
        if self._ahead is not None:
            return
        self._ahead = _Build(self._build, self._name, delay)
        self._ahead.start()

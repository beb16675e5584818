"""The next epoch's RDDs, built while the current epoch runs.

Every epoch is a new Spark job over new RDDs (a shuffle Spark has written once is never run
again, so the RDDs cannot be reused), and building them takes tens of py4j calls: about 50 ms of
an idle driver's time per epoch, more under load, between one epoch's commit and the next one's
start. The RDDs do not depend on the epoch: its spec reaches the tasks with the Spark job's local
property (`epoch_task.SPEC_PROPERTY`), set by the thread that submits the job. So while epoch `e`
runs, a thread builds the RDDs epoch `e + 1` will run on, and `take` hands them over. A build
that failed in the background is done again, in the caller's thread, where its error surfaces.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

_log = logging.getLogger("jetspark.spark.prebuild")

T = TypeVar("T")


class Prebuilt(Generic[T]):
    """One build ahead of its use (see the module docstring)."""

    def __init__(self, build: Callable[[], T], name: str) -> None:
        self._build = build
        self._name = name
        self._thread: threading.Thread | None = None
        self._result: T | None = None
        self._failed = False
        #: Builds handed over from the background, and done on the spot (tests, figures).
        self.ahead = 0
        self.on_the_spot = 0

    def take(self) -> T:
        """The build made ahead, or a new one now when none was made or it failed."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
            result, self._result = self._result, None
            if not self._failed and result is not None:
                self.ahead += 1
                return result
        self.on_the_spot += 1
        return self._build()

    def start_next(self) -> None:
        """Begin the next build in the background (once: a build already under way stays)."""
        if self._thread is not None:
            return
        self._failed = False
        self._result = None
        self._thread = threading.Thread(target=self._run, name=f"jetspark-prebuild-{self._name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._build()
        except Exception:  # built again where it is needed, and its error raised there
            self._failed = True
            _log.debug("%s: building the next epoch's RDDs ahead failed", self._name, exc_info=True)

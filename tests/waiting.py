"""Polling with a deadline, for tests that must observe a running job at some point."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], object], what: str = "condition", timeout: float = 120) -> None:
    """Poll `condition` every 2 ms until it is true; fail naming `what` after `timeout` seconds
    (generous by default: a busy 2-core CI machine runs a job ten or more times slower)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.002)

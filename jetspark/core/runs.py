"""Run ids that order the runs of a job: which of two runs of the same epoch started later.

A Spark epoch can run more than once (a run is aborted, the epoch runs again), and a task of an
aborted run may still be working when the next run has committed: PySpark workers outlive a
cancelled Spark job by up to `spark.python.task.killTimeout`, an executor cut off from the driver
longer. Such a late task must not undo what a later run did. Ordered run ids let it tell: a
transactional sink restoring in run `r` rolls back what older runs left, never what a newer run
prepared (that run's snapshot may be committed, and its transactions still to be committed).

`<epoch, 8 hex><wall clock ns, 16 hex><random, 4 hex>`: fixed width, so the string order is the
order of (epoch, start time). Runs of a later epoch sort after every run of an earlier one
whatever the clocks say; within an epoch, a driver's runs are made one after the other (each
above the last this process made, should the wall clock step back), and a new driver's first run
comes seconds after the old driver's last.
"""

from __future__ import annotations

import re
import secrets
import threading
import time

_ORDERED = re.compile(r"[0-9a-f]{28}")
#: The characters that order two run ids (the random tail only tells equal times apart).
_ORDER_CHARS = 24


_last_ns = 0
_last_lock = threading.Lock()


def ordered_run_id(epoch: int) -> str:
    """A new run id for a run of `epoch`, above every id made before for that epoch or an earlier one."""
    global _last_ns
    with _last_lock:
        _last_ns = max(time.time_ns(), _last_ns + 1)  # a clock stepped back by NTP stays behind
        stamp = _last_ns
    return f"{epoch:08x}{stamp:016x}{secrets.token_hex(2)}"


def is_ordered(run: str) -> bool:
    return _ORDERED.fullmatch(run) is not None


def is_newer_run(run: str, than: str) -> bool:
    """True when both are ordered run ids and `run` started after `than` (see the module
    docstring); False for anything else, such as a hash of an execution id."""
    return is_ordered(run) and is_ordered(than) and run[:_ORDER_CHARS] > than[:_ORDER_CHARS]

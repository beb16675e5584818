"""Ctrl-C while the main thread waits for a job: it is seen at once, and it only raises
KeyboardInterrupt, which `run` turns into a suspend (jobs with snapshots) or a cancel.

Seen at once: a SIGINT sent to the process may be delivered to any of its threads (a worker
thread blocked in a socket read, say). CPython then runs the Python handler in the main thread the
next time that thread runs bytecode, but a main thread blocked in a lock or `Event.wait()` without
a timeout is not woken, and would wait for the job's end, which may never come: `wait_for`
waits in short slices instead.

Only a KeyboardInterrupt: PySpark's `SparkContext` installs a SIGINT handler that cancels every
Spark job of the context, through py4j from inside the handler, before it raises
KeyboardInterrupt. While jetspark waits, that would abort the running epoch that a suspend means
to let commit, and it makes a py4j call at whatever point the main thread was interrupted. So
`run`, and any wait for a job's end (`join`, `suspend`, `cancel`), puts Python's own handler in
place of PySpark's for the time it waits, and puts PySpark's back after. A handler of the user's
own (or SIGINT ignored) is left as it is; so are a user's PySpark actions outside these waits.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

#: The longest a Ctrl-C delivered to another thread waits to be seen by the main thread.
SLICE_SECONDS = 0.1


def _is_pysparks(handler: object) -> bool:
    return callable(handler) and str(getattr(handler, "__module__", "")).startswith("pyspark")


@contextlib.contextmanager
def plain_ctrl_c() -> Iterator[None]:
    """Within the block, SIGINT raises KeyboardInterrupt and does nothing else, if PySpark's
    handler was the one installed (and this is the main thread, the only one that may set it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not _is_pysparks(previous):
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # nobody changed it meanwhile
            signal.signal(signal.SIGINT, previous)


def wait_for(event: threading.Event, timeout: float | None = None) -> bool:
    """`event.wait(timeout)` for a job's end (`join`, `suspend`, `cancel`): woken every
    `SLICE_SECONDS` so that a pending Ctrl-C is raised, and within `plain_ctrl_c`."""
    if threading.current_thread() is not threading.main_thread():
        return event.wait(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    with plain_ctrl_c():
        while True:
            left = SLICE_SECONDS if deadline is None else min(SLICE_SECONDS, deadline - time.monotonic())
            if event.wait(max(left, 0.0)):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

"""Whether a long call blocked, or only waited for a CPU on a busy machine.

The kit fails a cooperative call that takes longer than its limit (default 1 s): such a call
blocks (I/O, a lock, a sleep). On a machine whose cores are busy (a CI runner beside other jobs) a
call can take that long in wall-clock time while it is ready to run all along, waiting in the
run queue. Linux counts that wait per thread (`/proc/self/task/<tid>/schedstat`: time on a CPU,
time waiting for one), so a long call's wall time less its CPU time and its run-queue wait is the
time it blocked. Reading the file costs microseconds, so it is read at most every `REFRESH`
seconds, before a call; a long call compares the reading after it with that one (a window that
begins up to `REFRESH` earlier, which only adds time the thread spent running or waiting).
Elsewhere (no such file) every long call counts as blocked, as before.
"""

from __future__ import annotations

import threading

#: Seconds between two readings taken before calls.
REFRESH = 0.05


class CpuWait:
    """Per-thread readings of (monotonic seconds, CPU ns, run-queue wait ns)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def before_call(self, now: float) -> None:
        """Take a reading if the last one is older than `REFRESH` (cheap otherwise)."""
        last = getattr(self._local, "reading", None)
        if last is None or now - last[0] > REFRESH:
            self._local.reading = _read(now)

    def blocked_seconds(self, wall: float, end: float) -> float:
        """Of a call that took `wall` seconds and ended at `end`: the seconds it neither ran nor
        waited for a CPU (all of `wall` where the kernel does not say)."""
        start: tuple[float, int, int] | None = getattr(self._local, "reading", None)
        finish = _read(end)
        if start is None or start[1] < 0 or finish[1] < 0:
            return wall
        window = finish[0] - start[0]
        ran_or_queued = (finish[1] - start[1] + finish[2] - start[2]) / 1e9
        return max(0.0, min(wall, window - ran_or_queued))


def _read(now: float) -> tuple[float, int, int]:
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as stat:
            cpu, wait = stat.read().split()[:2]
        return (now, int(cpu), int(wait))
    except (OSError, ValueError, AttributeError):
        return (now, -1, -1)

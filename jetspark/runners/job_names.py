"""Named jobs running in this process that keep no checkpoint store: one at a time per name.

Jet refuses a job whose name an active job has (`JobAlreadyExistsException`). A job with a
checkpoint store gets that from its driver lock (`coordinator.where_to_start`, across processes
too); for the others this registry does it, within the process. A name is taken from the submit
(`reserve`) until the job ends (completed, failed or cancelled: a cancelled job's name is free at
once, as its status is). Unnamed jobs get unique names and are not registered.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from jetspark.core.errors import JobAlreadyRunningError

if TYPE_CHECKING:
    from jetspark.runners.job import JobHandle

_lock = threading.Lock()
#: name -> the job holding it; None while its submit is under way
_holders: dict[str, weakref.ref[JobHandle] | None] = {}

Job = TypeVar("Job", bound="JobHandle")


@contextmanager
def reserve(name: str | None) -> Iterator[Callable[[Job], Job]]:
    """Take `name` for the job being submitted, refusing it while another job of this process
    holds it; the name stays taken by the job passed to the callable given, and is freed when the
    submit raises."""
    if name is None:
        yield lambda job: job
        return
    with _lock:
        _refuse_if_held(name)
        _holders[name] = None

    def hold(job: Job) -> Job:
        with _lock:
            _holders[name] = weakref.ref(job)
        return job

    try:
        yield hold
    except BaseException:
        with _lock:
            if _holders.get(name) is None:
                _holders.pop(name, None)
        raise


def _refuse_if_held(name: str) -> None:
    if name not in _holders:
        return
    holder = _holders[name]
    if holder is None:
        raise JobAlreadyRunningError(
            f"job {name!r} is being submitted in this process already; a name runs once at a time"
        )
    job = holder()
    if job is None or job.status.value in _ENDED:
        del _holders[name]
        return
    what = "is suspended" if job.status.value == "suspended" else "is running"
    raise JobAlreadyRunningError(
        f"job {name!r} {what} in this process already; a name runs once at a time: join(), cancel() "
        "or resume() the handle its submit returned, or give the new job another name"
    )


_ENDED = frozenset({"completed", "failed", "cancelled"})

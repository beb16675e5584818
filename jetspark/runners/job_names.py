"""Named jobs running in this process: one at a time per name.

Jet refuses a job whose name an active job has (`JobAlreadyExistsException`). Here a name is
taken from the submit (`reserve`) while the job runs; it is free again once the job completed,
failed, was cancelled (at once: its status is CANCELLED at once) or is suspended. A suspended job
lets go of its name because a job without a checkpoint store lives only in its handle, which a
caller may drop (`jetspark.api.run` on Ctrl-C): its name must not stay taken until the garbage
collector finds the handle. Its `resume()` takes the name back (`reserve(name, resuming=job)`),
refused while another job of the name runs. A job with a checkpoint store has its driver lock as well
(`coordinator.where_to_start`), which keeps one run of it across processes too; a submit of a
suspended job with a store resumes it. Unnamed jobs get unique names and are not registered.
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
#: Statuses (values) in which a job holds no name.
_NOT_HOLDING = frozenset({"completed", "failed", "cancelled", "suspended"})

Job = TypeVar("Job", bound="JobHandle")


@contextmanager
def reserve(name: str | None, resuming: JobHandle | None = None) -> Iterator[Callable[[Job], Job]]:
    """Take `name` for the job being submitted (or `resuming`, a suspended job about to resume),
    refusing it while another job of this process runs under it; the name stays taken by the job
    passed to the callable given, and is free again when the block ends without it (raising)."""
    if name is None:
        yield lambda job: job
        return
    with _lock:
        holder = _holders.get(name)
        if resuming is None or holder is None or holder() is not resuming:
            _refuse_if_held(name, resuming=resuming is not None)
        _holders[name] = None

    def hold(job: Job) -> Job:
        with _lock:
            _holders[name] = weakref.ref(job)
        return job

    try:
        yield hold
    finally:  # raised, or returned without a job: the name is free again
        with _lock:
            if name in _holders and _holders[name] is None:
                del _holders[name]


def _refuse_if_held(name: str, resuming: bool = False) -> None:
    if name not in _holders:
        return
    holder = _holders[name]
    if holder is None:
        raise JobAlreadyRunningError(
            f"job {name!r} is being submitted in this process already; a name runs once at a time"
        )
    job = holder()
    if job is None or job.status.value in _NOT_HOLDING:
        del _holders[name]
        return
    if resuming:
        raise JobAlreadyRunningError(
            f"job {name!r} cannot resume: another job of that name was submitted while it was suspended "
            "and runs in this process; a name runs once at a time: cancel one of them"
        )
    raise JobAlreadyRunningError(
        f"job {name!r} is running in this process already; a name runs once at a time: join() or "
        "cancel() the handle its submit returned, or give the new job another name"
    )

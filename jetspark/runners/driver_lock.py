"""One driver per job at a time: an exclusive lock on `<job>/DRIVER`, held from the submit's claim
(`identity.claim`) until the job ends.

Two drivers running one job (a supervisor restarting a job whose first driver still runs, a user
submitting twice) would take over each other's record, abort each other's epochs and roll back
each other's prepared transactions. On a local file system (a checkpoint root that is a path) the
lock is an `flock` on the file: the kernel drops it when the process ends, however it ends, so a
submit after a SIGKILL never waits for a lease to expire. This process may claim a job it already
holds again (`resume()`, a submit after a suspend). Other file systems (`s3://`, `memory://`) offer
no lock jetspark can rely on: there, running a job from one driver at a time is the user's part,
and a warning says so once per job.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import threading
import time

from jetspark.checkpoint import CheckpointStore
from jetspark.core.errors import JobAlreadyRunningError

_log = logging.getLogger("jetspark.job")

#: job directory -> the open file whose lock this process holds.
_held: dict[str, int] = {}
_warned: set[str] = set()
_mutex = threading.Lock()


def acquire(store: CheckpointStore) -> None:
    """Hold the job's driver lock; raise `JobAlreadyRunningError` naming the driver that holds it."""
    job_dir = store.job_dir
    if not store.is_local:
        if job_dir not in _warned:
            _warned.add(job_dir)
            _log.warning(
                "job %r: its checkpoint root %s has no driver lock; run the job from one driver at a time",
                store.job,
                store.root,
            )
        return
    with _mutex:
        if job_dir in _held:
            return
        os.makedirs(job_dir, exist_ok=True)
        path = store.driver_lock_path
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(os.pread(fd, 4096, 0))
            os.close(fd)
            raise JobAlreadyRunningError(
                f"job {store.job!r} is running in another driver ({holder}, lock {path}); a job runs "
                "from one driver at a time: wait for it to end, or stop that driver first (the lock "
                "goes with its process)"
            ) from None
        mine = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(mine).encode(), 0)
        _held[job_dir] = fd


def holds(store: CheckpointStore) -> bool:
    """Whether this process holds the job's driver lock already (a resume, a submit after a
    suspend)."""
    with _mutex:
        return store.job_dir in _held


def release(store: CheckpointStore) -> None:
    """Let another driver run the job (its run here ended: completed, failed or cancelled)."""
    with _mutex:
        fd = _held.pop(store.job_dir, None)
    if fd is not None:
        os.close(fd)  # closing the file drops the lock


def _describe(raw: bytes) -> str:
    try:
        holder = json.loads(raw)
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(holder["since"])))
        return f"pid {int(holder['pid'])} on {holder['host']}, since {since}"
    except (ValueError, KeyError, TypeError):
        return "a process that has not written its name yet"

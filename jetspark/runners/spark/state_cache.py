"""Processors that stay in the Python worker from one epoch to the next (Spark epochs only).

Without this, every epoch creates each processor afresh and restores it from the committed
snapshot, so an epoch costs time in proportion to the whole state. PySpark reuses a Python
worker for task after task (`spark.python.worker.reuse`), and module state survives in it; so
when a task of member `m` ends its epoch `e` successfully, the processors of its eligible vertices
are kept here, not closed, with the name and SHA-256 of the snapshot file they wrote for `e`.

The next task of the same member that lands in this worker (or in another worker of the host,
which relays its run here: `handoff`) uses them instead of restoring, but
only if the snapshot it restores from *is* that file: same job, vertex, member, member count and
partition count, snapshot id `e`, and the committed manifest lists that very file (name, which
holds Spark's task attempt id, unique per application, and SHA-256). Anything else (epoch `e`
aborted, or another worker ran `e + 1`, or the job was rescaled) is a miss: the kept processors
are closed and the task restores from the store, as it always did. Correctness never depends on
the cache; a miss costs what a restore always cost.

A processor is kept when it is an `AbstractProcessor` that does not override `init` (its outbox
and context can be handed over without calling `init_processor` again; the outbox object it was
given first stays its outbox, `OutboxImpl.take_place_of`) on a vertex with inbound and outbound
edges (sources and sinks hold task-bound things: staged files, result collectors, Spark input),
without its own two-phase commit (`snapshot_commit_prepare`/`snapshot_commit_finish` not
overridden), whose class does not set `keep_state_in_worker = False`, that is cooperative and
whose `close()` need not run on its thread (the next epoch may call it from another thread),
when no processor of its vertex has completed, and only in a Python worker that Spark reuses.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

import attrs

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.processor import Processor
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.engine.tasklet import CarriedOver
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners.spark import handoff_registry

_log = logging.getLogger("jetspark.spark.state_cache")

#: Per-vertex counters a task reports (summed over the job's committed epochs).
HITS = "state_cache_hits"
MISSES = "state_cache_misses"
#: Restores whose task ran in the worker that held the processors, relayed there (`handoff`).
RELAYS = "state_cache_relays"
#: Entries of a job not used for this long are closed and dropped.
IDLE_SECONDS = 600.0


@attrs.define
class Kept:
    """One member's processors of one vertex, as they were after snapshot `snapshot_id`."""

    processors: list[Processor]
    snapshot_id: int
    #: The snapshot file they wrote (name, SHA-256), or None when they saved no entry.
    file: tuple[str, str] | None
    member_count: int
    partition_count: int
    #: The stage of the vertex: what the handoff's registry names (-1: not advertised).
    stage: int = -1
    used: float = attrs.field(factory=time.monotonic)
    #: Per processor, what it brings into the next epoch besides its state (the edges that ended
    #: for it, the watermarks it sent and was given last).
    carried: list[CarriedOver] = attrs.field(factory=list)
    #: The plan they were made by (`ExecutionPlan.execution_id`): a job submitted again (another
    #: DAG, maybe new processor code) under the same job id plans anew and must not get them.
    execution_id: str = ""
    #: The member's supplier that made them (initialized by the task that made them): closed
    #: after them, as the contract wants, when they leave the cache for good.
    supplier: ProcessorSupplier | None = None


Key = tuple[str, str, int]  # (job id, vertex, member)

#: This worker's kept processors. A module global: it lives as long as the Python worker. A task
#: relayed here (`handoff`) runs on a server thread beside Spark's own task: every change holds
#: the lock.
_CACHE: dict[Key, Kept] = {}
_LOCK = threading.RLock()
#: Kept processors closed in this worker so far (`closed_count`).
_closed = 0
#: Called (without the lock) whenever the cache becomes empty: the handoff server stops then.
WHEN_EMPTY: list[Callable[[], None]] = []


def eligible_vertices(
    plan: ExecutionPlan, vertices: Collection[str], completed: Collection[tuple[str, int]]
) -> set[str]:
    """The vertices of a stage whose processors may be kept (by their place in the DAG)."""
    done = {name for name, _ in completed}
    return {v for v in vertices if plan.vertices[v].inbound and plan.vertices[v].outbound and v not in done}


def worker_is_reused() -> bool:
    """Whether this Python worker runs further tasks (`spark.python.worker.reuse`, the default):
    Spark says so in a worker's environment (`SPARK_REUSE_WORKER`); a worker that is not reused
    exits after its task, and whatever it kept would die unclosed. Outside a PySpark worker (one
    process, tests) the answer is yes."""
    if "PYTHON_WORKER_FACTORY_SECRET" not in os.environ:
        return True
    return bool(os.environ.get("SPARK_REUSE_WORKER"))


def keepable(processor: Processor) -> bool:
    """Whether a processor can be handed a new outbox and context without `init` (see module):
    also, as the next epoch may call it from another thread, whether it is not bound to its
    thread (a non-cooperative processor gets a thread of its own per execution; one whose
    `close()` must run on the processor's thread, `close_is_cooperative`, holds something bound
    to it, such as a sqlite3 connection)."""
    kind = type(processor)
    return (
        isinstance(processor, AbstractProcessor)
        and kind.init is AbstractProcessor.init
        and getattr(kind, "keep_state_in_worker", True) is not False
        and kind.snapshot_commit_prepare is Processor.snapshot_commit_prepare
        and kind.snapshot_commit_finish is Processor.snapshot_commit_finish
        and processor.is_cooperative() is True
        and processor.close_is_cooperative() is not True
    )


def take(
    job_id: str,
    vertex: str,
    member: int,
    restore_id: int,
    committed_file: tuple[str, str] | None,
    member_count: int,
    partition_count: int,
    execution_id: str = "",
) -> Kept | None:
    """The processors kept for (job, vertex, member) if they are exactly the state of committed
    snapshot `restore_id`, whose file for this member and vertex is `committed_file`, made by
    the plan `execution_id`; they leave the cache (a failed task must not leave them behind).
    Anything kept that does not match is closed and dropped."""
    key = (job_id, vertex, member)
    with _LOCK:
        kept = _CACHE.pop(key, None)
    if kept is None:
        return None
    if (
        kept.snapshot_id == restore_id
        and kept.file is not None
        and kept.file == committed_file
        and kept.member_count == member_count
        and kept.partition_count == partition_count
        and kept.execution_id == execution_id
    ):
        return kept
    _dropped([(key, kept)])
    return None


def put(job_id: str, vertex: str, member: int, kept: Kept) -> None:
    """Keep `kept` for the next epoch (closing whatever was kept under that key before)."""
    with _LOCK:
        old = _CACHE.pop((job_id, vertex, member), None)
        _CACHE[(job_id, vertex, member)] = kept
    if old is not None:
        close_all(old.processors, vertex, old.supplier if old.supplier is not kept.supplier else None)


def evict_older(job_id: str, restore_id: int) -> None:
    """Drop what can no longer match: the job's processors kept at a snapshot before
    `restore_id` (restores only move forward), and other jobs' idle ones."""
    now = time.monotonic()
    with _LOCK:
        stale = [
            (key, kept)
            for key, kept in _CACHE.items()
            if (kept.snapshot_id < restore_id if key[0] == job_id else now - kept.used > IDLE_SECONDS)
        ]
        for key, _ in stale:
            del _CACHE[key]
    _dropped(stale)


def clear() -> None:
    """Close and drop everything kept (tests; a worker about to go)."""
    with _LOCK:
        items = list(_CACHE.items())
        _CACHE.clear()
    _dropped(items)


def size() -> int:
    return len(_CACHE)


def closed_count() -> int:
    """How many kept processors this worker has closed so far (dropped, replaced or evicted)."""
    return _closed


def holds(job_id: str, vertices: Collection[str], member: int, snapshot_id: int) -> bool:
    """Whether this worker keeps processors of `member` for one of `vertices`, as they were after
    snapshot `snapshot_id` (what a relayed task's restore would take, if that snapshot is the
    committed one: `take` checks the file)."""
    with _LOCK:
        return any(
            (kept := _CACHE.get((job_id, vertex, member))) is not None and kept.snapshot_id == snapshot_id
            for vertex in vertices
        )


def discard(job_id: str, stage: int, member: int, snapshot_id: int | None) -> None:
    """Close and drop what a run of (job, stage, member) kept at `snapshot_id` (a relayed run
    whose relaying task went away before it acknowledged the end: Spark has not its output), or
    at any snapshot (None: another worker runs the member now, `handoff`)."""
    with _LOCK:
        items = [
            (key, kept)
            for key, kept in _CACHE.items()
            if key[0] == job_id
            and key[2] == member
            and kept.stage == stage
            and (snapshot_id is None or kept.snapshot_id == snapshot_id)
        ]
        for key, _ in items:
            del _CACHE[key]
    _dropped(items)


def released(job_id: str, stage: int, member: int) -> None:
    """After a run that kept nothing of (job, stage, member): withdraw this worker's registry entry
    if it holds nothing more of it, and tell the listeners if the cache is empty."""
    if not holds_stage(job_id, stage, member):
        handoff_registry.withdraw(job_id, stage, member, os.getpid())
    if not _CACHE:
        for listener in list(WHEN_EMPTY):
            listener()


def holds_stage(job_id: str, stage: int, member: int) -> bool:
    with _LOCK:
        return any(k[0] == job_id and k[2] == member and v.stage == stage for k, v in _CACHE.items())


def _dropped(items: list[tuple[Key, Kept]]) -> None:
    """Close processors that left the cache unused; withdraw the registry entries of stages this
    worker no longer holds anything of; tell the listeners when the cache became empty."""
    for (job_id, vertex, member), kept in items:
        close_all(kept.processors, vertex, kept.supplier)
        if kept.stage >= 0 and not holds_stage(job_id, kept.stage, member):
            handoff_registry.withdraw(job_id, kept.stage, member, os.getpid())
    if items and not _CACHE:
        for listener in list(WHEN_EMPTY):
            listener()


def close_all(processors: list[Processor], vertex: str, supplier: ProcessorSupplier | None = None) -> None:
    """Close processors leaving the cache (or never kept), then the supplier that made them."""
    global _closed
    _closed += len(processors)  # `worker_gc`: old objects became garbage
    for processor in processors:
        try:
            type(processor).close(processor)
        except Exception:
            _log.exception("vertex %r: close() of a processor leaving the state cache failed", vertex)
    if supplier is not None:
        try:
            supplier.close(None)
        except Exception:
            _log.exception("vertex %r: ProcessorSupplier.close() of kept processors failed", vertex)


def rebind(processor: Processor, outbox: Any, context: Any) -> None:
    """Hand a kept processor this epoch's outbox and context (no `init_processor`: it goes on)."""
    assert isinstance(processor, AbstractProcessor)
    processor._bind(outbox, context)

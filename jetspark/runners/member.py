"""One member's share of a job: create its processors, wire them, run them, close them, measure them.

Both runners use `MemberExecution` (Jet has one `ExecutionContext` per member likewise): the local
runner with every `(vertex, member)` of the plan in one instance (its simulated members share one
process), the Spark runner with one member's vertices of one stage, inside a Spark task. So the
rules below hold on both:

- a supplier that fails, returns the wrong processors, or a processor whose `is_cooperative()`
  raises, fails the setup with a `JobFailedError` naming the vertex, and every processor made
  before is closed once (close() is due even without init());
- once running, the engine's `Execution` closes every processor once, whatever happens;
- `close(error)` closes the `ProcessorSupplier` of each placement once (one object shared by
  several members is closed once per member, as often as it was initialized), with the job's
  error (None on success, `JobSuspendedError` after a suspension), and logs (never raises) a
  failing close().
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from typing import Any

from jetspark.core.errors import JobFailedError
from jetspark.core.processor import Processor
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.engine.execution import Execution
from jetspark.engine.queue import QueueReceiver, QueueSender
from jetspark.engine.snapshot import SnapshotContext, SnapshotData
from jetspark.engine.tasklet import ProcessorTasklet
from jetspark.planning.defs import EdgeDef
from jetspark.planning.plan import ExecutionPlan, ProcessorId, create_processors
from jetspark.runners.wiring import ProcessorKey, wire

_log = logging.getLogger("jetspark.runners")

#: (vertex name, member index)
Placement = tuple[str, int]
ExternalQueues = Callable[[EdgeDef, ProcessorId, ProcessorId], QueueSender | QueueReceiver | None]


class MemberExecution:
    """The processors of `placements`, from creation to close; see the module docstring."""

    def __init__(
        self,
        plan: ExecutionPlan,
        placements: Iterable[Placement],
        attributes: dict[str, Any],
        batch_size: int,
        snapshot_context: SnapshotContext | None = None,
        restore_data: SnapshotData | None = None,
        external_queues: ExternalQueues | None = None,
        completed: Collection[tuple[str, int]] = (),
        kept: dict[str, list[Processor]] | None = None,
    ) -> None:
        """`completed` names processors (vertex, global index) that completed in an earlier epoch:
        each is replaced by a `CompletedProcessor`, which emits DONE at once and holds no state.
        `kept` gives, per vertex, processors that go on from an earlier epoch with their state
        (`runners.spark.state_cache`) instead of new ones from the supplier (one member only)."""
        self.plan = plan
        self.placements = list(placements)
        self._attributes = attributes
        self._batch_size = batch_size
        self._snapshot_context = snapshot_context
        self._restore_data = restore_data
        self._external_queues = external_queues
        self._completed = completed
        self._kept = kept or {}
        #: (vertex, member) whose processors came from `kept`: their supplier was not initialized here.
        self._from_kept: set[tuple[str, int]] = set()
        self.processors: dict[ProcessorKey, Processor] = {}
        self.tasklets: list[ProcessorTasklet] = []
        self.execution: Execution | None = None

    def setup(self) -> list[ProcessorTasklet]:
        """Create and wire the processors. On failure every processor made is closed and a
        `JobFailedError` naming the vertex is raised."""
        try:
            for vertex, member in self.placements:
                try:
                    made = self._kept.get(vertex) or []
                    if made:
                        self._from_kept.add((vertex, member))
                    else:
                        made = create_processors(self.plan, vertex, member)
                except Exception as cause:
                    raise _setup_failure(vertex, f"its supplier failed on member {member}", cause) from cause
                lp = self.plan.vertices[vertex].local_parallelism
                self._check_new_objects(vertex, member, made)
                for index, processor in enumerate(made):
                    if (vertex, member * lp + index) in self._completed:
                        _close_unused(processor, vertex, member, index)
                        processor = CompletedProcessor()
                    self.processors[(vertex, member, index)] = processor
            context = self._snapshot_context or SnapshotContext(len(self.processors))
            self.tasklets = wire(
                self.plan,
                self.processors,
                context,
                self._restore_data,
                self._attributes,
                self._batch_size,
                self._external_queues,
            )
        except BaseException:
            self._close_unrun_processors()
            raise
        return self.tasklets

    def _check_new_objects(self, vertex: str, member: int, made: list[Processor]) -> None:
        """Every processor is an object of its own: one object serving two processors (a supplier
        returning a prebuilt instance) would mix their state and calls, and lose output silently."""
        seen = {id(p): key for key, p in self.processors.items()}
        for index, processor in enumerate(made):
            other = seen.get(id(processor))
            if other is not None and not isinstance(processor, CompletedProcessor):
                raise JobFailedError(
                    f"vertex {vertex!r}: its supplier returned the same {type(processor).__name__} "
                    f"object for processor {index} on member {member} as for processor {other[2]} on "
                    f"member {other[1]}{'' if other[0] == vertex else f' of vertex {other[0]!r}'}: "
                    "each processor needs an object of its own (pass the class, or a function that "
                    "makes a new one on every call)",
                    vertex=vertex,
                )
            seen[id(processor)] = (vertex, member, index)

    def start(
        self,
        on_tick: Callable[[], None] | None = None,
        on_idle: Callable[[], bool] | None = None,
        quiescence_check: bool = True,
    ) -> Execution:
        """The engine execution of the wired tasklets (run it with `run()` or `steps()`).

        `quiescence_check=False` leaves the stuck-job check to the caller (a Spark epoch's tasks
        wait for the driver's snapshot decisions, which the engine cannot see)."""
        timeout = self.plan.config.quiescence_timeout_seconds if quiescence_check else None
        self.execution = Execution(self.tasklets, on_tick, on_idle, quiescence_timeout=timeout)
        return self.execution

    def close(self, error: BaseException | None, defer: Collection[str] = ()) -> dict[str, ProcessorSupplier]:
        """After the run (or a failed setup): close processors that never ran, then the suppliers,
        once per member as each was initialized once per member (as in Jet, where every member
        has its own copy: one supplier object a meta supplier gives every member is closed as
        often as it was initialized). Not closed: the supplier of processors that came from
        `kept` (not initialized here), and those of the vertices in `defer`, returned (their
        processors may outlive this run, and a supplier is closed after its processors)."""
        if self.execution is None:
            self._close_unrun_processors()
        deferred: dict[str, ProcessorSupplier] = {}
        for vertex, member in self.placements:
            supplier = self.plan.vertices[vertex].supplier(member)
            if supplier is None or (vertex, member) in self._from_kept:
                continue
            if vertex in defer:
                deferred[vertex] = supplier
            else:
                _close_supplier(supplier, vertex, member, error)
        return deferred

    def metrics(self) -> dict[str, dict[str, int]]:
        """Per vertex: items `received` into inboxes and `emitted` downstream by these processors."""
        return tasklet_metrics(self.tasklets)

    def status(self) -> dict[str, dict[str, int]]:
        """Per vertex: watermarks and pending counts now (`tasklet_status`)."""
        return tasklet_status(self.tasklets)

    def _close_unrun_processors(self) -> None:
        for key, processor in self.processors.items():
            try:
                processor.close()
            except Exception:
                _log.exception(
                    "vertex %r processor %s: close() failed; the error is ignored", key[0], key[1:]
                )
        self.processors = {}


class CompletedProcessor(Processor):
    """Stands in for a processor that completed in an earlier epoch: done at once, no state."""

    def try_process_watermark(self, watermark: Any) -> bool:
        return True

    def restore_from_snapshot(self, inbox: Any) -> None:
        inbox.drain(lambda _entry: None)


def _close_unused(processor: Processor, vertex: str, member: int, index: int) -> None:
    try:
        processor.close()
    except Exception:
        _log.exception(
            "vertex %r processor %s: close() failed; the error is ignored", vertex, (member, index)
        )


#: A counter of `tasklet_metrics`: milliseconds the vertex's processors were back-pressured (held
#: items a full downstream queue refused), summed over them (`OutboxImpl.backpressured_seconds`).
BACKPRESSURED_MS = "backpressured_ms"


def processor_metric(name: str) -> str:
    """The name a processor's own counter is reported under: `user.<name>` where the engine has
    a figure of that name (Jet keeps such user metrics apart too), so it never adds into it."""
    return f"user.{name}" if name in ENGINE_METRICS else name


def tasklet_metrics(tasklets: Iterable[ProcessorTasklet]) -> dict[str, dict[str, int]]:
    """Per vertex: items `received` and `emitted`, milliseconds back-pressured
    (`BACKPRESSURED_MS`), and the processors' own counters (`Processor.custom_metrics`, such as
    `late_items_dropped`), summed over `tasklets`."""
    out: dict[str, dict[str, int]] = {}
    for tasklet in tasklets:
        slot = out.setdefault(tasklet.context.vertex_name, {"received": 0, "emitted": 0, BACKPRESSURED_MS: 0})
        slot["received"] += tasklet.received_count
        slot["emitted"] += tasklet.outbox.emitted_count
        slot[BACKPRESSURED_MS] += int(tasklet.outbox.backpressured_seconds() * 1000)
        for name, value in tasklet.processor.custom_metrics().items():
            name = processor_metric(name)
            slot[name] = slot.get(name, 0) + value
        if tasklet.stall_warnings:  # the quiescence check's warnings (docs/quiescence.md)
            slot["stall_warnings"] = slot.get("stall_warnings", 0) + tasklet.stall_warnings
    return out


#: Per-vertex figures of `tasklet_status`: the lowest watermark over the vertex's processors
#: (absent until every one of them has one) ...
WATERMARK_FIGURES = ("upstream_watermark", "input_watermark", "output_watermark")
#: ... and items pending, summed: in inbound queues, in inboxes, in outboxes.
PENDING_FIGURES = ("queued", "inbox", "outbox")
#: Names of the engine's own per-vertex figures (`tasklet_metrics`' counters, these gauges).
ENGINE_METRICS = frozenset(
    ("received", "emitted", BACKPRESSURED_MS, "stall_warnings", *WATERMARK_FIGURES, *PENDING_FIGURES)
)


def tasklet_status(tasklets: Iterable[ProcessorTasklet]) -> dict[str, dict[str, int]]:
    """Per vertex, now: its watermarks (seed 004's upstream, input and output watermarks: the
    coalesced input, the last one the processor accepted, the last one it emitted) and its pending
    counts. A gauge, unlike `tasklet_metrics`' counters: never added across runs."""
    out: dict[str, dict[str, int]] = {}
    missing: dict[str, set[str]] = {}
    for tasklet in tasklets:
        vertex = tasklet.context.vertex_name
        slot = out.setdefault(vertex, dict.fromkeys(PENDING_FIGURES, 0))
        slot["queued"] += tasklet.queued_count()
        slot["inbox"] += tasklet.inbox.size()
        slot["outbox"] += tasklet.outbox.buffered()
        values = (tasklet.upstream_watermark, tasklet.input_watermark, tasklet.outbox.output_watermark())
        for name, value in zip(WATERMARK_FIGURES, values):
            if value is None:
                missing.setdefault(vertex, set()).add(name)
            else:
                slot[name] = min(slot.get(name, value), value)
    for vertex, names in missing.items():
        for name in names:
            out[vertex].pop(name, None)
    return out


def merge_status(total: dict[str, dict[str, int]], more: dict[str, dict[str, int]]) -> None:
    """Merge members' `tasklet_status` into `total`: pending counts add up, a vertex's watermark
    is the lowest of its members' (absent where any member lacks one)."""
    for vertex, figures in more.items():
        slot = total.get(vertex)
        if slot is None:
            total[vertex] = dict(figures)
            continue
        for name in PENDING_FIGURES:
            slot[name] = slot.get(name, 0) + figures.get(name, 0)
        for name in WATERMARK_FIGURES:
            if name in slot and name in figures:
                slot[name] = min(slot[name], figures[name])
            else:
                slot.pop(name, None)


def add_metrics(total: dict[str, dict[str, int]], more: dict[str, dict[str, int]]) -> None:
    """Add `more` into `total`, vertex by vertex and figure by figure."""
    for vertex, figures in more.items():
        slot = total.setdefault(vertex, {})
        for name, value in figures.items():
            slot[name] = slot.get(name, 0) + value


def _setup_failure(vertex: str, what: str, cause: BaseException) -> JobFailedError:
    return JobFailedError(f"vertex {vertex!r}: {what}: {type(cause).__name__}: {cause}", vertex=vertex)


def _close_supplier(
    supplier: ProcessorSupplier, vertex: str, member: int, error: BaseException | None
) -> None:
    try:
        supplier.close(error)
    except Exception:
        _log.exception("vertex %r: ProcessorSupplier.close() failed on member %d", vertex, member)

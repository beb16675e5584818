"""Recording processors: every call logged with its arguments, inbox content and result.

A `Recorder` is shared by every processor of one scenario: `Recorder.vertex(dag, name, behaviour)`
adds a vertex whose processors log into it, so a test reads back exactly what the engine called,
in which order, on which thread. `Behaviour` makes a processor misbehave on purpose (return False
N times, take only a few items per call, raise in a method, emit items, save state), which is how
the contract suite pushes the engine into each rule's corner.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from jetspark.core.context import ProcessorContext
from jetspark.core.dag import DAG, Vertex
from jetspark.core.inbox import Inbox
from jetspark.core.outbox import Outbox
from jetspark.core.processor import Processor
from jetspark.core.suppliers import ProcessorMetaSupplier, ProcessorSupplier
from jetspark.core.watermark import Watermark

_SEQUENCE = itertools.count()

#: Methods the contract calls "processing methods" (all but is_cooperative, init and close).
PROCESSING_METHODS = (
    "process",
    "try_process",
    "try_process_watermark",
    "complete_edge",
    "complete",
    "save_to_snapshot",
    "snapshot_commit_prepare",
    "snapshot_commit_finish",
    "restore_from_snapshot",
    "finish_snapshot_restore",
)


class Boom(Exception):
    """The error a recording processor raises when told to."""


@attrs.define
class Call:
    """One call of one processor method."""

    method: str
    args: tuple[Any, ...]
    seq: int
    thread: int
    #: The inbox content when `process` / `restore_from_snapshot` was called.
    inbox: tuple[Any, ...] | None = None
    #: Items in the inbox after a `process` / `restore_from_snapshot` call; for any other method,
    #: items in the inbox (of the last `process` call) when it was called.
    left: int | None = None
    #: Whether the outbox held an unfinished (rejected) item when the method was called.
    unfinished: bool = False
    result: Any = None
    error: BaseException | None = None


def _no_gate(_processor: RecordingProcessor) -> bool:
    return True


@attrs.define(kw_only=True)
class Behaviour:
    """How a recording processor behaves; the defaults make a well-behaved sink or source."""

    #: method -> N: every run of calls of that method starts with N forced False returns (a run
    #: ends when the method returns True), e.g. {"try_process_watermark": 2} refuses each watermark
    #: twice.
    false_times: Mapping[str, int] = attrs.field(factory=dict)
    #: Raise `Boom` in this method (any method, including "init" and "close") ...
    raise_in: str | None = None
    #: ... on its n-th call.
    raise_on_call: int = 1
    #: `process` and `restore_from_snapshot` take at most this many items per call.
    take: int | None = None
    #: `process` leaves each fresh batch untouched for this many calls.
    stall: int = 0
    #: `process` takes nothing while this does not hold.
    process_gate: Callable[[RecordingProcessor], bool] = _no_gate
    #: `process` offers each item downstream and takes it only once accepted;
    #: `try_process_watermark` forwards the watermark.
    forward: bool = False
    #: A source's output (items and `Watermark`s), offered from `complete()`; a callable gets the
    #: processor's context, so each processor of a vertex can emit its own items.
    emit: Sequence[Any] | Callable[[ProcessorContext], Sequence[Any]] = ()
    #: The next item is emitted only while this holds (e.g. "a snapshot after every item").
    emit_gate: Callable[[RecordingProcessor], bool] = _no_gate
    #: After emitting everything, `complete()` returns False until this holds.
    complete_when: Callable[[RecordingProcessor], bool] | None = None
    #: Entries `save_to_snapshot` offers (computed once per snapshot).
    snapshot: Callable[[RecordingProcessor], Sequence[tuple[Any, Any]]] | None = None
    #: method -> action run at the start of each call (after it is logged), for one-off misdeeds.
    hooks: Mapping[str, Callable[[RecordingProcessor], Any]] = attrs.field(factory=dict)
    cooperative: bool = True
    #: `restore_from_snapshot` offers `restore_emit(processor, entry)` downstream for each entry and
    #: takes the entry only once that was accepted.
    restore_emit: Callable[[RecordingProcessor, tuple[Any, Any]], Any] | None = None
    #: Items `finish_snapshot_restore` offers (computed once); it returns False while one is rejected.
    finish_restore_emit: Callable[[RecordingProcessor], Sequence[Any]] | None = None


class RecordingProcessor(Processor):
    """A processor that logs every call into `calls` and behaves as its `Behaviour` says."""

    outbox: Outbox
    context: ProcessorContext | None

    def __init__(self, vertex: str, behaviour: Behaviour, generation: int = 0) -> None:
        self.vertex = vertex
        self.behaviour = behaviour
        self.generation = generation
        self.serial = next(_SEQUENCE)
        self.calls: list[Call] = []
        self.context = None
        #: (ordinal, item) for every item `process` took, in order.
        self.received: list[tuple[int, Any]] = []
        #: (key, value) of every restored entry.
        self.restored: list[tuple[Any, Any]] = []
        #: Watermarks `try_process_watermark` accepted.
        self.watermarks: list[Watermark] = []
        self.emitted = 0
        #: (items emitted, items received) at each successful `save_to_snapshot`.
        self.saves: list[tuple[int, int]] = []
        self.last_inbox: Inbox | None = None
        self._to_emit: list[Any] | None = None
        self._false_left = dict(behaviour.false_times)
        self._stall_left = behaviour.stall
        self._pending_snapshot: list[tuple[Any, Any]] | None = None
        self._finish_restore_items: list[Any] | None = None

    # ---- reading the log ------------------------------------------------------------------

    @property
    def label(self) -> str:
        if self.context is None:
            return f"{self.vertex}#(not initialized, serial {self.serial})"
        return f"{self.vertex}#{self.context.global_processor_index}"

    def methods(self) -> list[str]:
        return [call.method for call in self.calls]

    def processing_calls(self) -> list[Call]:
        return [call for call in self.calls if call.method in PROCESSING_METHODS]

    def count(self, method: str) -> int:
        return sum(1 for call in self.calls if call.method == method)

    def calls_of(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    def __repr__(self) -> str:
        return f"RecordingProcessor({self.label})"

    # ---- the recording machinery ------------------------------------------------------------

    def _run(
        self,
        method: str,
        args: tuple[Any, ...],
        body: Callable[[], Any],
        inbox: Inbox | None = None,
        boolean: bool = True,
    ) -> Any:
        call = Call(method, args, next(_SEQUENCE), threading.get_ident())
        if inbox is not None:
            call.inbox = tuple(inbox)
        elif self.last_inbox is not None:
            call.left = self.last_inbox.size()
        if self.context is not None and hasattr(self, "outbox"):
            call.unfinished = self.outbox.has_unfinished_item()
        self.calls.append(call)
        try:
            hook = self.behaviour.hooks.get(method)
            if hook is not None:
                hook(self)
            if self.behaviour.raise_in == method and self.count(method) == self.behaviour.raise_on_call:
                raise Boom(f"boom in {method} of {self.label}")
            if boolean and self._false_left.get(method, 0) > 0:
                self._false_left[method] -= 1
                result: Any = False
            else:
                result = body()
                if boolean and result:
                    self._false_left[method] = self.behaviour.false_times.get(method, 0)
        except BaseException as error:
            call.error = error
            raise
        finally:
            if inbox is not None:
                call.left = inbox.size()
        call.result = result
        return result

    # ---- Processor ------------------------------------------------------------------------

    def is_cooperative(self) -> bool:
        return bool(self._run("is_cooperative", (), lambda: self.behaviour.cooperative, boolean=False))

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        def body() -> None:
            self.outbox = outbox
            self.context = context

        # the context is set first so that even a failing init is logged under its label
        self.context = context
        self._run("init", (), body, boolean=False)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self.last_inbox = inbox
        self._run(
            "process", (ordinal,), lambda: self._take(inbox, ordinal, self.received), inbox, boolean=False
        )

    def _take(self, inbox: Inbox, ordinal: int, into: list[Any]) -> None:
        if self._stall_left > 0:
            self._stall_left -= 1
            return
        if ordinal >= 0 and not self.behaviour.process_gate(self):
            return
        taken = 0
        limit = self.behaviour.take
        while not inbox.is_empty() and (limit is None or taken < limit):
            item = inbox.peek()
            if self.behaviour.forward and ordinal >= 0 and not self.outbox.offer(item):
                return
            restore_emit = self.behaviour.restore_emit
            if restore_emit is not None and ordinal < 0 and not self.outbox.offer(restore_emit(self, item)):
                return
            inbox.remove()
            into.append((ordinal, item) if ordinal >= 0 else item)
            taken += 1
        if inbox.is_empty():
            self._stall_left = self.behaviour.stall

    def try_process_watermark(self, watermark: Watermark) -> bool:
        def body() -> bool:
            if self.behaviour.forward and not self.outbox.offer(watermark):
                return False
            self.watermarks.append(watermark)
            return True

        return bool(self._run("try_process_watermark", (watermark,), body))

    def try_process(self) -> bool:
        return bool(self._run("try_process", (), lambda: True))

    def complete_edge(self, ordinal: int) -> bool:
        return bool(self._run("complete_edge", (ordinal,), lambda: True))

    def complete(self) -> bool:
        return bool(self._run("complete", (), self._emit_then_complete))

    def _emit_then_complete(self) -> bool:
        if self._to_emit is None:
            emit = self.behaviour.emit
            assert self.context is not None
            self._to_emit = list(emit(self.context) if callable(emit) else emit)
        while self.emitted < len(self._to_emit):
            if not self.behaviour.emit_gate(self):
                return False
            if not self.outbox.offer(self._to_emit[self.emitted]):
                return False
            self.emitted += 1
        when = self.behaviour.complete_when
        return when is None or bool(when(self))

    def save_to_snapshot(self) -> bool:
        def body() -> bool:
            make = self.behaviour.snapshot
            if self._pending_snapshot is None:
                self._pending_snapshot = [] if make is None else list(make(self))
            while self._pending_snapshot:
                key, value = self._pending_snapshot[0]
                if not self.outbox.offer_to_snapshot(key, value):
                    return False
                self._pending_snapshot.pop(0)
            self._pending_snapshot = None
            self.saves.append((self.emitted, len(self.received)))
            return True

        return bool(self._run("save_to_snapshot", (), body))

    def snapshot_commit_prepare(self) -> bool:
        return bool(self._run("snapshot_commit_prepare", (), lambda: True))

    def snapshot_commit_finish(self, success: bool) -> bool:
        return bool(self._run("snapshot_commit_finish", (success,), lambda: True))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        self._run(
            "restore_from_snapshot", (), lambda: self._take(inbox, -1, self.restored), inbox, boolean=False
        )

    def finish_snapshot_restore(self) -> bool:
        def body() -> bool:
            make = self.behaviour.finish_restore_emit
            if make is None:
                return True
            if self._finish_restore_items is None:
                self._finish_restore_items = list(make(self))
            while self._finish_restore_items:
                if not self.outbox.offer(self._finish_restore_items[0]):
                    return False
                self._finish_restore_items.pop(0)
            return True

        return bool(self._run("finish_snapshot_restore", (), body))

    def close(self) -> None:
        self._run("close", (), lambda: None, boolean=False)


class Recorder:
    """Collects the recording processors of one scenario, across executions (restarts, resume)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processors: list[RecordingProcessor] = []
        #: Stamped on processors created from now on; bump it before `resume()` to tell runs apart.
        self.generation = 0

    def supplier(self, vertex: str, behaviour: Behaviour | None = None) -> Callable[[], RecordingProcessor]:
        behaviour = behaviour or Behaviour()

        def make() -> RecordingProcessor:
            processor = RecordingProcessor(vertex, behaviour, self.generation)
            with self._lock:
                self._processors.append(processor)
            return processor

        return make

    def vertex(
        self, dag: DAG, name: str, behaviour: Behaviour | None = None, local_parallelism: int = -1
    ) -> Vertex:
        """Add a vertex of recording processors to `dag`."""
        return dag.new_vertex(name, self.supplier(name, behaviour), local_parallelism)

    def processors(
        self, vertex: str | None = None, generation: int | None = None
    ) -> list[RecordingProcessor]:
        with self._lock:
            found = list(self._processors)
        return [
            p
            for p in found
            if (vertex is None or p.vertex == vertex) and (generation is None or p.generation == generation)
        ]

    def received(self, vertex: str, generation: int | None = None) -> list[Any]:
        """Every item the vertex's processors took in `process`, without ordinals."""
        return [item for p in self.processors(vertex, generation) for _, item in p.received]


@attrs.define
class Closed:
    """One `close(error)` call of a supplier: when (on the processors' call sequence) and with what."""

    seq: int
    error: BaseException | None


class RecordingSupplier(ProcessorSupplier):
    """The `ProcessorSupplier` of one member: makes recording processors and logs `close(error)`."""

    def __init__(self, make: Callable[[], RecordingProcessor], vertex: str, member: int) -> None:
        self.make = make
        self.vertex = vertex
        self.member = member
        self.made: list[RecordingProcessor] = []
        self.closes: list[Closed] = []

    def get(self, count: int) -> list[RecordingProcessor]:
        made = [self.make() for _ in range(count)]
        self.made.extend(made)
        return made

    def close(self, error: BaseException | None) -> None:
        self.closes.append(Closed(next(_SEQUENCE), error))


class RecordingMetaSupplier(ProcessorMetaSupplier):
    """Gives each member a `RecordingSupplier` of its own (new ones each execution); logs `close`."""

    def __init__(self, recorder: Recorder, vertex: str, behaviour: Behaviour | None = None) -> None:
        self.make = recorder.supplier(vertex, behaviour)
        self.vertex = vertex
        #: Every supplier handed out, in the order of `get` calls.
        self.suppliers: list[RecordingSupplier] = []
        self.closes: list[Closed] = []

    def get(self, member_indexes: Sequence[int]) -> dict[int, ProcessorSupplier | None]:
        handed: dict[int, ProcessorSupplier | None] = {}
        for member in member_indexes:
            supplier = RecordingSupplier(self.make, self.vertex, member)
            self.suppliers.append(supplier)
            handed[member] = supplier
        return handed

    def close(self, error: BaseException | None) -> None:
        self.closes.append(Closed(next(_SEQUENCE), error))

"""The tasklet: drives one processor through the contract's state machine.

One `call()` advances the processor by a few steps and reports whether anything happened, so a
worker can back off when no tasklet made progress. States, in the order a processor meets them:

    RESTORE -> FINISH_RESTORE            (only when restoring from a snapshot)
    PROCESS_WATERMARKS -> NULLARY_PROCESS -> PROCESS_INBOX   (the processing loop)
        PROCESS_INBOX -> COMPLETE_EDGE   (an inbound edge ended)
        PROCESS_INBOX -> SAVE_SNAPSHOT__PROCESS -> COMMIT_PREPARE__PROCESS
            -> EMIT_BARRIER__PROCESS -> PROCESS_INBOX            (barrier on all inputs)
        PROCESS_INBOX -> COMMIT_FINISH__PROCESS -> PROCESS_INBOX (phase 2 requested)
    COMPLETE -> EMIT_DONE -> WAIT_PHASE2 -> CLOSED     (a source starts at COMPLETE)
        WAIT_PHASE2 -> CLOSING -> CLOSED   (a cooperative processor's own `close()`, on a thread)
        COMPLETE -> SAVE_SNAPSHOT__COMPLETE -> ... -> COMPLETE, COMPLETE -> COMMIT_FINISH__COMPLETE
        WAIT_PHASE2 -> COMMIT_FINISH__FINAL -> WAIT_PHASE2
    COMPLETE -> WAIT_PHASE2 -> EMIT_DONE -> ...        (phase 2 of a snapshot it took part in due)

As in Jet's `ProcessorState`, a state that returns somewhere carries its return point in its name
(`__PROCESS`, `__COMPLETE`, `__FINAL`; `RETURN_TO`), and each state has one handler (`_HANDLERS`).

Invariants: a method that returned False is called again before any other (except
`snapshot_commit_finish`); `process` gets the same inbox until it is empty; `try_process` runs
whenever the inbox is empty once the inbound edges were drained the first time (so before the
first batch too when none has arrived then, as in Jet), never during restore;
`save_to_snapshot` only with an empty inbox; `snapshot_commit_finish` may not emit; nothing is
emitted once `complete()` returned True (the outbox is sealed); a call ends after a method that
left an offer unfinished; `close` runs exactly once. A method that must return a bool and
returns anything else (None from a forgotten `return`) fails the job with
`ProcessorContractError` naming the class and method: read as False it would be called forever.
"""

from __future__ import annotations

import enum
import logging
import reprlib
import threading
from collections import deque
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import attrs

from jetspark.core.context import ProcessorContext
from jetspark.core.errors import ProcessorContractError, not_a_bool
from jetspark.core.processor import Processor
from jetspark.core.watermark import Watermark
from jetspark.engine.coalescer import WatermarkCoalescer
from jetspark.engine.forwarding_watch import ForwardingWatch
from jetspark.engine.gc_pause import gc_paused
from jetspark.engine.inbound import InboundStream
from jetspark.engine.list_inbox import ListInbox
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.snapshot import SnapshotContext, changed_keys, saves_incrementally
from jetspark.engine.special import DONE, SnapshotBarrier

_log = logging.getLogger("jetspark.engine")
RESTORE_BATCH = 1024


@attrs.frozen
class CarriedOver:
    """What a processor that goes on into a later execution with its state (a Spark epoch's state
    cache, `ProcessorTasklet.go_on`) brings from the earlier one besides that state."""

    #: Inbound ordinals whose `complete_edge` returned True: their end is not reported again (a
    #: completed producer ends its edge in every execution).
    completed_ordinals: frozenset[int] = frozenset()
    #: Per outbound ordinal: the last watermark sent (None: none) and whether the idle marker
    #: followed it; sent again first (`OutboxImpl.replay_watermarks`), since the consumers are
    #: new and wait for a watermark from every producer.
    sent_watermarks: tuple[tuple[int | None, bool], ...] = ()
    #: The last watermark it was given (None: none): it is not given one again up to that.
    given_watermark: int | None = None


class State(enum.Enum):
    RESTORE = "restore"
    FINISH_RESTORE = "finish_restore"
    PROCESS_WATERMARKS = "process_watermarks"
    NULLARY_PROCESS = "nullary_process"
    PROCESS_INBOX = "process_inbox"
    COMPLETE_EDGE = "complete_edge"
    SAVE_SNAPSHOT__PROCESS = "save_snapshot__process"
    SAVE_SNAPSHOT__COMPLETE = "save_snapshot__complete"
    COMMIT_PREPARE__PROCESS = "commit_prepare__process"
    COMMIT_PREPARE__COMPLETE = "commit_prepare__complete"
    EMIT_BARRIER__PROCESS = "emit_barrier__process"
    EMIT_BARRIER__COMPLETE = "emit_barrier__complete"
    COMMIT_FINISH__PROCESS = "commit_finish__process"
    COMMIT_FINISH__COMPLETE = "commit_finish__complete"
    COMMIT_FINISH__FINAL = "commit_finish__final"
    COMPLETE = "complete"
    EMIT_DONE = "emit_done"
    WAIT_PHASE2 = "wait_phase2"
    CLOSING = "closing"
    CLOSED = "closed"


#: Where each snapshot and phase-2 state returns to once it is done.
RETURN_TO = {
    State.SAVE_SNAPSHOT__PROCESS: State.PROCESS_INBOX,
    State.SAVE_SNAPSHOT__COMPLETE: State.COMPLETE,
    State.COMMIT_PREPARE__PROCESS: State.PROCESS_INBOX,
    State.COMMIT_PREPARE__COMPLETE: State.COMPLETE,
    State.EMIT_BARRIER__PROCESS: State.PROCESS_INBOX,
    State.EMIT_BARRIER__COMPLETE: State.COMPLETE,
    State.COMMIT_FINISH__PROCESS: State.PROCESS_INBOX,
    State.COMMIT_FINISH__COMPLETE: State.COMPLETE,
    State.COMMIT_FINISH__FINAL: State.WAIT_PHASE2,
}
#: The snapshot's states from where it is taken: save, commit-prepare, emit the barrier.
_SNAPSHOT_STEPS = {
    State.PROCESS_INBOX: (
        State.SAVE_SNAPSHOT__PROCESS,
        State.COMMIT_PREPARE__PROCESS,
        State.EMIT_BARRIER__PROCESS,
    ),
    State.COMPLETE: (
        State.SAVE_SNAPSHOT__COMPLETE,
        State.COMMIT_PREPARE__COMPLETE,
        State.EMIT_BARRIER__COMPLETE,
    ),
}
#: Phase 2 (`snapshot_commit_finish`) from the state it interrupts.
_COMMIT_FINISH_FROM = {
    State.PROCESS_INBOX: State.COMMIT_FINISH__PROCESS,
    State.COMPLETE: State.COMMIT_FINISH__COMPLETE,
    State.WAIT_PHASE2: State.COMMIT_FINISH__FINAL,
}


class ProcessorTasklet:
    """Owns one processor, its inbox, outbox and inbound streams."""

    def __init__(
        self,
        processor: Processor,
        context: ProcessorContext,
        outbox: OutboxImpl,
        streams: Sequence[InboundStream],
        snapshot_context: SnapshotContext,
        restore_entries: list[tuple[Any, Any]] | None = None,
    ) -> None:
        self.processor = processor
        self.context = context
        self.outbox = outbox
        self.name = f"vertex {context.vertex_name!r} processor #{context.global_processor_index}"
        self.streams = list(streams)
        self.snapshot_context = snapshot_context
        self.inbox = ListInbox()
        cooperative = processor.is_cooperative()
        if cooperative is not True and cooperative is not False:
            # read as a bool, a forgotten return (None) would make the processor non-cooperative
            # without a word: a thread of its own, where the user expected the shared loop
            raise not_a_bool(
                processor,
                "is_cooperative",
                cooperative,
                "return True (the default) when no call blocks, False to get a thread of its own",
            )
        self.is_cooperative = cooperative
        priorities = sorted({s.priority for s in self.streams})
        self._groups = [[s for s in self.streams if s.priority == p] for p in priorities]
        self._group_index = 0
        self._round_robin = 0
        self._position = {id(s): i for i, s in enumerate(self.streams)}
        self._coalescer = WatermarkCoalescer(len(self.streams), self.name)
        self._pending_watermarks: deque[Watermark] = deque()
        self._current_stream: InboundStream | None = None
        self._edges_to_complete: deque[InboundStream] = deque()
        #: Inbound ordinals whose `complete_edge` returned True (a kept processor's, across Spark
        #: epochs, include those of earlier runs: it is not told again).
        self.completed_ordinals: set[int] = set()
        #: A kept processor's (`go_on`): what its outbound edges were sent last, and the last
        #: watermark it was given, in the earlier execution.
        self._replay_watermarks: list[tuple[int | None, bool]] = []
        self._given_before: int | None = None
        self._pruned: set[int] = set()
        self._chunks: list[list[Any]] = []
        self._done_emitted = False
        #: The thread running a cooperative processor's `close()` (`CLOSING`) and what it raised.
        self._closer: threading.Thread | None = None
        self._close_error: BaseException | None = None
        #: A terminal barrier went out: the processor ends after phase 2, without DONE.
        self._terminated = False
        #: The inbound edges were drained at least once: from then on `try_process` runs.
        self._fill_attempted = False
        self._restore_entries = restore_entries
        self._restore_position = 0
        self._barrier: SnapshotBarrier | None = None
        self._saving_for = -1  # the snapshot whose save_to_snapshot has been called
        self.last_snapshot_id = snapshot_context.phase1_id
        self._phase2_done_id = snapshot_context.phase2_id
        self.received_count = 0
        #: Warnings of the quiescence check that named this processor (a quiet source, a long call).
        self.stall_warnings = 0
        #: The last watermark the processor accepted (`try_process_watermark` returned True).
        self.input_watermark: int | None = None
        #: Warns when the processor takes watermarks and sends none on (`forwarding_watch`).
        self._forwarding = ForwardingWatch(bool(outbox.collectors))
        self.closed = False
        self.initialized = False
        #: Set by `go_on`: how the processor takes this execution's outbox and context instead of init.
        self._bind: Callable[[Any, Any], None] | None = None
        #: `close()` leaves the processor open: its owner keeps it or closes it (`go_on`'s caller).
        self.close_deferred = False
        for position, stream in enumerate(self.streams):
            if stream.is_done:  # no producer at all (pruned upstream): the edge is exhausted at once,
                self._pruned.add(id(stream))  # completed when its priority group's turn comes
                self._pending_watermarks.extend(self._coalescer.queue_done(position))
        if restore_entries is not None:
            self.state = State.RESTORE
        else:
            self.state = self._processing_start_state()

    def _processing_start_state(self) -> State:
        return State.PROCESS_WATERMARKS if self.streams else State.COMPLETE

    # ---- lifecycle ------------------------------------------------------------------------

    def init(self) -> None:
        if self._bind is not None:
            self._bind(self.outbox, self.context)
            if self._replay_watermarks:
                self.outbox.replay_watermarks(self._replay_watermarks)
        else:
            # the outbox is for the processing methods: Jet's refuses every offer before its
            # first call (no batch budget yet), and an item offered here would reach downstream
            # before the restore and the edges' start
            self.outbox.forbid_offers("init")
            try:
                self.processor.init(self.outbox, self.context)
            finally:
                self.outbox.forbid_offers(None)
        self.initialized = True

    def carried_over(self) -> CarriedOver:
        """What this processor would bring into a later execution that goes on with it."""
        return CarriedOver(
            frozenset(self.completed_ordinals), tuple(self.outbox.watermark_state()), self.input_watermark
        )

    def go_on(
        self,
        bind: Callable[[Any, Any], None],
        carried: CarriedOver | None = None,
        outbox_before: object = None,
    ) -> None:
        """The processor goes on from an earlier execution with its state (a Spark epoch's state
        cache): `bind(outbox, context)` replaces `init`, and nothing is restored; what it
        `carried` over from that execution (`CarriedOver`) is honoured. `outbox_before`, the
        outbox it was given then, takes this execution's outbox's place: a processor may hold on
        to the outbox (or its `offer`) it was given in `init`, as the contract lets it."""
        carried = carried or CarriedOver()
        if isinstance(outbox_before, OutboxImpl) and outbox_before is not self.outbox:
            outbox_before.take_place_of(self.outbox)
            self.outbox = outbox_before
        self._bind = bind
        self.completed_ordinals = set(carried.completed_ordinals)
        self._replay_watermarks = list(carried.sent_watermarks)
        self._given_before = self.input_watermark = carried.given_watermark
        self._restore_entries = None
        self.state = self._processing_start_state()

    def close(self) -> None:
        """Close the processor once. As the contract says, an exception from `close()` is logged
        and does not fail the job; that includes an offer from `close()` (its stream has ended
        downstream), which the outbox refuses with a `ProcessorContractError`: logged as an
        error naming the item, which is dropped."""
        if self.closed:
            return
        self.closed = True
        if self.close_deferred:
            return
        outbox = self.outbox
        sealed_before = outbox.sealed
        outbox.seal("from close()")
        try:
            self.processor.close()
        except ProcessorContractError as error:
            _log.error(
                "%s: close() broke the contract; the job goes on without its item: %s", self.name, error
            )
        except Exception:
            _log.exception("%s: close() failed; the error is ignored", self.name)
        finally:
            outbox.seal(sealed_before or "after close()")

    @property
    def is_done(self) -> bool:
        return self.state is State.CLOSED

    # ---- one call -------------------------------------------------------------------------

    def call(self) -> bool:
        """Advance the processor by up to four state-machine steps; True if anything happened.

        A state change alone is not progress, so a tasklet polling empty queues lets its worker
        back off; taking from the inbox, emitting, draining a queue or a returned True is.
        """
        outbox = self.outbox
        buffered_before = outbox.buffered()
        emitted_before = outbox.emitted_count
        progress = False
        for _ in range(4):
            state = self.state
            if self._step(state):
                progress = True
            if self.state is state or self.state is State.CLOSED or outbox.has_unfinished_item():
                break  # an unfinished item: the next method comes in a new call (after the flush)
        if outbox.buffered() != buffered_before:
            progress = True
        outbox.flush()
        return progress or outbox.emitted_count != emitted_before

    def _step(self, state: State) -> bool:
        return _HANDLERS[state](self)

    def _nullary_process(self) -> bool:
        if not self._fill_attempted:  # as Jet: not before the inbox was first filled (or tried)
            self.state = State.PROCESS_INBOX
            return False
        done = self.processor.try_process()
        if done is not True:
            if done is not False:
                raise not_a_bool(self.processor, "try_process", done)
            return False
        self.state = State.PROCESS_INBOX
        return False

    def _check_nothing_refused(self, method: str) -> None:
        """A method that says it is done must not leave a refused offer behind (Jet asserts the
        same in its outbox): its item would be lost, or blamed on the next method."""
        if self.outbox.has_unfinished_item():
            raise ProcessorContractError(
                f"{self.name}: {method}() returned True while the outbox still holds "
                f"{reprlib.repr(self.outbox.unfinished_item)}, which it refused; after a refused offer "
                "return False and offer the same item again on the next call (the item would be lost)"
            )

    def _complete_edge(self) -> bool:
        stream = self._edges_to_complete[0]
        if stream.ordinal in self.completed_ordinals:
            done = True  # it ended for this processor before (a kept one's earlier epoch)
        else:
            done = self.processor.complete_edge(stream.ordinal)
        if done is True:
            self._check_nothing_refused("complete_edge")
            self.completed_ordinals.add(stream.ordinal)
            self._edges_to_complete.popleft()
            if (
                self._edges_to_complete
                or self._pending_watermarks
                or self._pruned  # an edge without producers, completed in its priority's turn
                or not all(s.is_done for s in self.streams)
            ):
                self.state = State.PROCESS_WATERMARKS  # as Jet: watermarks and try_process next
            else:
                self.state = State.COMPLETE  # as Jet: every edge ended, no try_process first
            return True
        if done is not False:
            raise not_a_bool(self.processor, "complete_edge", done)
        return False

    def _commit_prepare(self) -> bool:
        self.outbox.allow_snapshot_offers("snapshot_commit_prepare")
        try:
            done = self.processor.snapshot_commit_prepare()
        finally:
            self.outbox.allow_snapshot_offers(None)
        if done is not True and done is not False:
            raise not_a_bool(self.processor, "snapshot_commit_prepare", done)
        if done:
            self._check_nothing_refused("snapshot_commit_prepare")
            self.state = _SNAPSHOT_STEPS[RETURN_TO[self.state]][2]
        return done

    def _finish_restore(self) -> bool:
        done = self.processor.finish_snapshot_restore()
        if done is True:
            self._check_nothing_refused("finish_snapshot_restore")
            self.state = self._processing_start_state()
            return True
        if done is not False:
            raise not_a_bool(self.processor, "finish_snapshot_restore", done)
        return False

    def _emit_done(self) -> bool:
        if self.outbox.offer_special_to_all(DONE):
            self._done_emitted = True
            self.snapshot_context.tasklet_done(self.last_snapshot_id)
            self.state = State.WAIT_PHASE2
            return True
        return False

    def _wait_phase2(self) -> bool:
        if self._enter_phase2_if_pending(State.WAIT_PHASE2):
            return True
        if self._phase2_outstanding():
            return False
        if not self._done_emitted and not self._terminated:
            self.state = State.EMIT_DONE  # complete() returned True during a snapshot: now DONE
            return True
        if not self._closes_off_thread():
            self.state = State.CLOSED
            self.close()
            return True
        self.state = State.CLOSING
        self._closer = threading.Thread(target=self._close_on_thread, name=f"close {self.name}", daemon=True)
        self._closer.start()
        return True

    def _closes_off_thread(self) -> bool:
        """As Jet: a cooperative processor's `close()` may block, so it runs on a thread of its own
        and the worker goes on with the other tasklets; not when the processor says its `close()`
        is cooperative, or keeps `Processor.close` (which does nothing)."""
        processor = self.processor
        return (
            not self.close_deferred  # kept for the next epoch: close() does nothing now
            and self.is_cooperative
            and type(processor).close is not Processor.close
            and not processor.close_is_cooperative()
        )

    def _close_on_thread(self) -> None:
        try:
            self.close()
        except BaseException as error:  # raised on the tasklet's own thread (`_closing`)
            self._close_error = error

    def wait_for_close(self, timeout: float | None = None) -> None:
        """Wait until an off-thread `close()` (`CLOSING`) has returned; the next `call()` then
        finishes the tasklet. For drivers that call a tasklet on their own (tests, the test kit)."""
        if self._closer is not None:
            self._closer.join(timeout)

    def closing_under_way(self) -> bool:
        """Whether the processor's `close()` is running on its own thread right now."""
        return self._closer is not None and self._closer.is_alive()

    def _closing(self) -> bool:
        closer = self._closer
        assert closer is not None
        if closer.is_alive():
            return False
        self.state = State.CLOSED
        if self._close_error is not None:
            raise self._close_error
        return True

    def _closed(self) -> bool:
        return False

    # ---- processing -----------------------------------------------------------------------

    def _process_inbox(self) -> bool:
        if self._enter_phase2_if_pending(State.PROCESS_INBOX):
            return True
        inbox = self.inbox
        if inbox.is_empty():
            barrier = self._aligned_barrier()
            if barrier is not None:
                return self._begin_snapshot(barrier)
            progress = self._fill_inbox()
            if inbox.is_empty():
                return self._after_empty_inbox() or progress
        stream = self._current_stream
        assert stream is not None
        size = inbox.size()
        self.processor.process(stream.ordinal, inbox)
        if inbox.is_empty():
            inbox.clear()
            self._after_empty_inbox()
            return True
        return inbox.size() != size

    def _fill_inbox(self) -> bool:
        self._fill_attempted = True
        progress = False
        while self._group_index < len(self._groups):
            group = self._groups[self._group_index]
            count = len(group)
            for step in range(count):
                stream = group[(self._round_robin + step) % count]
                if stream.is_done:
                    if self._pruned and id(stream) in self._pruned:
                        self._pruned.discard(id(stream))
                        self._edges_to_complete.append(stream)
                        return True
                    continue
                chunks = self._chunks
                if stream.drain_to(chunks):
                    progress = True
                if stream.pending_watermarks:
                    self._observe_edge_watermarks(stream)
                if stream.is_done:
                    self._edges_to_complete.append(stream)
                    self._pending_watermarks.extend(self._coalescer.queue_done(self._position[id(stream)]))
                    if not chunks:  # complete_edge comes before any other edge's (or group's) items
                        return True
                if chunks:
                    items = chunks[0] if len(chunks) == 1 else list(chain.from_iterable(chunks))
                    chunks.clear()
                    self.inbox.fill(items)
                    self.received_count += len(items)
                    self._current_stream = stream
                    self._round_robin = (self._round_robin + step + 1) % count
                    position = self._position[id(stream)]
                    if self._coalescer.is_idle(position):  # an item makes an idle edge active again
                        self._coalescer.observe_item(position)
                    return True
            if all(s.is_done for s in group):
                self._group_index += 1
                self._round_robin = 0
                continue
            break
        return progress

    def _observe_edge_watermarks(self, stream: InboundStream) -> None:
        position = self._position[id(stream)]
        for watermark in stream.pending_watermarks:
            self._pending_watermarks.extend(self._coalescer.observe(position, watermark))
        stream.pending_watermarks.clear()

    def _after_empty_inbox(self) -> bool:
        """The inbox is empty: pick the next state. True when that is more than the usual loop."""
        if self._edges_to_complete:
            self.state = State.COMPLETE_EDGE
            return True
        barrier = self._aligned_barrier()
        if barrier is not None:
            return self._begin_snapshot(barrier)
        if self._group_index >= len(self._groups):
            self.state = State.COMPLETE
            return True
        self.state = State.PROCESS_WATERMARKS
        return False

    def _begin_snapshot(self, barrier: SnapshotBarrier) -> bool:
        self._barrier = barrier
        self.state = State.SAVE_SNAPSHOT__PROCESS
        return True

    def _aligned_barrier(self) -> SnapshotBarrier | None:
        """The barrier that has arrived on every inbound edge that is not done, if any."""
        if not self.snapshot_context.phase1_in_progress:  # no snapshot, no barrier: skip the scan
            return None
        barrier: SnapshotBarrier | None = None
        for stream in self.streams:
            if stream.barrier is not None:
                barrier = stream.barrier
        if barrier is None:
            return None
        for stream in self.streams:
            if not (stream.is_done or stream.barrier_complete):
                return None
        return barrier

    def _process_watermarks(self) -> bool:
        pending = self._pending_watermarks
        if not pending:
            self.state = State.NULLARY_PROCESS
            return False
        watermark = pending[0]
        if watermark.is_idle():
            done = self.outbox.offer(watermark) if self.outbox.bucket_count() else True
        elif self._given_before is not None and watermark.timestamp <= self._given_before:
            done = True  # a kept processor had it in an earlier execution
        else:
            done = self.processor.try_process_watermark(watermark)
            if done is True:
                self._check_nothing_refused("try_process_watermark")
                self.input_watermark = watermark.timestamp
                if self._forwarding.active:
                    self._forwarding.taken(self.context, self.outbox.sent_any_watermark())
            elif done is not False:
                raise not_a_bool(self.processor, "try_process_watermark", done)
        if done:
            pending.popleft()
        return done

    def _complete(self) -> bool:
        if self._enter_phase2_if_pending(State.COMPLETE):
            return True
        snapshot = self.snapshot_context
        blocked = False
        if snapshot.phase1_in_progress and snapshot.phase1_id > self.last_snapshot_id:
            if not self.outbox.has_unfinished_item():
                self._barrier = SnapshotBarrier(snapshot.phase1_id, snapshot.terminal, snapshot.export_only)
                self.state = State.SAVE_SNAPSHOT__COMPLETE
                return True
            # a rejected item must go out before the snapshot: let only that one through
            blocked = True
            self.outbox.block(True)
        try:
            done = self.processor.complete()
        finally:
            if blocked:
                self.outbox.block(False)
        if done is not True and done is not False:
            raise not_a_bool(self.processor, "complete", done)
        if done:
            self._check_nothing_refused("complete")
            self.outbox.seal("after complete() returned True")
            # As Jet: DONE goes downstream only after phase 2 of a snapshot this processor took part in.
            self.state = State.WAIT_PHASE2 if self._phase2_outstanding() else State.EMIT_DONE
            return True
        return False

    # ---- snapshots ------------------------------------------------------------------------

    def _save_snapshot(self) -> bool:
        barrier = self._barrier
        if barrier is not None and self._saving_for != barrier.snapshot_id:
            self._saving_for = barrier.snapshot_id  # the first call of this snapshot's save
            self.outbox.snapshot_partitions = set()
            self._begin_save()
        self.outbox.allow_snapshot_offers("save_to_snapshot")
        try:
            # A full save builds an object or two per key (the built-ins' first call builds all
            # of them): with the collector paused, a quarter less CPU (`gc_pause`).
            with gc_paused():
                done = self.processor.save_to_snapshot()
        finally:
            self.outbox.allow_snapshot_offers(None)
        if done is not True and done is not False:
            raise not_a_bool(self.processor, "save_to_snapshot", done)
        if done:
            self._check_nothing_refused("save_to_snapshot")  # else the entry is missing from it
            self.outbox.end_incremental()
            assert self._barrier is not None
            _, prepare, emit = _SNAPSHOT_STEPS[RETURN_TO[self.state]]
            self.state = emit if self._barrier.is_export_only else prepare
        return done

    def _begin_save(self) -> None:
        """An incremental snapshot where the runner allows one and the processor names the keys
        that changed (`changed_snapshot_keys`); else a full one."""
        vertex = self.context.vertex_name
        snapshot = self.snapshot_context
        if vertex not in snapshot.incremental:
            return
        if not saves_incrementally(self.processor):
            snapshot.full_saves.add(vertex)
            return
        changed = changed_keys(self.processor)
        if snapshot.many_changed(vertex, len(changed) * self.context.local_parallelism):
            return  # most of the state changed: a full save, cheaper and read once by a restore
        self.outbox.save_only(changed)

    def _emit_barrier(self) -> bool:
        barrier = self._barrier
        assert barrier is not None
        if not self.outbox.offer_special_to_all(barrier):
            return False
        for stream in self.streams:
            stream.reset_barrier()
        self.last_snapshot_id = barrier.snapshot_id
        self._barrier = None
        self.snapshot_context.phase1_done(barrier.snapshot_id)
        if barrier.is_terminal:  # the end of the output (on Spark, of the epoch's): no DONE follows
            self._terminated = True
            self.snapshot_context.tasklet_done(self.last_snapshot_id)
            self.state = State.WAIT_PHASE2
        else:
            self.state = RETURN_TO[self.state]
        return True

    def _enter_phase2_if_pending(self, current: State) -> bool:
        """Go to the COMMIT_FINISH state that returns to `current` if phase 2 of a snapshot this
        processor took part in is due."""
        if not self._phase2_pending():
            return False
        self.state = _COMMIT_FINISH_FROM[current]
        return True

    def _phase2_pending(self) -> bool:
        snapshot = self.snapshot_context
        return (
            snapshot.phase2_id > self._phase2_done_id
            and snapshot.phase2_id <= self.last_snapshot_id
            and not snapshot.export_only
        )

    def _phase2_outstanding(self) -> bool:
        """This processor took part in a snapshot whose phase 2 has not been requested yet."""
        snapshot = self.snapshot_context
        return (
            self.last_snapshot_id > self._phase2_done_id
            and not snapshot.export_only
            and (snapshot.phase1_in_progress or snapshot.phase2_in_progress)
        )

    def _commit_finish(self) -> bool:
        snapshot = self.snapshot_context
        self.outbox.forbid_offers("snapshot_commit_finish")
        try:
            done = self.processor.snapshot_commit_finish(snapshot.phase2_success)
        finally:
            self.outbox.forbid_offers(None)
        if done is not True and done is not False:
            raise not_a_bool(self.processor, "snapshot_commit_finish", done)
        if done:
            self._phase2_done_id = snapshot.phase2_id
            snapshot.phase2_done(snapshot.phase2_id)
            self.state = RETURN_TO[self.state]
        return done

    def _restore(self) -> bool:
        inbox = self.inbox
        entries = self._restore_entries
        assert entries is not None
        if inbox.is_empty():
            if self._restore_position >= len(entries):
                inbox.clear()
                self._restore_entries = None
                self.state = State.FINISH_RESTORE
                return True
            end = self._restore_position + RESTORE_BATCH
            inbox.fill(entries[self._restore_position : end])
            self._restore_position = min(end, len(entries))
        size = inbox.size()
        self.processor.restore_from_snapshot(inbox)
        return inbox.size() != size

    # ---- status (metrics and the quiescence check) ---------------------------------------

    @property
    def upstream_watermark(self) -> int | None:
        """The coalesced watermark of all inbound edges (None before the first one)."""
        return self._coalescer.last_forwarded

    def queued_count(self) -> int:
        """Items waiting in this processor's inbound queues."""
        return sum(len(queue) for stream in self.streams for queue in stream.queues)

    def pending_count(self) -> int:
        """Items this tasklet holds that have not reached the next one: queued, in the inbox, in
        the outbox's buffers (a refused offer included), and watermarks the processor has yet to take."""
        unfinished = 1 if self.outbox.has_unfinished_item() else 0
        held = len(self._pending_watermarks)
        return self.queued_count() + self.inbox.size() + self.outbox.buffered() + unfinished + held

    def awaits_completion(self) -> bool:
        """True when every inbound edge has ended but the processor has not completed: it has all
        its input, so only it can end the job (a processor with no input may be waiting for data)."""
        return (
            bool(self.streams)
            and all(stream.is_done for stream in self.streams)
            and self.state
            in (
                State.PROCESS_INBOX,
                State.PROCESS_WATERMARKS,
                State.NULLARY_PROCESS,
                State.COMPLETE_EDGE,  # an ended edge's complete_edge() that keeps returning False
                State.COMPLETE,
            )
        )

    def status_line(self) -> str:
        """One line for a stuck job's dump: state, watermarks and what is pending where."""
        return (
            f"{self.name}: state={self.state.value} watermarks upstream={self.upstream_watermark} "
            f"input={self.input_watermark} output={self.outbox.output_watermark()}; pending: "
            f"queued={self.queued_count()} inbox={self.inbox.size()} outbox={self.outbox.buffered()}"
            f"{' +1 refused' if self.outbox.has_unfinished_item() else ''}"
            f"{f' watermarks not taken={len(self._pending_watermarks)}' if self._pending_watermarks else ''}"
            f"{'; every input ended, not completed' if self.awaits_completion() else ''}"
        )

    def __repr__(self) -> str:
        return f"ProcessorTasklet({self.name}, state={self.state.value})"


#: One handler per state (`ProcessorTasklet._step`).
_HANDLERS: dict[State, Callable[[ProcessorTasklet], bool]] = {
    State.RESTORE: ProcessorTasklet._restore,
    State.FINISH_RESTORE: ProcessorTasklet._finish_restore,
    State.PROCESS_WATERMARKS: ProcessorTasklet._process_watermarks,
    State.NULLARY_PROCESS: ProcessorTasklet._nullary_process,
    State.PROCESS_INBOX: ProcessorTasklet._process_inbox,
    State.COMPLETE_EDGE: ProcessorTasklet._complete_edge,
    State.SAVE_SNAPSHOT__PROCESS: ProcessorTasklet._save_snapshot,
    State.SAVE_SNAPSHOT__COMPLETE: ProcessorTasklet._save_snapshot,
    State.COMMIT_PREPARE__PROCESS: ProcessorTasklet._commit_prepare,
    State.COMMIT_PREPARE__COMPLETE: ProcessorTasklet._commit_prepare,
    State.EMIT_BARRIER__PROCESS: ProcessorTasklet._emit_barrier,
    State.EMIT_BARRIER__COMPLETE: ProcessorTasklet._emit_barrier,
    State.COMMIT_FINISH__PROCESS: ProcessorTasklet._commit_finish,
    State.COMMIT_FINISH__COMPLETE: ProcessorTasklet._commit_finish,
    State.COMMIT_FINISH__FINAL: ProcessorTasklet._commit_finish,
    State.COMPLETE: ProcessorTasklet._complete,
    State.EMIT_DONE: ProcessorTasklet._emit_done,
    State.WAIT_PHASE2: ProcessorTasklet._wait_phase2,
    State.CLOSING: ProcessorTasklet._closing,
    State.CLOSED: ProcessorTasklet._closed,
}

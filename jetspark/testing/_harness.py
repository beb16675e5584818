"""The harness: drives the processors of one mode through the contract, checking every call.

It plays the tasklet's part (jetspark/engine/tasklet.py) one step at a time, synchronously, on
the real `OutboxImpl`, `ListInbox` and `WatermarkCoalescer`: `try_process` whenever the inbox is
empty (before each batch, the first too, and before `complete_edge`), `process` until the inbox is empty, `try_process_watermark` for each coalesced input
watermark, `complete_edge` when an ordinal ends, `complete` until True; snapshots with
`save_to_snapshot`, `snapshot_commit_prepare` and `snapshot_commit_finish(True)` (offers forbidden
there, as the tasklet does); restore into fresh processors made by a new execution.

Checks on every call (each raises a `Violation` naming the failure class): progress (a call that
returns False or leaves the inbox non-empty took or emitted something), duration of cooperative
calls, no emission from `snapshot_commit_finish`, the re-offer rule (the engine's outbox enforces
it; a method returning True with a rejected item pending breaks it too), bounded method loops.
After a `process` call that left items in the inbox with the outbox full, `process` is called
again with the outbox still full. Every processor made is closed exactly once.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from typing import Any

from jetspark.checkpoint.deltas import merge
from jetspark.core.errors import ProcessorContractError, not_a_bool
from jetspark.core.watermark import Watermark
from jetspark.engine.coalescer import WatermarkCoalescer
from jetspark.engine.execution import IdleStrategy
from jetspark.engine.snapshot import SnapshotEntry, changed_keys, saves_incrementally
from jetspark.testing._calls import CallArgs, CallLog, CallRecord, CallResult
from jetspark.testing._capture import Instance
from jetspark.testing._context import Layout, ProcessorFactory
from jetspark.testing._cpu_wait import CpuWait
from jetspark.testing._kinds import FailureKind, Violation
from jetspark.testing._modes import LARGE, Batch, Event, Mode, WatermarkEvent
from jetspark.testing._routing import Router, unpickle_entries
from jetspark.testing._settings import COOPERATIVE_WARN_SECONDS, Settings

#: In incremental modes, a full snapshot every this many (the rest save only what changed).
FULL_EVERY = 4
#: Methods that may block even in a cooperative processor.
_MAY_BLOCK = frozenset({"init", "close"})


class Harness:
    """Runs the processors of one mode; `outputs[ordinal]` is what they emitted, merged."""

    def __init__(
        self, settings: Settings, mode: Mode, factory: ProcessorFactory, log: CallLog, output_count: int
    ) -> None:
        self.settings = settings
        self.mode = mode
        self.factory = factory
        self._cpu_wait = CpuWait()
        self.log = log
        self.input_count = len(settings.inputs)
        self.output_count = output_count
        self.outputs: list[list[Any]] = [[] for _ in range(output_count)]
        self.instances: list[Instance] = []
        self.made: list[Instance] = []
        self.router: Router | None = None
        self.layout = mode.layouts[0]
        self.points = 0
        self.snapshots = 0
        self.restores = 0
        self._entries: list[SnapshotEntry] = []
        #: An incremental mode's last snapshot, whole (the chain applied): what a delta applies on.
        self._last: list[SnapshotEntry] | None = None
        #: In incremental modes, per snapshot: the entries it wrote (deletions too) when it was
        #: incremental, else None.
        self.deltas: list[list[SnapshotEntry] | None] = []
        self._merge: list[WatermarkCoalescer] | None = None
        self._floor: list[int | None] = [None] * output_count
        self._idle = IdleStrategy()
        #: A restore came in several batches of the mode's inbox size (`_restore_into`).
        self._restored_in_batches = False
        #: The input edges' watermark state: it outlives a restore (the edges are not restored,
        #: they go on), so processors made by a restore start from a copy of it.
        self._inputs = WatermarkCoalescer(self.input_count, "input edges")

    # ---- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._create(self.mode.layouts[0])

    def _create(self, layout: Layout) -> None:
        s = self.settings
        ids = layout.processor_ids() if self.mode.multi else [(s.member_index, s.local_index)]
        try:
            made = self.factory.create(layout, ids)
        except Exception as error:
            raise Violation(
                FailureKind.RAISED,
                f"making the processors ({layout}) failed: {type(error).__name__}: {error}",
            ) from error
        self.layout = layout
        self.instances = [
            Instance(
                p,
                c,
                self.output_count,
                self.input_count,
                self.mode.outbox_capacity,
                self._entries.extend,
                position,
                s.partition_count,
            )
            for position, (p, c) in enumerate(made)
        ]
        self.made.extend(self.instances)
        if self.mode.multi:
            self.router = Router(layout, s.partition_count, s.input_routings())
            self._merge = [
                WatermarkCoalescer(len(self.instances), f"output ordinal {o}")
                for o in range(self.output_count)
            ]
        for inst in self.instances:
            inst.coalescer = copy.deepcopy(self._inputs)
            inst.coalescer.name = f"{inst.name} input"
            inst.cooperative = bool(inst.processor.is_cooperative())
            self._invoke(inst, "init", inst.processor.init, inst.outbox, inst.context)
            inst.initialized = True

    def close(self, error: BaseException | None) -> None:
        """Close every processor made and not yet closed, then end the execution. When the run
        went well so far, an offer from `close()` is a violation (the engine logs it and drops
        the item), raised once everything is closed."""
        broken = [message for inst in self.instances if (message := self._close(inst)) is not None]
        for processor in self.factory.discarded:
            _close_quietly(processor, self.log)
        self.factory.discarded.clear()
        self.factory.end_execution(error)
        if broken and error is None:
            raise Violation(FailureKind.CONTRACT, broken[0])

    def _close(self, inst: Instance) -> str | None:
        """Close one processor; the message of a broken contract (an offer from close()), if any."""
        if inst.closed:
            return None
        inst.closed = True
        record = self._record(inst, "close", "")
        start = time.perf_counter()
        broken = None
        inst.outbox.seal("from close()")
        try:
            inst.processor.close()
            record.result = "done"
        except ProcessorContractError as error:
            record.result = f"raised {error}"
            broken = f"{inst.name}: close(): {error}"
        except Exception as error:  # the engine logs and ignores it, so does the kit
            record.result = f"raised {type(error).__name__}: {error} (ignored, as the engine does)"
            self.log.warn(f"{inst.name}: close() raised {type(error).__name__}: {error}")
        record.seconds = time.perf_counter() - start
        self.log.finished(record)
        return broken

    # ---- input ----------------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        if isinstance(event, Batch):
            self.feed(event.ordinal, event.items)
        elif isinstance(event, WatermarkEvent):
            self.feed_watermark(event.ordinal, event.watermark)
        else:
            self.end_input(event.ordinal)

    def feed(self, ordinal: int, items: Sequence[Any]) -> None:
        if self.router is None:
            shares = [list(items)]
        else:
            shares = self.router.split(ordinal, items)
        for inst, share in zip(self.instances, shares):
            if share:
                self._process_batch(inst, ordinal, share)

    def feed_watermark(self, ordinal: int, watermark: Watermark) -> None:
        self._inputs.observe(ordinal, watermark)
        for inst in self.instances:
            self._deliver(inst, inst.coalescer.observe(ordinal, watermark))

    def end_input(self, ordinal: int) -> None:
        self._inputs.queue_done(ordinal)
        for inst in self.instances:
            self._until_true(inst, "try_process", inst.processor.try_process)
            self._until_true(inst, "complete_edge", inst.processor.complete_edge, ordinal)
            self._deliver(inst, inst.coalescer.queue_done(ordinal))

    def _process_batch(self, inst: Instance, ordinal: int, items: list[Any]) -> None:
        processor = inst.processor
        self._until_true(inst, "try_process", processor.try_process)  # the inbox is empty now
        inbox = inst.inbox
        inbox.fill(items)
        if inst.coalescer.is_idle(ordinal):  # an item makes an idle edge active again
            inst.coalescer.observe_item(ordinal)
            self._inputs.observe_item(ordinal)
        calls = 0
        stalled_since: float | None = None
        started = time.monotonic()
        while not inbox.is_empty():
            size = inbox.size()
            mark = inst.mark()
            self._invoke(inst, "process", processor.process, ordinal, inbox)
            progressed = inbox.size() < size or inst.mark() != mark
            if not progressed and self.settings.assert_progress:
                raise Violation(
                    FailureKind.NO_PROGRESS,
                    f"{inst.name}: process() call without progress: it took no item from the inbox "
                    f"({size} left) and emitted nothing",
                )
            if not inbox.is_empty() and inst.outbox_full():
                inst.block(True)
                try:
                    inst.outbox.flush()  # ends the call, as the tasklet's flush does, moving nothing
                    self._invoke(
                        inst,
                        "process",
                        processor.process,
                        ordinal,
                        inbox,
                        note="again, with the outbox still full",
                    )
                finally:
                    inst.block(False)
            self._collect(inst)
            calls, stalled_since = self._guard(inst, "process", calls, progressed, stalled_since, started)
        inbox.clear()

    def _deliver(self, inst: Instance, watermarks: list[Watermark]) -> None:
        for watermark in watermarks:
            if watermark.is_idle():  # the tasklet forwards the idle marker itself
                if inst.outbox.bucket_count():
                    self._until_true(inst, "(kit) forward idle marker", inst.outbox.offer, watermark)
            else:
                self._until_true(
                    inst,
                    "try_process_watermark",
                    inst.processor.try_process_watermark,
                    watermark,
                    again_when_full=True,
                )

    # ---- completion -----------------------------------------------------------------------

    def complete(self, matches: Callable[[], bool] | None = None) -> None:
        """Call `complete()` on every processor until all returned True, or, with `matches` (run
        until the output matches), until the output matched for `extra` seconds or `timeout` passed."""
        run_until = self.settings.run_until
        start = time.monotonic()
        restores_before = self.restores
        matched_at: float | None = None
        calls = 0
        stalled_since: float | None = None
        while True:
            pending = [inst for inst in self.instances if not inst.completed]
            if not pending:
                break
            any_progress = False
            for inst in pending:
                mark = inst.mark()
                done = self._as_bool(
                    inst, "complete", self._invoke(inst, "complete", inst.processor.complete)
                )
                progressed = done or inst.mark() != mark
                self._check_result(inst, "complete", done, progressed)
                self._collect(inst)
                any_progress = any_progress or progressed
                if done:
                    self._completed(inst)
            still = [inst for inst in self.instances if not inst.completed]
            if still and any_progress and len(still) == len(self.instances):
                self.snapshot_point()
            if matches is not None and run_until is not None:
                now = time.monotonic()
                if matches():
                    matched_at = now if matched_at is None else matched_at
                elif matched_at is not None:
                    raise Violation(
                        FailureKind.WRONG_OUTPUT, "the output matched, but does not match any more"
                    )
                timeout, extra = run_until
                if now - start > timeout or (matched_at is not None and now - matched_at > extra):
                    return
            calls, stalled_since = self._guard(
                pending[0], "complete", calls, any_progress, stalled_since, start, restores_before
            )

    def _completed(self, inst: Instance) -> None:
        inst.completed = True
        inst.outbox.seal("after complete() returned True")  # as the tasklet does: its DONE went out
        if self._merge is not None:  # DONE reaches the downstream coalescer
            for ordinal, coalescer in enumerate(self._merge):
                self._append_watermarks(ordinal, coalescer.queue_done(inst.position))

    # ---- snapshots ------------------------------------------------------------------------

    def snapshot_point(self) -> None:
        """A point where the processors may be snapshotted: the mode decides what happens.

        Not while an offer is unfinished: as in Jet, the item must go out before the snapshot.
        """
        if any(inst.outbox.has_unfinished_item() for inst in self.instances):
            return
        self.points += 1
        if self.mode.snapshots:
            self.snapshot(restore=self.mode.restores_at(self.points))

    def snapshot(self, restore: bool, layout: Layout | None = None) -> None:
        """Phase 1 and phase 2 on every processor; then, if `restore`, restore into new ones (in
        `layout`, or the mode's next layout). An incremental mode's snapshot after the first
        saves only what changed (as a Spark epoch may) and is applied on the last one."""
        self._entries.clear()
        incremental = self._incremental_now()
        kind = "incremental snapshot" if incremental else "snapshot"
        self.log.note(f"{kind} {self.snapshots + 1} at point {self.points}")
        for inst in self.instances:
            if incremental:
                inst.outbox.save_only(changed_keys(inst.processor))
            self._until_true(inst, "save_to_snapshot", _with_snapshot_offers(inst, "save_to_snapshot"))
            if incremental:  # deletions for the changed keys not offered, into `_entries`
                inst.outbox.end_incremental()
                inst.outbox.flush()
            self._until_true(
                inst, "snapshot_commit_prepare", _with_snapshot_offers(inst, "snapshot_commit_prepare")
            )
        for inst in self.instances:
            inst.outbox.forbid_offers("snapshot_commit_finish")
            try:
                self._until_true(
                    inst,
                    "snapshot_commit_finish",
                    inst.processor.snapshot_commit_finish,
                    True,
                    progress_check=False,
                )
            finally:
                inst.outbox.forbid_offers(None)
        self.snapshots += 1
        if self.mode.incremental:
            self.deltas.append(list(self._entries) if incremental else None)
            layers = [self._last or [], self._entries] if incremental else [self._entries]
            self._entries[:] = [SnapshotEntry(*entry) for entry in merge(layers)]
            self._last = list(self._entries)
        if restore:
            self.restore(list(self._entries), layout)

    def _incremental_now(self) -> bool:
        """Whether this snapshot may be incremental: the mode's, not the first, not every
        `FULL_EVERY`-th, and every processor names what changed."""
        return (
            self.mode.incremental
            and self._last is not None
            and self.snapshots % FULL_EVERY != 0
            and all(saves_incrementally(inst.processor) for inst in self.instances)
        )

    def restore(self, entries: list[SnapshotEntry], layout: Layout | None = None) -> None:
        """Close the processors, start a new execution (next layout of the mode, or `layout`) and
        restore `entries` into its processors."""
        self.close(None)
        self.restores += 1
        layouts = self.mode.layouts
        target = layout or layouts[self.restores % len(layouts)]
        self.log.note(f"restore {self.restores} into {target if self.mode.multi else 'a new processor'}")
        self._create(target)
        for inst in self.instances:
            mine = (
                entries
                if self.router is None
                else self.router.entries_for(entries, inst.context.global_processor_index)
            )
            self._restore_into(inst, unpickle_entries(mine))

    def _restore_into(self, inst: Instance, entries: list[tuple[Any, Any]]) -> None:
        """Restore `entries` into `inst`: in batches of the mode's inbox size until one restore
        came in several batches (a processor that expects its whole snapshot in one call fails
        there), then in batches of `LARGE`, as the engine restores (Jet's kit gives the whole
        snapshot at once): one entry per call at every restore made a processor that emits from
        `complete()` with a snapshot point per call cost the square of its state's size."""
        inbox = inst.inbox
        size = self.mode.inbox_size
        if self._restored_in_batches:
            size = max(size, LARGE)
        elif len(entries) > size:
            self._restored_in_batches = True
        for start in range(0, len(entries), size):
            inbox.fill(entries[start : start + size])
            calls = 0
            stalled_since: float | None = None
            started = time.monotonic()
            while not inbox.is_empty():
                before = inbox.size()
                mark = inst.mark()
                self._invoke(inst, "restore_from_snapshot", inst.processor.restore_from_snapshot, inbox)
                progressed = inbox.size() < before or inst.mark() != mark
                if not progressed and self.settings.assert_progress:
                    raise Violation(
                        FailureKind.NO_PROGRESS,
                        f"{inst.name}: restore_from_snapshot() call without progress: it took no entry "
                        f"({before} left) and emitted nothing",
                    )
                self._collect(inst)
                calls, stalled_since = self._guard(
                    inst, "restore_from_snapshot", calls, progressed, stalled_since, started
                )
        inbox.clear()
        self._until_true(inst, "finish_snapshot_restore", inst.processor.finish_snapshot_restore)

    # ---- calls and checks -----------------------------------------------------------------

    def _record(self, inst: Instance, method: str, args: str | CallArgs) -> CallRecord:
        record = CallRecord(inst.name, method, args)
        self.log.add(record)
        return record

    def _invoke(self, inst: Instance, method: str, fn: Callable[..., Any], *args: Any, note: str = "") -> Any:
        shown = tuple(a for a in args if a is not inst.outbox and a is not inst.context)
        record = self._record(inst, method, CallArgs(shown, note))
        record.inbox_before = inst.inbox.size() if method in ("process", "restore_from_snapshot") else None
        start = time.perf_counter()
        self._cpu_wait.before_call(start)
        try:
            result = fn(*args)
        except ProcessorContractError as error:
            record.result = f"raised {error}"
            raise Violation(self._contract_kind(inst, method), f"{inst.name}: {method}(): {error}") from error
        except Exception as error:
            record.result = f"raised {type(error).__name__}: {error}"
            raise Violation(
                FailureKind.RAISED, f"{inst.name}: {method}() raised {type(error).__name__}: {error}"
            ) from error
        finally:
            record.seconds = time.perf_counter() - start
        if inst.rejected_by is None and inst.outbox.has_unfinished_item():
            inst.rejected_by = method
        elif not inst.outbox.has_unfinished_item():
            inst.rejected_by = None
        record.result = CallResult(result)
        if record.inbox_before is not None:
            record.inbox_after = inst.inbox.size()
        if inst.cooperative and method not in _MAY_BLOCK:
            self._check_duration(inst, method, record.seconds)
        return result

    def _contract_kind(self, inst: Instance, method: str) -> FailureKind:
        if method == "snapshot_commit_finish":
            return FailureKind.EMITS_FROM_COMMIT_FINISH
        if inst.outbox.has_unfinished_item():
            return FailureKind.IGNORES_REJECTED_OFFER
        return FailureKind.CONTRACT

    def _check_duration(self, inst: Instance, method: str, seconds: float) -> None:
        limit = self.settings.cooperative_limit
        if (
            limit > 0
            and seconds > limit
            and self._cpu_wait.blocked_seconds(seconds, time.perf_counter()) > limit
        ):
            raise Violation(
                FailureKind.BLOCKS_COOPERATIVE_CALL,
                f"{inst.name}: {method}() took {seconds * 1000:.1f} ms, over the limit of {limit * 1000:.0f} ms "
                "for a cooperative processor; a cooperative call must not block (no I/O, locks or sleep) and "
                "should take about a millisecond; a processor that must block declares is_cooperative() -> False",
            )
        if seconds > COOPERATIVE_WARN_SECONDS:
            self.log.warn(
                f"{inst.name}: {method}() took {seconds * 1000:.1f} ms; a cooperative call should take ~1 ms"
            )

    def _until_true(
        self,
        inst: Instance,
        method: str,
        fn: Callable[..., Any],
        *args: Any,
        progress_check: bool = True,
        again_when_full: bool = False,
    ) -> None:
        """Call `fn` until it returns True, as the tasklet does, checking each call. With
        `again_when_full`, a call that returned False with the outbox full is followed by one
        more with the outbox still full, as `process` is (Jet's TestSupport does this for
        `tryProcessWatermark`): a processor that drops an item its offer was refused is caught."""
        calls = 0
        stalled_since: float | None = None
        started = time.monotonic()
        while True:
            mark = inst.mark()
            done = self._as_bool(inst, method, self._invoke(inst, method, fn, *args))
            if not done and again_when_full and inst.outbox_full():
                inst.block(True)
                try:
                    inst.outbox.flush()  # ends the call, as the tasklet's flush does, moving nothing
                    done = self._as_bool(
                        inst,
                        method,
                        self._invoke(inst, method, fn, *args, note="again, with the outbox still full"),
                    )
                finally:
                    inst.block(False)
            progressed = done or inst.mark() != mark
            self._check_result(inst, method, done, progressed or not progress_check)
            self._collect(inst)
            if done:
                return
            calls, stalled_since = self._guard(inst, method, calls, progressed, stalled_since, started)

    def _as_bool(self, inst: Instance, method: str, result: Any) -> bool:
        """`result` of a method that must return a bool; anything else breaks the contract (the
        engine raises `ProcessorContractError` for it: read as False it would loop forever)."""
        if result is True or result is False:
            return result
        error = not_a_bool(inst.processor, method, result)
        raise Violation(FailureKind.CONTRACT, f"{inst.name}: {error}") from error

    def _check_result(self, inst: Instance, method: str, done: bool, progressed: bool) -> None:
        if done and inst.outbox.has_unfinished_item():
            raise Violation(
                FailureKind.IGNORES_REJECTED_OFFER,
                f"{inst.name}: {method}() returned True while the outbox still holds an item it rejected "
                f"(offered by {inst.rejected_by}()); after offer() returns False the processor must return "
                "(False, or with the item left in the inbox) and offer the same item again on the next call",
            )
        if not progressed and self.settings.assert_progress:
            raise Violation(
                FailureKind.NO_PROGRESS,
                f"{inst.name}: {method}() call without progress: it returned False and emitted nothing",
            )

    def _guard(
        self,
        inst: Instance,
        method: str,
        calls: int,
        progressed: bool,
        stalled_since: float | None,
        started: float,
        restores_since: int | None = None,
    ) -> tuple[int, float | None]:
        """Count a call of a method loop that began at `started` (each loop its own: the
        snapshots and restores taken inside `complete()`'s loop run loops of their own); fail
        when the loop looks endless (too many calls, too long, or too long without progress);
        back off when idle. `restores_since`: the restores count when the loop began, if
        restores happen inside it (the failure then says what they point to)."""
        now = time.monotonic()
        calls += 1
        limit = self.settings.timeout_seconds
        bounded_elsewhere = method == "complete" and self.settings.run_until is not None
        timed_out = limit is not None and not bounded_elsewhere and now - started > limit
        if timed_out or calls >= self.settings.max_calls:
            restored = 0 if restores_since is None else self.restores - restores_since
            if restored and progressed:
                advice = (
                    f"it was restored {restored} times meanwhile and went on emitting: a processor "
                    f"emitting from {method}() must save how far its output got and go on from there "
                    "after a restore, not start over"
                )
            else:
                advice = "for a streaming processor use run_until_output_matches() or disable_complete_call()"
            if timed_out:
                made = ", the last ones made progress" if progressed else ""
                message = (
                    f"did not return True within {limit:g} s ({calls} calls{made}); {advice}, "
                    "or raise the limit with timeout()"
                )
            else:
                message = f"was called {calls} times in a row without finishing ({advice})"
            raise Violation(FailureKind.NEVER_FINISHES, f"{inst.name}: {method}() {message}")
        if progressed:
            self._idle.reset()
            return calls, None
        if stalled_since is None:
            stalled_since = now
        elif now - stalled_since > self.settings.stall_seconds:
            raise Violation(
                FailureKind.NEVER_FINISHES,
                f"{inst.name}: {method}() made no progress for {self.settings.stall_seconds:g} s",
            )
        self._idle.idle()
        return calls, stalled_since

    # ---- output ---------------------------------------------------------------------------

    def _collect(self, inst: Instance) -> None:
        """Flush the outbox and move what the collectors got into `outputs`, until the buffers
        are empty or nothing moves: downstream queues drain while a processor works, so an item
        that waited in a buffer behind a full queue goes on before the next call."""
        emitted: list[Any] = []
        moved = True
        while moved:
            inst.outbox.flush()
            moved = False
            for ordinal, collector in enumerate(inst.collectors):
                items = collector.take()
                if not items:
                    continue
                moved = True
                emitted.extend(items)
                self._add_output(inst, ordinal, items)
            moved = moved and inst.outbox.buffered() > 0
        record = self.log.latest()
        if record is not None:
            record.emitted.extend(emitted)
            self.log.finished(record)

    def _add_output(self, inst: Instance, ordinal: int, items: list[Any]) -> None:
        if self._merge is None:
            self.outputs[ordinal].extend(items)
            return
        for item in items:
            if isinstance(item, Watermark):
                self._append_watermarks(ordinal, self._merge[ordinal].observe(inst.position, item))
            else:
                self.outputs[ordinal].append(item)

    def _append_watermarks(self, ordinal: int, watermarks: list[Watermark]) -> None:
        """Append coalesced watermarks, skipping those a restored execution repeats."""
        for watermark in watermarks:
            floor = self._floor[ordinal]
            if not watermark.is_idle():
                if floor is not None and watermark.timestamp <= floor:
                    continue
                self._floor[ordinal] = watermark.timestamp
            self.outputs[ordinal].append(watermark)


def _with_snapshot_offers(inst: Instance, method: str) -> Callable[[], bool]:
    fn = getattr(inst.processor, method)

    def call() -> bool:
        inst.outbox.allow_snapshot_offers(method)
        try:
            return fn()  # type: ignore[no-any-return]
        finally:
            inst.outbox.allow_snapshot_offers(None)

    return call


def _close_quietly(processor: Any, log: CallLog) -> None:
    try:
        processor.close()
    except Exception as error:
        log.warn(f"{type(processor).__name__}: close() raised {type(error).__name__}: {error} (ignored)")

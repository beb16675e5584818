"""An execution: runs a set of tasklets to the end, or until it fails or is cancelled.

Cooperative tasklets share the calling thread: each loop calls every one of them, and the loop
backs off (sleeping a little longer each time, up to 1 ms) only when none made progress.
Non-cooperative tasklets each get a thread with the same loop (back-off up to 5 ms). The first
exception fails the execution with the processor named; every processor is then closed exactly
once and nothing is left running.

`run()` runs to the end in one call. `steps()` is the same run as a generator that yields after
every round of the cooperative loop, so that its caller (a Spark task) can hand out what the
round produced before the next one starts; closing the generator early cancels the execution.
`on_idle` is asked, after a round in which no tasklet made progress, whether it can make some
(a shuffle reader that moves a record nobody takes aside); if it can, the loop does not back off.

The quiescence check (seed 004): when `quiescence_timeout` seconds pass in which no tasklet made
progress and no non-cooperative call was running, while items are still pending somewhere (or a
processor that has all its input never completes), nothing can ever move again, so the execution
fails with `QuiescenceError` and a dump of every processor's watermarks and pending counts
instead of hanging. A quiet streaming source with nothing pending is not stuck: it waits for data.
But a bounded source whose `complete()` returns False without emitting looks the same, and the
job would wait for it forever: after the timeout with nothing pending, each source that has not
completed (and does not declare `waits_for_data`) is named once in a warning. A non-cooperative
call running that long is named once too (it may be blocked for good), and so is a cooperative
call that has not returned for the timeout (an endless loop holds the loop's thread, so a watch
thread looks at it and names the line it is at).
"""

from __future__ import annotations

import logging
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator, Sequence

from jetspark.core.errors import JobFailedError, QuiescenceError
from jetspark.engine.failure_site import failed_in
from jetspark.engine.tasklet import ProcessorTasklet

_log = logging.getLogger("jetspark.engine")
#: How long a failed or cancelled execution waits for a processor's `close()` still running on
#: its own thread before it ends anyway.
CLOSE_WAIT_SECONDS = 30.0
_TASKLET_CALL = ProcessorTasklet.call.__code__
_STDLIB = sysconfig.get_paths()["stdlib"]


def _holding_up(stuck: Sequence[ProcessorTasklet]) -> ProcessorTasklet | None:
    """The processor a stuck job waits for: one with input it does not take (or all of its input
    and no completion) while nothing it offered waits downstream. The others are stuck behind it,
    their outboxes full."""
    for tasklet in stuck:
        waits_downstream = tasklet.outbox.buffered() > 0 or tasklet.outbox.has_unfinished_item()
        if not waits_downstream and (tasklet.pending_count() > 0 or tasklet.awaits_completion()):
            return tasklet
    return None


class IdleStrategy:
    """Spin a few rounds, then sleep from `min_sleep` doubling up to `max_sleep` seconds (Jet's
    back-off). After `deep_after` seconds with no progress the sleeps grow to `deep_sleep`: a quiet
    stream (a source polling an empty directory every 100 ms) then wakes 100 times a second, not
    1,000, for at most `deep_sleep` more latency on the first item after the quiet."""

    __slots__ = ("_idle", "_sleep", "_min", "_max", "_deep_after", "_deep_sleep", "_quiet_since")

    def __init__(
        self,
        min_sleep: float = 25e-6,
        max_sleep: float = 1e-3,
        deep_after: float = 0.25,
        deep_sleep: float = 10e-3,
    ) -> None:
        self._idle = 0
        self._min = min_sleep
        self._max = max_sleep
        self._sleep = min_sleep
        self._deep_after = deep_after
        self._deep_sleep = max(deep_sleep, max_sleep)
        self._quiet_since = 0.0

    def idle(self, wake_at: float | None = None) -> None:
        """One round without progress; a deep sleep ends by `wake_at` (`time.monotonic()`), when
        the loop's owner is due to act then (a span's end)."""
        self._idle += 1
        if self._idle <= 10:
            return
        if self._idle <= 20:
            time.sleep(0)
            return
        if self._sleep > self._max and wake_at is not None:
            time.sleep(min(self._sleep, max(0.0, wake_at - time.monotonic())))
            return
        time.sleep(self._sleep)
        if self._sleep < self._max:
            self._sleep = min(self._sleep * 2, self._max)
            self._quiet_since = time.monotonic()
        elif self._sleep < self._deep_sleep and time.monotonic() - self._quiet_since >= self._deep_after:
            self._sleep = self._deep_sleep

    def reset(self) -> None:
        self._idle = 0
        self._sleep = self._min


class Execution:
    def __init__(
        self,
        tasklets: Sequence[ProcessorTasklet],
        on_tick: Callable[[], None] | None = None,
        on_idle: Callable[[], bool] | None = None,
        quiescence_timeout: float | None = None,
    ) -> None:
        self.tasklets = list(tasklets)
        self._quiescence_timeout = quiescence_timeout
        self._last_progress = time.monotonic()
        self._next_quiescence_check = 0.0
        #: Non-cooperative tasklets inside a call now, and when the call began: the job is in
        #: progress while any is.
        self._in_call: dict[int, float] = {}
        #: Tasklets already named in a warning of the quiescence check (once each).
        self._warned: set[int] = set()
        #: Rounds of the cooperative loop so far, and the thread running them (for the watch).
        self._round = 0
        self._loop_thread: int | None = None
        #: The cooperative tasklet the loop called last (inside its call while a round stands still).
        self._calling: ProcessorTasklet | None = None
        self._on_tick = on_tick or (lambda: None)
        self._on_idle = on_idle or (lambda: False)
        #: When `on_tick` is next due to act (`time.monotonic()`), if it knows: the cooperative
        #: loop's longest idle sleeps end by then.
        self.wake_at: float | None = None
        self._stop = threading.Event()
        self._error_lock = threading.Lock()
        self.error: BaseException | None = None

    def cancel(self) -> None:
        self._stop.set()

    @property
    def cancelled(self) -> bool:
        return self._stop.is_set() and self.error is None

    def _fail(self, tasklet: ProcessorTasklet | None, error: BaseException) -> None:
        with self._error_lock:
            if self.error is None:
                if tasklet is not None and not isinstance(error, JobFailedError):
                    wrapped = JobFailedError(
                        f"{tasklet.name} failed{failed_in(error, tasklet.processor)}: "
                        f"{type(error).__name__}: {error}",
                        vertex=tasklet.context.vertex_name,
                        processor_index=tasklet.context.global_processor_index,
                    )
                    wrapped.__cause__ = error
                    self.error = wrapped
                else:
                    self.error = error
        self._stop.set()

    def run(self) -> None:
        """Run to the end; afterwards `error` holds the failure, if any. Closes every processor."""
        for _ in self.steps():
            pass

    def steps(self) -> Iterator[None]:
        """`run()` as a generator: yields after every round (see the module docstring)."""
        threads: list[threading.Thread] = []
        watch: threading.Thread | None = None  # not among `threads`: the loop does not wait for it
        try:
            # As Jet, which awaits every tasklet's init before failing the job: an init that
            # fails does not leave the processors after it uninitialized; the first failure wins.
            for tasklet in self.tasklets:
                try:
                    tasklet.init()
                except BaseException as error:
                    self._fail(tasklet, error)
                    if not isinstance(error, Exception):  # an interrupt: stop at once
                        return
            if self.error is not None:
                return
            cooperative = [t for t in self.tasklets if t.is_cooperative]
            for tasklet in self.tasklets:
                if not tasklet.is_cooperative:
                    thread = threading.Thread(
                        target=self._run_thread, args=(tasklet,), name=tasklet.name, daemon=True
                    )
                    threads.append(thread)
                    thread.start()
            if cooperative and self._quiescence_timeout is not None:
                watch = threading.Thread(
                    target=self._watch_cooperative_calls, name="jetspark watch", daemon=True
                )
                watch.start()
            yield from self._rounds(cooperative, threads)
        finally:
            self._stop.set()
            for thread in threads:
                thread.join()
            if watch is not None:
                watch.join()
            for tasklet in self.tasklets:
                tasklet.close()
            self._await_closes_under_way()

    def _await_closes_under_way(self) -> None:
        """As the contract says, every processor's `close()` has returned before its supplier's
        `close()` runs: a failed or cancelled execution stops while a cooperative processor's
        `close()` may still run on its own thread (`CLOSING`), so wait for it; one that does not
        return in `CLOSE_WAIT_SECONDS` is named in a warning and left behind (its thread is a
        daemon) rather than hanging the job's end. One deadline for all of them: several closes
        that hang must not add up their waits."""
        deadline = time.monotonic() + CLOSE_WAIT_SECONDS
        for tasklet in self.tasklets:
            tasklet.wait_for_close(max(0.0, deadline - time.monotonic()))
            if tasklet.closing_under_way():
                _log.warning(
                    "%s: close() has not returned after %.0f s; the job ends without waiting for it",
                    tasklet.name,
                    CLOSE_WAIT_SECONDS,
                )

    def _on_tick_safe(self) -> None:
        try:
            self._on_tick()
        except BaseException as error:
            self._fail(None, error)

    def _run_thread(self, tasklet: ProcessorTasklet) -> None:
        """The loop of one non-cooperative tasklet, on its own thread."""
        idle = IdleStrategy(max_sleep=5e-3)
        stop = self._stop
        in_call = self._in_call
        while not tasklet.is_done and not stop.is_set():
            in_call[id(tasklet)] = time.monotonic()
            try:
                progress = tasklet.call()
            except BaseException as error:
                self._fail(tasklet, error)
                return
            finally:
                in_call.pop(id(tasklet), None)
            if progress:
                self._last_progress = time.monotonic()
                idle.reset()
            else:
                idle.idle()

    def _rounds(self, tasklets: list[ProcessorTasklet], threads: list[threading.Thread]) -> Iterator[None]:
        """The cooperative loop of the calling thread; then, while threads run, ticks and idle checks."""
        idle = IdleStrategy(max_sleep=1e-3)
        active = list(tasklets)
        stop = self._stop
        on_tick = self._on_tick_safe
        self._loop_thread = threading.get_ident()
        while (active or any(t.is_alive() for t in threads)) and not stop.is_set():
            self._round += 1
            progress = False
            for tasklet in active:
                self._calling = tasklet
                try:
                    if tasklet.call():
                        progress = True
                except BaseException as error:
                    self._fail(tasklet, error)
                    return
            if any(t.is_done for t in active):
                active = [t for t in active if not t.is_done]
            on_tick()
            if not progress and self._idle_progress():
                progress = True
            if progress:
                self._last_progress = time.monotonic()
            elif self._quiescence_timeout is not None and self._is_quiescent():
                self._fail(None, self._quiescence_error())
                return
            yield
            if progress:
                idle.reset()
            elif active:
                idle.idle(self.wake_at)
            else:  # only threads are left: wait for them a little at a time
                time.sleep(0.002)

    def _is_quiescent(self) -> bool:
        """Nothing moved for the timeout, nothing is running, yet something is pending."""
        assert self._quiescence_timeout is not None
        now = time.monotonic()
        if now - self._last_progress < self._quiescence_timeout or now < self._next_quiescence_check:
            return False
        self._next_quiescence_check = now + min(1.0, self._quiescence_timeout)
        if self._in_call:
            self._warn_long_calls(now)
            return False
        if any(
            not tasklet.is_done and (tasklet.pending_count() > 0 or tasklet.awaits_completion())
            for tasklet in self.tasklets
        ):
            return True
        self._warn_quiet_sources()
        return False

    def _warn_once(self, tasklet: ProcessorTasklet, message: str) -> None:
        if id(tasklet) not in self._warned:
            self._warned.add(id(tasklet))
            tasklet.stall_warnings += 1
            _log.warning("%s: %s", tasklet.name, message)

    def _warn_quiet_sources(self) -> None:
        """Nothing moved for the timeout and nothing is pending: the job waits for its sources."""
        for tasklet in self.tasklets:
            if tasklet.streams or tasklet.is_done or type(tasklet.processor).waits_for_data:
                continue
            self._warn_once(
                tasklet,
                f"a source that has neither emitted nor completed for {self._quiescence_timeout:g} s, "
                f"and nothing else is pending: the job waits for it. If it is bounded, its "
                f"{type(tasklet.processor).__qualname__}.complete() must return True once it emitted "
                "everything; a source that waits for data declares waits_for_data = True",
            )

    def _watch_cooperative_calls(self) -> None:
        """On its own thread: name a cooperative call that has not returned for the timeout."""
        timeout = self._quiescence_timeout
        assert timeout is not None
        last_round, since = self._round, time.monotonic()
        while not self._stop.wait(min(1.0, timeout)):
            now = time.monotonic()
            if self._round != last_round:
                last_round, since = self._round, now
            elif now - since >= timeout:
                stuck = self._cooperative_call_now()
                if stuck is not None:
                    tasklet, where = stuck
                    self._warn_once(
                        tasklet,
                        f"a call of this cooperative processor has not returned for {now - since:.1f} s "
                        f"(now at {where}); a cooperative call must return within about a millisecond, "
                        "and nothing else in this execution runs until it does",
                    )

    def _cooperative_call_now(self) -> tuple[ProcessorTasklet, str] | None:
        """The tasklet whose call the loop's thread is inside, and the line it is at, if any."""
        thread = self._loop_thread
        frame = sys._current_frames().get(thread) if thread is not None else None
        innermost = frame  # the innermost frame outside the standard library: the processor's line
        while innermost is not None and innermost.f_code.co_filename.startswith(_STDLIB):
            innermost = innermost.f_back
        while frame is not None:  # only code and line numbers are read: a running frame's locals are not
            if frame.f_code is _TASKLET_CALL:
                tasklet = self._calling
                if tasklet is None or innermost is None:
                    return None
                code = innermost.f_code
                return tasklet, f"{code.co_filename}:{innermost.f_lineno} in {code.co_name}"
            frame = frame.f_back
        return None

    def _warn_long_calls(self, now: float) -> None:
        assert self._quiescence_timeout is not None
        for tasklet in self.tasklets:
            began = self._in_call.get(id(tasklet))
            if began is not None and now - began >= self._quiescence_timeout:
                self._warn_once(
                    tasklet,
                    f"one call of this non-cooperative processor has run for {now - began:.0f} s and "
                    "nothing else moved meanwhile; if it is blocked for good, the job hangs",
                )

    def _quiescence_error(self) -> QuiescenceError:
        stuck = [t for t in self.tasklets if not t.is_done]
        lines = "\n  ".join(tasklet.status_line() for tasklet in stuck)
        culprit = _holding_up(stuck)
        named = f" {culprit.name} holds them up;" if culprit is not None else ""
        return QuiescenceError(
            f"nothing in progress for {self._quiescence_timeout:g} s and nothing can make progress, "
            f"yet items are pending or a processor with all its input has not completed;{named} the "
            f"job would hang. Processors not done:\n  {lines}",
            vertex=(culprit or stuck[0]).context.vertex_name if stuck else None,
        )

    def _idle_progress(self) -> bool:
        try:
            return bool(self._on_idle())
        except BaseException as error:
            self._fail(None, error)
            return False

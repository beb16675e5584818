"""The Processor contract: the unit of work of a vertex.

How the methods are called
--------------------------
A runner makes `local_parallelism` processors of a vertex on each member. Each processor is
single-threaded: its methods are never called concurrently. `init` is called exactly once, before
any other method except `is_cooperative`; `close` is called last, exactly once, whether the job
succeeded or not, even when `init` failed or never ran. Every other method ("processing method")
is called in a loop, again and again while it reports that it is not done:

- `process(ordinal, inbox)` while the inbox still holds items (it gets the same items back, no new
  ones are added until it empties the inbox);
- `try_process()`, `try_process_watermark(wm)`, `complete_edge(ordinal)`, `complete()`,
  `save_to_snapshot()`, `snapshot_commit_prepare()`, `snapshot_commit_finish(success)` and
  `finish_snapshot_restore()` while they return False; nothing else is called on this processor
  in between (except `snapshot_commit_finish`, which may be called while the inbox is not empty,
  and `save_to_snapshot`, which may be called between `complete()` calls).

A call that neither takes from the inbox nor adds to the outbox made no progress; the engine backs
off a little before calling again.

Order: restore (`restore_from_snapshot` until the snapshot stream is drained, then
`finish_snapshot_restore`), then for each batch: `try_process_watermark` for a pending watermark,
`try_process`, `process`; `complete_edge` when an inbound edge is exhausted; `complete` when all
are; a snapshot (`save_to_snapshot`, then `snapshot_commit_prepare`, later
`snapshot_commit_finish`) only with an empty inbox. A source (no inbound edges) only gets
`complete()`, until it returns True (a streaming source never does).

Transactional processors
------------------------
A processor that writes to a transactional system must, after a restore and before any processing
method, roll back every transaction it created and did not commit. It cannot keep their ids in the
snapshot (a job may fail before the first snapshot): it either lists the pending transactions of
the external system filtered by job id and vertex name, or probes deterministic ids
(job id + vertex + global processor index + sequence). `snapshot_commit_prepare` prepares the
current transaction and stores its id in the snapshot; `snapshot_commit_finish(True)` commits it;
an id restored from a snapshot is committed in `restore_from_snapshot` (it may already be committed
or gone: handle that gracefully).

Cooperative processors
----------------------
By default a processor is cooperative: it shares one thread with the other processors of its
member, so each call must be short (about a millisecond), must not block (no I/O, locks or sleep),
and must return as soon as the outbox rejects an item. A processor that blocks declares
`is_cooperative() -> False` and gets a thread of its own; it must still return at least once per
second so that snapshots and cancellation are not held up.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import ClassVar

from jetspark.core.context import ProcessorContext
from jetspark.core.inbox import Inbox
from jetspark.core.outbox import Outbox
from jetspark.core.watermark import Watermark


class Processor(abc.ABC):
    """A single-threaded unit of work turning zero or more input streams into output streams.

    Inbound edges are told apart by ordinal; `process` gets the ordinal of the edge its inbox came
    from. Subclasses implement at least `try_process_watermark`; `AbstractProcessor` implements the
    rest of the plumbing and is the usual base class.
    """

    #: Alias so that code written against Jet's nested `Processor.Context` reads the same.
    Context: ClassVar[type[ProcessorContext]] = ProcessorContext

    #: A source that may rightly be quiet for long (a streaming source waiting for data) says so,
    #: and the quiescence check does not warn that the job waits for it (docs/quiescence.md).
    waits_for_data: ClassVar[bool] = False

    def is_cooperative(self) -> bool:
        """Whether this processor may share a thread with others (see the module docstring).

        Called before `init`. Instances of one vertex may differ; one instance must always
        return the same value. Default: True.
        """
        return True

    def close_is_cooperative(self) -> bool:
        """Whether `close()` is quick and may run on the worker's thread, as the other methods of
        a cooperative processor do. Default: False, so a cooperative processor's `close()` runs on
        a thread of its own at its normal end (return True when `close()` must run on the
        processor's thread, for example to close a `sqlite3` connection opened in `init`).
        """
        return False

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:  # noqa: B027
        """Receive the outbox all output goes to, and the context. Called exactly once, first.

        May block, even in a cooperative processor. Default: does nothing.
        """

    def process(self, ordinal: int, inbox: Inbox) -> None:
        """Process some or all items of `inbox`, removing each item once done with it.

        The inbox holds at least one item. If items are left when this returns, `process` is
        called again with the same items before any other method (except
        `snapshot_commit_finish`). Default: raises, which suits sources.
        """
        raise NotImplementedError(f"{type(self).__name__} has inbound edges but does not override process()")

    @abc.abstractmethod
    def try_process_watermark(self, watermark: Watermark) -> bool:
        """Process a watermark that arrived on all inbound edges; True when done.

        Its timestamp is greater than the previous one's (after an at-least-once restart it may
        repeat an older one). Before returning True the processor should emit it, unless it is a
        sink. False: called again with the same watermark before any other processing method.
        """

    def try_process(self) -> bool:
        """Called whenever the inbox is empty, to emit without input or to do maintenance.

        Also before the first item arrives, so timed work can start without input (from the
        engine's first look at the inbound edges on: items already queued then go to `process`
        first, as in Jet); never while restoring: after a restore it is first called after
        `finish_snapshot_restore`. False: called again
        before any other processing method. Default: True.
        """
        return True

    def complete_edge(self, ordinal: int) -> bool:
        """Called once the inbound edge `ordinal` is exhausted; False to be called again.

        If an offer was rejected, return False and retry it on the next call. Default: True.
        """
        return True

    def complete(self) -> bool:
        """Called after all inbound edges are exhausted (at once, for a source); False to be called again.

        A streaming source returns False forever. `save_to_snapshot` and `snapshot_commit_finish`
        may be called between calls. After it returned True, only `snapshot_commit_finish` may
        still be called, and nothing may be offered any more (the end of the stream has gone
        downstream): a later offer, also from `close` or another thread, raises
        `ProcessorContractError`. Do not return True while an offer is refused: finish it first
        (the engine raises `ProcessorContractError` naming the item). Default: True.
        """
        return True

    def save_to_snapshot(self) -> bool:
        """Add the processor's state to the snapshot with `Outbox.offer_to_snapshot`; False to retry.

        Called only with an empty inbox, and between `complete()` calls; never after `complete()`
        returned True. Default: saves nothing.

        Incremental snapshots (optional): a processor may define `changed_snapshot_keys()`,
        returning the snapshot keys whose entries it changed or removed since its last
        `save_to_snapshot` (or its restore); a superset is fine. Where a snapshot may be
        incremental the engine calls it right before this method, writes only the entries of
        those keys, and a deletion for each of them not offered. `Outbox.keys_to_save()` then
        returns those keys, so the save may visit only them. `BroadcastKey` entries are not
        per key: every save, incremental too, must offer all of them (the engine keeps them all).
        Only for state keyed by the key the input is partitioned by: a delta keeps one entry per
        key, so each key must be saved by one processor, the owner of its partition.
        """
        return True

    def snapshot_commit_prepare(self) -> bool:
        """First phase of two-phase commit: prepare the current transaction, store its id.

        Called right after `save_to_snapshot`; may use `offer_to_snapshot`. Skipped for
        export-only snapshots (and then so is `snapshot_commit_finish`). Default: True.
        """
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        """Second phase: commit the prepared transactions if `success`, else leave them be.

        Called after the snapshot is stored on every member, possibly while the inbox is not
        empty, between `complete()` calls and even after `complete()` returned True. Must not emit
        anything: the engine raises `ProcessorContractError` if it does. Must eventually succeed:
        return False to be called again, or raise `RestartableError` to restart the job from the
        snapshot (the ids in it are then committed on restore). Default: True.
        """
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        """Restore state from a batch of snapshot entries, each a `(key, value)` tuple.

        Same inbox rules as `process`. May emit. Default: raises; any processor that saves state
        must override it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} received snapshot data but does not override restore_from_snapshot()"
        )

    def finish_snapshot_restore(self) -> bool:
        """Called after all snapshot entries were restored; False to be called again. Default: True."""
        return True

    def custom_metrics(self) -> Mapping[str, int]:
        """Counters of this processor for the job's metrics (Jet's `@Probe` fields), for example
        the late items a window dropped; the runner sums each name over the vertex's processors.

        Called by the runner at any time after `init`, possibly from another thread while the
        processor runs (the local runner reads metrics when `job.metrics()` is called): return
        plain counters the processor keeps, cheaply, and change nothing. Default: none.
        """
        return {}

    def close(self) -> None:  # noqa: B027
        """Release resources. Called last, exactly once, even if `init` failed or never ran.

        May block, even in a cooperative processor: at the processor's normal end the engine then
        calls it on a thread of its own, so the worker goes on with the other processors, unless
        `close_is_cooperative` returns True. Must not emit: an offer here raises
        `ProcessorContractError`, which the engine logs as an error naming the item (the item is
        dropped: emit in `complete()` instead). No exception from `close()` fails the job; each is
        logged. Default: nothing.
        """

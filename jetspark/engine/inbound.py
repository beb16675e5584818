"""One inbound edge of one processor: the queues from all its producers, drained into the inbox.

Invariants: a drain takes data chunks from queues up to their next special item, so items and
special items are never mixed in one inbox batch; a watermark is coalesced over the edge's
producers and, when the coalesced value rises, draining stops so the items before it are processed
first; DONE ends one producer's queue; under exactly-once a queue that delivered the snapshot
barrier is not drained again until the barrier arrived on every queue that is not done; once it
has (under any guarantee), the drain stops, so the snapshot comes before anything behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jetspark.core.errors import ProcessorContractError
from jetspark.core.watermark import Watermark
from jetspark.engine.coalescer import WatermarkCoalescer
from jetspark.engine.queue import QueueReceiver
from jetspark.engine.special import DONE, SnapshotBarrier


class InboundStream:
    __slots__ = (
        "ordinal",
        "priority",
        "queues",
        "coalescer",
        "pending_watermarks",
        "aligned",
        "_done",
        "_done_count",
        "_barrier_at",
        "barrier",
        "owner",
    )

    def __init__(
        self,
        ordinal: int,
        priority: int,
        queues: Sequence[QueueReceiver],
        owner: str,
        aligned: bool = True,
    ) -> None:
        self.ordinal = ordinal
        self.priority = priority
        self.queues = list(queues)
        self.owner = owner
        self.coalescer = WatermarkCoalescer(len(self.queues), f"{owner} edge ordinal {ordinal}")
        self.pending_watermarks: list[Watermark] = []
        self.aligned = aligned
        self._done = [False] * len(self.queues)
        self._done_count = 0
        self._barrier_at = [False] * len(self.queues)
        self.barrier: SnapshotBarrier | None = None

    @property
    def is_done(self) -> bool:
        return self._done_count == len(self.queues)

    @property
    def barrier_complete(self) -> bool:
        """Every queue delivered the current barrier or ended."""
        if self.barrier is None:
            return False
        return all(b or d for b, d in zip(self._barrier_at, self._done))

    def reset_barrier(self) -> None:
        self.barrier = None
        self._barrier_at = [False] * len(self.queues)

    def drain_to(self, chunks: list[list[Any]]) -> bool:
        """Append data chunks to `chunks`; handle special items. Returns True on any progress."""
        progress = False
        queues = self.queues
        count = len(queues)
        # From queue 0 every time, as Jet: a drain stops only at a forwarded watermark, which
        # needs every queue's watermark, so no queue starves; and when a barrier and a watermark
        # meet, the order is Jet's (`ConcurrentInboundEdgeStreamTest`).
        for index in range(count):
            if self._done[index] or (self._barrier_at[index] and self._blocks_at_barrier()):
                continue
            queue = queues[index]
            stop = False
            while True:
                entry = queue.take()
                if entry is None:
                    break
                progress = True
                if type(entry) is list:
                    chunks.append(entry)
                    if self.coalescer.is_idle(index):
                        self.coalescer.observe_item(index)
                    continue
                stop = self._special(index, entry)
                break
            if stop:
                break
        return progress

    def _blocks_at_barrier(self) -> bool:
        barrier = self.barrier
        return barrier is not None and (self.aligned or barrier.is_terminal)

    def _special(self, index: int, entry: Any) -> bool:
        """Handle one special item; True to stop draining other queues for now."""
        if entry is DONE:
            self._done[index] = True
            self._done_count += 1
            out = self.coalescer.queue_done(index)
            self.pending_watermarks.extend(out)
            return bool(out) or self.barrier_complete
        if entry.__class__ is Watermark:
            out = self.coalescer.observe(index, entry)
            self.pending_watermarks.extend(out)
            return bool(out)
        if isinstance(entry, SnapshotBarrier):
            if self.barrier is not None and self.barrier.snapshot_id != entry.snapshot_id:
                raise ProcessorContractError(
                    f"{self.owner}: barrier of snapshot {entry.snapshot_id} arrived on edge ordinal "
                    f"{self.ordinal} while snapshot {self.barrier.snapshot_id} is being aligned"
                )
            self.barrier = entry
            self._barrier_at[index] = True
            # Complete: stop here (as Jet), so that nothing queued behind a barrier, not even on
            # an unaligned edge, is drained before the snapshot.
            return self.barrier_complete
        raise AssertionError(f"unexpected special item {entry!r} in a queue")

"""A replayable source's side of startpoints: resolve its fan-out at start, remove it at commit.

A runner that keeps snapshots in a checkpoint store puts a `StartpointRuntime` into each
processor's `context.attributes[STARTPOINTS_ATTRIBUTE]`. A source that honours startpoints makes
a `SourceStartpoints` from its context and calls, on both runners alike:

- `start(offsets, resolve)` once, after its snapshot entries were restored and before it reads or
  saves anything: it returns the offsets that override the restored ones. A startpoint is resolved
  once (by `resolve(split, startpoint)`) and the result recorded in the store, so that a restart
  before the next commit starts from the same offset again, even for `Upcoming` or `Timestamp`.
- `saved(offsets)` from `save_to_snapshot`, and `committed()` from `snapshot_commit_finish(True)`:
  as seed 001 says, a processor's fan-out goes once a snapshot commits, for each split that
  snapshot holds an offset of. The source saves the resolved offset for a split that received
  nothing since (it overrides the restored one), so the committed snapshot starts it where the
  startpoint said. (Samza once lost the startpoints of idle partitions at the first commit,
  because its checkpoint kept their old offsets; here the snapshot holds the new one.) A split the
  snapshot holds no offset of (a file not there yet) keeps its fan-out.

In epochs phase 2 never reaches a processor; there `start` of the next epoch does the removal: a
split with a restored offset from a snapshot newer than the one its startpoint was resolved on
was saved after the startpoint applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from jetspark.checkpoint.startpoints import Resolved, SourcePartition, Startpoint, StartpointStore
from jetspark.core.context import STARTPOINTS_ATTRIBUTE


@attrs.frozen
class StartpointRuntime:
    """What a runner tells sources: where the job's startpoints are, and the snapshot restored
    (-1: none)."""

    root: str
    job: str
    directory: str | None
    restore_id: int

    def open(self) -> StartpointStore:
        return StartpointStore(self.root, self.job, self.directory)


class SourceStartpoints:
    """The startpoints of one source processor, from its start to their removal."""

    def __init__(self, attributes: Mapping[str, Any], vertex: str, processor: int) -> None:
        runtime = attributes.get(STARTPOINTS_ATTRIBUTE)
        self.runtime: StartpointRuntime | None = runtime if isinstance(runtime, StartpointRuntime) else None
        self.vertex = vertex
        self.processor = processor
        self.applied: dict[str, Resolved] = {}
        self._store: StartpointStore | None = None
        self._saved: set[str] = set()

    @property
    def store(self) -> StartpointStore:
        if self._store is None:
            assert self.runtime is not None
            self._store = self.runtime.open()
        return self._store

    def start(self, offsets: Mapping[str, int], resolve: Callable[[str, Startpoint], int]) -> dict[str, int]:
        """The offsets (by split) that override `offsets`, the restored ones (absent: 0)."""
        if self.runtime is None:
            return {}
        restore_id = self.runtime.restore_id
        store = self.store
        overrides: dict[str, int] = {}
        done: set[str] = set()
        for split, startpoint in store.fan_out_for(self.vertex, self.processor).items():
            partition = SourcePartition(self.vertex, split)
            resolved = store.resolved(partition)
            if resolved is not None and resolved.startpoint == startpoint:
                if restore_id > resolved.restore_id and split in offsets:
                    done.add(split)  # a committed snapshot holds its offset: it has done its work
                    continue
            else:
                resolved = Resolved(startpoint, resolve(split, startpoint), restore_id)
                store.record_resolved(partition, resolved)
            overrides[split] = resolved.offset
            self.applied[split] = resolved
        if done:
            store.remove_fan_out(self.vertex, self.processor, done)
        return overrides

    def saved(self, offsets: Mapping[str, int]) -> None:
        """The offsets just saved to a snapshot: remember which applied splits it holds."""
        self._saved = {s for s in self.applied if s in offsets}

    def committed(self) -> None:
        """The snapshot last saved is committed: remove the fan-out of the splits it holds."""
        if self._saved:
            self.store.remove_fan_out(self.vertex, self.processor, self._saved)
            for split in self._saved:
                del self.applied[split]
            self._saved = set()

"""The records that cross Spark shuffles and reach the driver, as named tuples.

Each Spark record is a pair `(target member, record)`: `partitionBy` sends it to the task of
the stage `record.stage` that runs `target member`. Every record type has `stage` first, so one
filter (`addressed_to`) picks a stage's input out of an upstream stage's output. Named tuples
pickle as tuples plus a class reference, so they cost no more than the positional tuples they
replace, and a reader never indexes `value[5]`.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any, NamedTuple

import cloudpickle

from jetspark.runners.member import BACKPRESSURED_MS, add_metrics, merge_status

#: Target stage of records that go to the driver.
DRIVER = -1

ProcessorId = tuple[int, int]


class DataRecord(NamedTuple):
    """Entries (data chunks merged into lists, watermarks, DONE) of one producer-consumer pair."""

    stage: int
    edge: int
    producer: ProcessorId
    consumer: ProcessorId
    seq: int
    payload: bytes
    #: 0, or how the pair's last record ends it: `END_DONE` (it holds DONE) or `END_EPOCH` (it
    #: holds the epoch's terminal snapshot barrier), so a reader can tell a complete input from a
    #: cut one.
    last: int


#: `DataRecord.last` values.
END_DONE = 1
END_EPOCH = 2


class SourceRecord(NamedTuple):
    """Items of one partition of a `from_rdd` RDD, for the member that reads that partition."""

    stage: int
    vertex: str
    partition: int
    seq: int
    payload: bytes


class ResultRecord(NamedTuple):
    """Items a collecting sink received; they ride downstream with the data, then to the driver."""

    stage: int
    vertex: str
    payload: bytes


class MetricsRecord(NamedTuple):
    """Per vertex `[received, emitted]` of one member's task of stage `source_stage`."""

    stage: int
    source_stage: int
    member: int
    metrics: dict[str, list[int]]
    #: Per vertex, the watermarks and pending counts at the task's end (`member.tasklet_status`).
    status: dict[str, dict[str, int]] = {}
    #: Per vertex, the processors' own counters (`Processor.custom_metrics`), summed.
    custom: dict[str, dict[str, int]] = {}


class StagedFilesRecord(NamedTuple):
    """Files a task attempt wrote under its own staging name: `(staged, final)` path pairs.

    Only the attempt whose output Spark accepted has its record reach the driver (a shuffle reads
    one map output per partition, `collect` one result per partition), so the driver publishes
    exactly these files and deletes every other attempt's."""

    stage: int
    member: int
    attempt: int
    files: tuple[tuple[str, str], ...]


class EpochAbortRecord(NamedTuple):
    """A task of an epoch refused to run or stopped: the driver must not commit the epoch."""

    stage: int
    source_stage: int
    member: int
    reason: str
    #: (path, problem) of a damaged snapshot file the task found while restoring, else None.
    damaged: tuple[str, str] | None = None


class SnapshotFilesRecord(NamedTuple):
    """What one member's task of stage `source_stage` wrote to the epoch's snapshot: the files
    (`checkpoint.store.SnapshotFile`, as JSON) and the processors that completed instead."""

    stage: int
    source_stage: int
    member: int
    files: tuple[dict[str, Any], ...]
    #: (vertex, global processor index) of the processors that completed in this epoch.
    completed: tuple[tuple[str, int], ...]
    #: The share of its span the task sat idle (`EpochTask.idle_share`; -1.0: not measured).
    idle_share: float = -1.0


Record = tuple[int, Any]


class DriverReports:
    """What a job's (or an epoch's) records told the driver, tallied once for both runners' jobs."""

    def __init__(self, vertices: Iterable[str]) -> None:
        self.results: dict[str, list[Any]] = {}
        self.metrics: dict[str, dict[str, int]] = {
            name: {"received": 0, "emitted": 0, BACKPRESSURED_MS: 0} for name in vertices
        }
        #: Per vertex, watermarks and pending counts at the end of the tasks (`member.merge_status`).
        self.status: dict[str, dict[str, int]] = {}
        #: `(staged, final)` paths of the `files` sinks, to commit.
        self.staged: list[tuple[str, str]] = []
        #: Snapshot files (as JSON) and completed processors of an epoch.
        self.snapshot_files: list[dict[str, Any]] = []
        self.completed: set[tuple[str, int]] = set()
        #: (source stage, member) of every task that reported its snapshot (`SnapshotFilesRecord`).
        self.reported: set[tuple[int, int]] = set()
        #: Per stage, the share of its span each of its tasks sat idle (`SnapshotFilesRecord`).
        self.idle_shares: dict[int, list[float]] = {}
        #: Why the epoch must not commit, from the earliest stage that said so; None if nothing did.
        self.abort: str | None = None
        self._abort_stage = 0
        #: A damaged snapshot file a task found while restoring: (path, problem).
        self.damaged: tuple[str, str] | None = None

    @classmethod
    def of(cls, records: Iterable[Record], vertices: Iterable[str]) -> DriverReports:
        reports = cls(vertices)
        for _member, record in records:
            assert record.stage == DRIVER, f"{record!r} reached the driver"
            reports._take(record)
        return reports

    def least_idle_share(self, stages: Iterable[int]) -> float | None:
        """The least share of its span a task of `stages` sat idle; None if none reported one."""
        shares = [share for stage in stages for share in self.idle_shares.get(stage, ())]
        return min(shares) if shares else None

    def _take(self, record: Any) -> None:
        kind = type(record)
        if kind is ResultRecord:
            self.results.setdefault(record.vertex, []).extend(pickle.loads(record.payload))
        elif kind is MetricsRecord:
            for vertex, (received, emitted) in record.metrics.items():
                slot = self.metrics[vertex]
                slot["received"] += received
                slot["emitted"] += emitted
            add_metrics(self.metrics, record.custom)
            merge_status(self.status, record.status)
        elif kind is StagedFilesRecord:
            self.staged.extend(record.files)
        elif kind is SnapshotFilesRecord:
            self.snapshot_files.extend(record.files)
            self.reported.add((record.source_stage, record.member))
            self.completed.update((vertex, int(index)) for vertex, index in record.completed)
            if record.idle_share >= 0:
                self.idle_shares.setdefault(record.source_stage, []).append(record.idle_share)
        elif kind is EpochAbortRecord:
            self.damaged = self.damaged or record.damaged
            if self.abort is None or record.source_stage < self._abort_stage:
                # the earliest stage's reason is the cause; later stages only saw their input cut
                self.abort, self._abort_stage = record.reason, record.source_stage


def addressed_to(stage: int, record: Record) -> bool:
    """True for a record whose target stage is `stage` (a filter over a stage's output)."""
    return bool(record[1].stage == stage)


def dumps(value: Any) -> bytes:
    """Serialize for a shuffle or the driver: cloudpickle, so classes of `__main__` travel too."""
    return cloudpickle.dumps(value, protocol=5)  # type: ignore[no-any-return]

"""What a meta supplier, a supplier and a processor learn about the job and their place in it."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import attrs

from jetspark.core.config import JobConfig, ProcessingGuarantee

#: Key in `ProcessorContext.attributes` of the runner's result collector: an object with
#: `add(vertex_name, items)`, where collecting sinks put what the job handle returns.
RESULTS_ATTRIBUTE = "jetspark.results"
#: Key in `ProcessorContext.attributes`, True when the job runs in epochs (see `in_epochs`).
EPOCHS_ATTRIBUTE = "jetspark.epochs"
#: Key in `ProcessorContext.attributes` of a token unique to this run of the processors (a Spark
#: epoch's run: a restarted epoch gets another); absent: `execution_id` is (the local runner plans
#: each start anew). Transactional sinks put it in their transaction ids, so that what a run that
#: was aborted left behind is never taken for what a later run of the same epoch committed.
RUN_ATTRIBUTE = "jetspark.run"
#: Key in `ProcessorContext.attributes` of a callable that asks the runner for a snapshot soon,
#: present when the runner takes snapshots on its own (the local runner under a processing
#: guarantee). A transactional sink whose `complete()` holds uncommitted output calls it: the
#: output may be committed only by a snapshot that covers it (phase 2), never in `complete()`.
SNAPSHOT_REQUEST_ATTRIBUTE = "jetspark.snapshot.request"
#: Key in `ProcessorContext.attributes` of the startpoints a source applies at start (a
#: `jetspark.checkpoint.startpoint_source.StartpointRuntime`), present when the job keeps snapshots.
STARTPOINTS_ATTRIBUTE = "jetspark.startpoints"
#: Key in `ProcessorContext.attributes` of the runner's output staging (a
#: `jetspark.processors.staging.OutputStaging`), present when the runner stages sinks' output.
STAGING_ATTRIBUTE = "jetspark.output.staging"
#: Key in `ProcessorContext.attributes` of the Spark data a member's `from_rdd` sources read:
#: vertex name -> `jetspark.runners.spark.task.SourceInput` (the Spark runner only).
SPARK_INPUT_ATTRIBUTE = "jetspark.spark.input"


@attrs.frozen(kw_only=True)
class MetaSupplierContext:
    """Given to `ProcessorMetaSupplier.init` on the coordinator, once per execution.

    `partition_assignment` maps each member index to the partitions it owns.
    """

    job_id: str
    execution_id: str
    job_config: JobConfig
    vertex_name: str
    local_parallelism: int
    member_count: int
    partition_count: int
    partition_assignment: dict[int, tuple[int, ...]]
    logger: logging.Logger

    @property
    def total_parallelism(self) -> int:
        return self.member_count * self.local_parallelism

    @property
    def processing_guarantee(self) -> ProcessingGuarantee:
        return self.job_config.processing_guarantee

    @property
    def snapshotting_enabled(self) -> bool:
        return self.job_config.snapshots_enabled


@attrs.frozen(kw_only=True)
class SupplierContext(MetaSupplierContext):
    """Given to `ProcessorSupplier.init` on one member: adds the member index and its partitions."""

    member_index: int
    member_partitions: tuple[int, ...]


@attrs.frozen(kw_only=True)
class ProcessorContext(SupplierContext):
    """Given to `Processor.init`: adds the processor's indexes and the partitions it owns.

    `global_processor_index = member_index * local_parallelism + local_processor_index`.
    """

    local_processor_index: int
    global_processor_index: int
    processor_partitions: tuple[int, ...]
    #: Free-form values a runner may pass to processors (for example a checkpoint directory).
    attributes: dict[str, Any] = attrs.field(factory=dict)
    #: The members that run processors of the vertex, when not every member does (a meta
    #: supplier gave the others no supplier, such as `FirstMemberOnly`); None: every member.
    running_members: tuple[int, ...] | None = None

    @property
    def running_processor_index(self) -> int:
        """This processor's place among the vertex's processors that run, from 0 to
        `running_processor_count - 1`: what a source dealing out its input among the vertex's
        processors deals by. `global_processor_index` and `total_parallelism` count a processor
        for every member, also members that run none of the vertex (as in Jet), so a slice by
        them would leave the missing processors' share unread."""
        if self.running_members is None:
            return self.global_processor_index
        return (
            self.running_members.index(self.member_index) * self.local_parallelism
            + self.local_processor_index
        )

    @property
    def running_processor_count(self) -> int:
        """How many processors of the vertex run (see `running_processor_index`)."""
        members = self.member_count if self.running_members is None else len(self.running_members)
        return members * self.local_parallelism

    def restores_partition(self, partition: int) -> bool:
        """True when a restore hands this processor the snapshot entries of key `partition`: its
        owner's (`processor_partitions`), or, when the owner's member runs no processor of the
        vertex, the running processor that adopts them (`adopting_processor`). A processor that
        chooses its work by key partition (a file per name) chooses by this, so that what it
        saves comes back to it."""
        lp = self.local_parallelism
        owner = (partition % self.member_count) * lp + (partition // self.member_count) % lp
        if self.running_members is not None and owner // lp not in self.running_members:
            live = [m * lp + i for m in self.running_members for i in range(lp)]
            owner = adopting_processor(owner, live)
        return owner == self.global_processor_index

    @property
    def in_epochs(self) -> bool:
        """True when the job runs in epochs (the Spark runner's fault-tolerant streaming mode).

        Then a processor's instance lives for one epoch, phase 2 of a snapshot never reaches it
        (`restore_from_snapshot` in the next epoch commits instead), and a transactional sink must
        not commit in `complete()`: it returns False until the epoch's terminal snapshot has
        taken its open transaction, so that the driver's commit covers it too.
        """
        return bool(self.attributes.get(EPOCHS_ATTRIBUTE, False))


def adopting_processor(orphan: int, live: Sequence[int]) -> int:
    """The processor (global index, among `live`, sorted) that restores the entries of processor
    `orphan`, which does not run (its member runs none of the vertex, or it completed): the same
    choice on every member and runner."""
    return live[orphan % len(live)]

"""What a meta supplier, a supplier and a processor learn about the job and their place in it."""

from __future__ import annotations

import logging
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
    #: (index, count) among the vertex's processors that run, when some members run none of them
    #: (a meta supplier gave them no supplier, such as `FirstMemberOnly`); None: every member runs
    #: the vertex. See `running_processor_index`.
    running: tuple[int, int] | None = None

    @property
    def running_processor_index(self) -> int:
        """This processor's place among the vertex's processors that run, from 0 to
        `running_processor_count - 1`: what a source dealing out its input among the vertex's
        processors deals by. `global_processor_index` and `total_parallelism` count a processor
        for every member, also members that run none of the vertex (as in Jet), so a slice by
        them would leave the missing processors' share unread."""
        return self.global_processor_index if self.running is None else self.running[0]

    @property
    def running_processor_count(self) -> int:
        """How many processors of the vertex run (see `running_processor_index`)."""
        return self.total_parallelism if self.running is None else self.running[1]

    @property
    def in_epochs(self) -> bool:
        """True when the job runs in epochs (the Spark runner's fault-tolerant streaming mode).

        Then a processor's instance lives for one epoch, phase 2 of a snapshot never reaches it
        (`restore_from_snapshot` in the next epoch commits instead), and a transactional sink must
        not commit in `complete()`: it returns False until the epoch's terminal snapshot has
        taken its open transaction, so that the driver's commit covers it too.
        """
        return bool(self.attributes.get(EPOCHS_ATTRIBUTE, False))

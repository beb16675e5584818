"""Transactional sinks driven call by call, as their tasklets drive them: a snapshot sink that
keeps what `save_to_snapshot` offered, processors of a `transactional_files` vertex initialized
as a task initializes them, and the phases of the two-phase commit one at a time. Shared by the
sink tests (tests/unit/processors/test_transactional.py) and the audits of exactly-once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jetspark import processors as P
from jetspark.checkpoint import CheckpointStore
from jetspark.core import DAG, JobConfig, ProcessingGuarantee
from jetspark.core.context import EPOCHS_ATTRIBUTE, RUN_ATTRIBUTE
from jetspark.engine.list_inbox import ListInbox
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.snapshot import SnapshotEntry
from jetspark.planning.pipeline import build_plan
from jetspark.planning.plan import create_processors


class Saved:
    """A snapshot sink that keeps what `save_to_snapshot` offered."""

    def __init__(self) -> None:
        self.entries: list[SnapshotEntry] = []

    def __call__(self, entries: list[SnapshotEntry]) -> None:
        self.entries.extend(entries)


def file_sinks(
    out: Path, members: int, saved: Saved, job_id: str = "job1", epochs: bool = True, run: str | None = None
) -> list[Any]:
    """Every processor of a `transactional_files` vertex planned on `members` members (local
    parallelism 1), initialized as a task initializes them, all saving into `saved`. Each call
    is a new plan: a new execution id, so a new run in the transaction ids; `run` is the run id
    a Spark epoch's task gets (`RUN_ATTRIBUTE`), if given."""
    dag = DAG()
    dag.new_vertex("out", P.transactional_files(str(out)), local_parallelism=1)
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)
    plan = build_plan(dag, config, members, job_id=job_id)
    processors = []
    for member in range(members):
        [processor] = create_processors(plan, "out", member)
        context = plan.processor_context("out", member, 0)
        if epochs:
            context.attributes[EPOCHS_ATTRIBUTE] = True
        if run is not None:
            context.attributes[RUN_ATTRIBUTE] = run
        outbox = OutboxImpl([], "out", snapshot_sink=saved)
        processor.init(outbox, context)
        outbox.allow_snapshot_offers("save_to_snapshot")  # the tasklet allows it around each save
        processors.append(processor)
    return processors


def write(processor: Any, *items: Any) -> None:
    inbox = ListInbox()
    inbox.fill(list(items))
    processor.process(0, inbox)
    assert inbox.is_empty()


def save_and_prepare(processor: Any) -> None:
    """Phase 1 as the tasklet runs it; the outbox hands the saved entries over when flushed."""
    assert processor.save_to_snapshot()
    processor.outbox.flush()
    assert processor.snapshot_commit_prepare()


def restore(processor: Any, saved: Saved) -> None:
    inbox = ListInbox()
    inbox.fill([entry.decode() for entry in saved.entries])
    processor.restore_from_snapshot(inbox)
    assert processor.finish_snapshot_restore()


def temp_files(out: Path) -> list[str]:
    return sorted(name for name in os.listdir(out) if name.startswith("."))


def take_snapshot(store: CheckpointStore, snapshot_id: int) -> None:
    """Write and commit a one-file snapshot `snapshot_id` of vertex "count"."""
    files = [store.write_file(snapshot_id, "count", "count-m0", [(5, b"k", str(snapshot_id).encode())])]
    store.commit(snapshot_id, files, partition_count=271)

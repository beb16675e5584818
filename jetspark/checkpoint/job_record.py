"""A job's durable identity under its checkpoint directory: `<job>/JOB`, a small JSON record.

It is written at submit, before any processor runs (so before any sink can prepare anything), and
it outlives the job's snapshots: a job submitted again under the same name and root finds its id
there whatever state the last run died in, so its sinks' transaction ids (which derive from the
id) reach what that run left. A completed job keeps the record, marked completed, when its
snapshots are deleted: submitting it again then does nothing unless asked to start it over.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import attrs

#: The record's format; a record of another format is refused.
FORMAT = 1


def new_run_id() -> str:
    """The id of one run (one submit) of a job: names the run that owns the job now."""
    return uuid.uuid4().hex[:12]


@attrs.frozen
class JobRecord:
    """Who the job is and which run owns it now; `completed` is when it completed (None: not)."""

    job_id: str
    name: str
    run: str
    #: When the job was first submitted (wall clock), and when the owning run started.
    created: float
    run_started: float
    completed: float | None = None
    #: A snapshot of the job was committed (`LATEST` was written) at least once: without `LATEST`
    #: the job cannot be taken for one that never committed (`CheckpointStore.drop_uncommitted`).
    committed: bool = False
    #: The job's metrics (`JobHandle.metrics()`) when it completed: what a submit of the
    #: completed job reports (`CompletedBefore`).
    metrics: dict[str, dict[str, int]] | None = None

    def to_body(self) -> dict[str, Any]:
        """The record as the JSON body of `<job>/JOB`."""
        return {"format": FORMAT, **attrs.asdict(self)}

    @classmethod
    def from_body(cls, body: Any) -> JobRecord:
        """Raises ValueError (or KeyError, TypeError) for a record that cannot be read."""
        body = dict(body)
        if body.pop("format") != FORMAT:
            raise ValueError(f"format is not {FORMAT}")
        completed = body.get("completed")
        return cls(
            job_id=str(body["job_id"]),
            name=str(body["name"]),
            run=str(body["run"]),
            created=float(body["created"]),
            run_started=float(body["run_started"]),
            completed=None if completed is None else float(completed),
            committed=bool(body.get("committed", False)),  # absent in records written before it
            metrics=_metrics(body.get("metrics")),
        )

    def taken_over(self, run: str) -> JobRecord:
        """The record once run `run` owns the job (it keeps its id)."""
        return attrs.evolve(self, run=run, run_started=time.time(), completed=None)

    def with_a_commit(self) -> JobRecord:
        return attrs.evolve(self, committed=True)

    def finished(self, metrics: dict[str, dict[str, int]] | None = None) -> JobRecord:
        return attrs.evolve(self, completed=time.time(), metrics=metrics)

    @property
    def completed_text(self) -> str:
        return (
            ""
            if self.completed is None
            else time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(self.completed))
        )


def first_record(job_id: str, name: str, run: str) -> JobRecord:
    now = time.time()
    return JobRecord(job_id, name, run, now, now)


def _metrics(raw: Any) -> dict[str, dict[str, int]] | None:
    """The record's metrics: per vertex, figure -> count (None when the record has none)."""
    if raw is None:
        return None
    return {
        str(vertex): {str(name): int(value) for name, value in figures.items()}
        for vertex, figures in raw.items()
    }

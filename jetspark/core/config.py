"""Job configuration: everything a job needs besides its DAG."""

from __future__ import annotations

import enum
import numbers
from typing import Any

import attrs


class ProcessingGuarantee(enum.Enum):
    """What survives a restart: nothing, every item at least once, or every item exactly once."""

    NONE = "none"
    AT_LEAST_ONCE = "at_least_once"
    EXACTLY_ONCE = "exactly_once"


def checked_count(value: Any, what: str) -> int:
    """`value` as a count of members, processors or snapshots: an int (not a bool) >= 1. Raises
    TypeError or ValueError whose message starts with `what`, so every place that takes a member
    count (JobConfig, the runners, resume) refuses the same values alike."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int >= 1, got {value!r} of type {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{what} must be an int >= 1, got {value}")
    return int(value)


def _positive_or_none(_instance: object, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None:
        checked_count(value, f"JobConfig.{attribute.name}")


def _positive_seconds_or_none(
    _instance: object, attribute: attrs.Attribute[Any], value: float | None
) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"JobConfig.{attribute.name} must be a number of seconds > 0 or None, got {value!r}")


@attrs.define(kw_only=True)
class JobConfig:
    """Settings of one job. All fields have defaults, so `JobConfig()` is a valid batch job config.

    `member_count` is the number of members (Spark tasks per stage, or simulated members in the
    local runner); None lets the runner choose. Counts must be ints >= 1 (the runners' own
    `member_count` follows the same rule). `default_local_parallelism` is used for vertices
    whose local parallelism is -1; jetspark defaults it to 1 because one Python thread per member
    does the work (the GIL makes more threads per member slower, not faster).
    """

    name: str | None = None
    processing_guarantee: ProcessingGuarantee = ProcessingGuarantee.NONE
    snapshot_interval_millis: int = 10_000
    member_count: int | None = attrs.field(default=None, validator=_positive_or_none)
    default_local_parallelism: int = attrs.field(default=1, validator=_positive_or_none)
    initial_snapshot_name: str | None = None
    #: Where snapshots are persisted (a local path or an fsspec URL); None keeps them in memory.
    #: The job's directory under it is named after the job, so a job submitted again under the
    #: same name resumes from its last committed snapshot.
    checkpoint_root: str | None = None
    snapshots_retained: int = attrs.field(default=3, validator=_positive_or_none)
    #: Where the job's startpoints are kept (`jetspark startpoint set`); None: under the
    #: checkpoint root. Startpoints apply only to jobs that keep snapshots in a checkpoint root.
    startpoints_directory: str | None = None
    arguments: dict[str, Any] = attrs.field(factory=dict)
    #: Merge chains of built-in stateless steps joined by local edges into one vertex, as Jet
    #: does (`jetspark.planning.fusion`): fewer queues per item; the merged vertices' metrics go.
    fuse_vertices: bool = True
    #: Seconds with no progress anywhere, while items are pending or a processor with all its
    #: input has not completed, after which the job fails with `QuiescenceError` and a dump of
    #: every processor's watermarks and pending counts instead of hanging (seed 004's quiescence
    #: check). None turns the check off; raise it for processors that wait longer on a timer.
    quiescence_timeout_seconds: float | None = attrs.field(default=60.0, validator=_positive_seconds_or_none)

    @property
    def snapshots_enabled(self) -> bool:
        return self.processing_guarantee is not ProcessingGuarantee.NONE

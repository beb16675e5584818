"""Job configuration: everything a job needs besides its DAG."""

from __future__ import annotations

import enum
import numbers
import os
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


def _is_power_of_2_in(low: int, high: int) -> bool:
    """Whether [low, high] holds a power of 2."""
    power = 1
    while power < low:
        power *= 2
    return power <= high


class ParallelismDecider(enum.Enum):
    """How an adaptive batch job decides a stage's member count from the bytes it consumes."""

    #: FLIP-187: bytes / bytes_per_task rounded to the nearest power of 2, even subpartition ranges.
    POWER_OF_2 = "power_of_2"
    #: Contiguous subpartitions packed by their bytes (later Flink's "evenly distribute"): skew-aware.
    EVENLY_BY_BYTES = "evenly_by_bytes"


def _decider(value: object) -> ParallelismDecider:
    """A `ParallelismDecider`, or its value as a string (`"evenly_by_bytes"`); else one line naming
    the choices."""
    if isinstance(value, ParallelismDecider):
        return value
    try:
        return ParallelismDecider(value)
    except ValueError:
        choices = ", ".join(repr(d.value) for d in ParallelismDecider)
        raise ValueError(
            f"AdaptiveParallelism.decider must be a ParallelismDecider or one of {choices}, got {value!r}"
        ) from None


@attrs.frozen(kw_only=True)
class AdaptiveParallelism:
    """Settings of adaptive batch parallelism (`JobConfig.adaptive_parallelism`).

    A stage after a distributed edge runs on as many members as its input needs: about
    `bytes_per_task` bytes each, at least `min_parallelism` and at most `max_parallelism`. With
    the `POWER_OF_2` decider the count is a power of 2, so [min, max] must hold one: a range that
    does not is refused here, when the config is made.
    """

    decider: ParallelismDecider = attrs.field(default=ParallelismDecider.POWER_OF_2, converter=_decider)
    bytes_per_task: int = 64 * 1024 * 1024
    min_parallelism: int = 1
    max_parallelism: int = 128
    #: Tasks of a stage without a shuffle into it (FLIP-187's default source parallelism);
    #: None: Spark's default parallelism.
    source_parallelism: int | None = None

    def __attrs_post_init__(self) -> None:
        checked_count(self.bytes_per_task, "AdaptiveParallelism.bytes_per_task")
        checked_count(self.min_parallelism, "AdaptiveParallelism.min_parallelism")
        checked_count(self.max_parallelism, "AdaptiveParallelism.max_parallelism")
        if self.source_parallelism is not None:
            checked_count(self.source_parallelism, "AdaptiveParallelism.source_parallelism")
        if self.min_parallelism > self.max_parallelism:
            raise ValueError(
                f"AdaptiveParallelism: min_parallelism {self.min_parallelism} is above max_parallelism "
                f"{self.max_parallelism}"
            )
        if self.decider is ParallelismDecider.POWER_OF_2 and not _is_power_of_2_in(
            self.min_parallelism, self.max_parallelism
        ):
            raise ValueError(
                f"AdaptiveParallelism: no power of 2 lies in [min_parallelism, max_parallelism] = "
                f"[{self.min_parallelism}, {self.max_parallelism}], which the power_of_2 decider needs"
            )


def _text_or_none(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ValueError(f"JobConfig.{attribute.name} must be a non-empty str or None, got {value!r}")


def _path_or_none(value: Any) -> Any:
    """A `pathlib.Path` (any path-like) as its str; anything else as given, for the validator."""
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def _flag(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"JobConfig.{attribute.name} must be True or False, got {value!r}")


def _guarantee(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, ProcessingGuarantee):
        allowed = ", ".join(f"ProcessingGuarantee.{g.name}" for g in ProcessingGuarantee)
        raise ValueError(f"JobConfig.{attribute.name} must be one of {allowed}, got {value!r}")


def _millis(_instance: object, attribute: attrs.Attribute[Any], value: Any, least: int = 1) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or not least <= int(value) <= _MAX_MILLIS
    ):
        raise ValueError(
            f"JobConfig.{attribute.name} must be an int of milliseconds in [{least}, {_MAX_MILLIS}] "
            f"(up to a year), got {value!r}"
        )


def _interval_millis(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """As `_millis`, and 0 too: snapshots as often as they can be taken (Jet takes 0)."""
    _millis(_instance, attribute, value, least=0)


def _arguments(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict):
        raise ValueError(f"JobConfig.{attribute.name} must be a dict, got {type(value).__name__}")


def _adaptive(_instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, AdaptiveParallelism):
        raise ValueError(f"JobConfig.{attribute.name} must be an AdaptiveParallelism or None, got {value!r}")


#: The longest snapshot interval JobConfig takes: a year, in milliseconds.
_MAX_MILLIS = 365 * 24 * 3600 * 1000


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
    `member_count` follows the same rule). Every field is checked when the config is made (and
    when a field is set): a value out of range raises ValueError (TypeError for a count that is
    not an int) naming the field and what it takes. `default_local_parallelism` is used for vertices
    whose local parallelism is -1; jetspark defaults it to 1 because one Python thread per member
    does the work (the GIL makes more threads per member slower, not faster).
    """

    name: str | None = attrs.field(default=None, validator=_text_or_none)
    processing_guarantee: ProcessingGuarantee = attrs.field(
        default=ProcessingGuarantee.NONE, validator=_guarantee
    )
    #: Between snapshots (on Spark: the length of an epoch); 0 to a year. 0, as in Jet: each
    #: snapshot as soon as the last one ended (on Spark: epochs whose sources run 1 ms).
    snapshot_interval_millis: int = attrs.field(default=10_000, validator=_interval_millis)
    member_count: int | None = attrs.field(default=None, validator=_positive_or_none)
    default_local_parallelism: int = attrs.field(default=1, validator=_positive_or_none)
    initial_snapshot_name: str | None = attrs.field(default=None, validator=_text_or_none)
    #: Where snapshots are persisted (a local path or an fsspec URL); None keeps them in memory.
    #: The job's directory under it is named after the job, so a job submitted again under the
    #: same name resumes from its last committed snapshot.
    checkpoint_root: str | None = attrs.field(default=None, converter=_path_or_none, validator=_text_or_none)
    snapshots_retained: int = attrs.field(default=3, validator=_positive_or_none)
    #: Where the job's startpoints are kept (`jetspark startpoint set`); None: under the
    #: checkpoint root. Startpoints apply only to jobs that keep snapshots in a checkpoint root.
    startpoints_directory: str | None = attrs.field(
        default=None, converter=_path_or_none, validator=_text_or_none
    )
    arguments: dict[str, Any] = attrs.field(factory=dict, validator=_arguments)
    #: Merge chains of built-in stateless steps joined by local edges into one vertex, as Jet
    #: does (`jetspark.planning.fusion`): fewer queues per item; the merged vertices' metrics go.
    fuse_vertices: bool = attrs.field(default=True, validator=_flag)
    #: Leave out what cannot do work (`jetspark.planning.pruning`): processors that do no work
    #: without input and get none, members left with nothing, source partitions a key predicate
    #: excludes. Applies to jobs without a processing guarantee (a restored processor may have
    #: work without input). Off: every member runs every vertex, as before pruning existed.
    pruning: bool = attrs.field(default=True, validator=_flag)
    #: Batch jobs on Spark: decide the member count of each stage after a distributed edge from
    #: the bytes its producers wrote (`jetspark.planning.adaptive`). None (the default): off.
    adaptive_parallelism: AdaptiveParallelism | None = attrs.field(default=None, validator=_adaptive)
    #: Seconds with no progress anywhere, while items are pending or a processor with all its
    #: input has not completed, after which the job fails with `QuiescenceError` and a dump of
    #: every processor's watermarks and pending counts instead of hanging (seed 004's quiescence
    #: check). None turns the check off; raise it for processors that wait longer on a timer.
    quiescence_timeout_seconds: float | None = attrs.field(default=60.0, validator=_positive_seconds_or_none)
    #: A job with a checkpoint root that completed in an earlier run is not run again when it is
    #: submitted under its name (the submit says when it completed); True runs it again from
    #: the beginning, under a new job id (`jetspark run/submit --start-over`).
    start_over: bool = attrs.field(default=False, validator=_flag)
    #: Streaming on Spark with a guarantee: while the sources have a backlog, shorten their span
    #: too, so that each epoch (every stage, the commit) lasts about `snapshot_interval_millis`
    #: (latency first: more, smaller epochs, less throughput). False: a backlog runs the whole
    #: interval per epoch, as Spark's processing-time trigger lets a batch run long; sources that
    #: caught up are shortened either way (`jetspark.runners.spark.epoch_span`).
    epochs_within_interval: bool = attrs.field(default=False, validator=_flag)

    @property
    def snapshots_enabled(self) -> bool:
        return self.processing_guarantee is not ProcessingGuarantee.NONE

"""Everything a verification is configured with; the builder fills it, the harness reads it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from jetspark.core.config import JobConfig, ProcessingGuarantee
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.testing._context import Layout
from jetspark.testing._routing import InputRouting

#: Calls of a cooperative processor longer than this are logged as a warning (Jet: 5 ms).
COOPERATIVE_WARN_SECONDS = 0.005
#: Key of `Settings.routings` for a routing declared for every input ordinal.
ALL_ORDINALS = -1
DEFAULT_REDISTRIBUTION = ((Layout(2, 1), Layout(1, 3)), (Layout(3, 1), Layout(1, 1)))


@attrs.define(kw_only=True)
class Settings:
    inputs: list[list[Any]] = attrs.field(factory=list)
    priorities: list[int] = attrs.field(factory=list)
    snapshots: bool = True
    complete_call: bool = True
    assert_progress: bool = True
    logging: bool = True
    outbox_capacity: int = 1
    cooperative_limit: float = 1.0
    member_count: int = 1
    local_parallelism: int = 1
    member_index: int = 0
    local_index: int = 0
    job_config: JobConfig | None = None
    run_until: tuple[float, float] | None = None
    redistribution: tuple[tuple[Layout, Layout], ...] = DEFAULT_REDISTRIBUTION
    routings: dict[int, InputRouting] = attrs.field(factory=dict)
    restore_points: list[frozenset[int]] = attrs.field(factory=list)
    partition_count: int = DEFAULT_PARTITION_COUNT
    #: A method loop (complete(), process() of one batch, ...) fails after this many calls.
    max_calls: int = 1_000_000
    #: ... or after this many seconds without progress (reachable with the progress check off).
    stall_seconds: float = 10.0
    #: ... or after this many seconds in all, progress or not (None: no limit), so that a
    #: verification never hangs; `run_until_output_matches` bounds its `complete()` loop itself.
    timeout_seconds: float | None = 30.0
    vertex_name: str = "processor-under-test"
    #: Called before each mode runs (`execute_before_each_run`), None: nothing.
    before_each_run: Callable[[], None] | None = None
    attributes: dict[str, Any] = attrs.field(factory=dict)

    @property
    def layout(self) -> Layout:
        return Layout(self.member_count, self.local_parallelism)

    def input_routings(self) -> list[InputRouting]:
        default = self.routings.get(ALL_ORDINALS, InputRouting())
        return [self.routings.get(o, default) for o in range(len(self.inputs))]

    def job_config_for(self, snapshots: bool) -> JobConfig:
        """The user's config; in snapshot modes a guarantee of NONE becomes EXACTLY_ONCE, so that
        processors that look at `snapshotting_enabled` do save their state."""
        config = self.job_config or JobConfig()
        if snapshots and config.processing_guarantee is ProcessingGuarantee.NONE:
            return attrs.evolve(config, processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)
        return config


Checker = Callable[[list[Any], list[Any]], bool]

"""`verify_processor`: the fluent builder users meet first (Jet's `TestSupport.verifyProcessor`).

    verify_processor(Dedup).input([1, 2, 2, 3]).expect_output([1, 2, 3])

Configure, then end with `expect_output`, `expect_outputs` or `assert_output`, which run the
verification and raise `ProcessorVerificationError` on failure (else return a `Verification`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jetspark.core.config import JobConfig
from jetspark.core.partitioner import Partitioner, default_partitioner
from jetspark.core.suppliers import SupplierLike
from jetspark.core.watermark import Watermark
from jetspark.testing._context import Layout
from jetspark.testing._routing import InputRouting
from jetspark.testing._settings import ALL_ORDINALS, Checker, Settings
from jetspark.testing._verify import AssertFn, Expectation, Verification, run_verification


def verify_processor(supplier: SupplierLike) -> ProcessorVerifier:
    """Start verifying the processors `supplier` makes (a meta supplier, a supplier, or a
    zero-argument callable returning a `Processor`, such as the class itself)."""
    return ProcessorVerifier(supplier)


class ProcessorVerifier:
    """Runs a processor in every mode (see `jetspark.testing`) and checks each mode's output."""

    def __init__(self, supplier: SupplierLike) -> None:
        self._supplier = supplier
        self._checker: Checker | None = None
        self._drop_watermarks = False
        self.settings = Settings()

    # ---- input ----------------------------------------------------------------------------

    def input(self, items: Sequence[Any]) -> ProcessorVerifier:
        """Items for ordinal 0; `Watermark`s among them go to `try_process_watermark`."""
        return self.inputs([items])

    def inputs(
        self, inputs: Sequence[Sequence[Any]], priorities: Sequence[int] | None = None
    ) -> ProcessorVerifier:
        """Items per input ordinal. Lower priority is drained first; within one priority the
        ordinals take turns item by item. Watermarks must rise within each ordinal."""
        lists = [list(items) for items in inputs]
        prios = list(priorities) if priorities is not None else [0] * len(lists)
        if len(prios) != len(lists):
            raise ValueError(f"{len(lists)} inputs but {len(prios)} priorities")
        for ordinal, items in enumerate(lists):
            _check_watermarks(ordinal, items)
        self.settings.inputs = lists
        self.settings.priorities = prios
        return self

    def partitioned_input(
        self,
        key_fn: Callable[[Any], Any],
        ordinal: int | None = None,
        partitioner: Partitioner = default_partitioner,
    ) -> ProcessorVerifier:
        """Declare the input edge (one ordinal, or all) partitioned by `key_fn`: when several
        processors run, each item goes to the owner of its key's partition."""
        return self._route(ordinal, InputRouting(key_fn=key_fn, partitioner=partitioner))

    def broadcast_input(self, ordinal: int | None = None) -> ProcessorVerifier:
        """Declare the input edge broadcast: when several processors run, each gets every item."""
        return self._route(ordinal, InputRouting(broadcast=True))

    def _route(self, ordinal: int | None, routing: InputRouting) -> ProcessorVerifier:
        self.settings.routings[ALL_ORDINALS if ordinal is None else ordinal] = routing
        return self

    # ---- options --------------------------------------------------------------------------

    def disable_snapshots(self) -> ProcessorVerifier:
        """Run only the modes without snapshots (no restore, no redistribution)."""
        self.settings.snapshots = False
        return self

    def disable_complete_call(self) -> ProcessorVerifier:
        """Never call `complete()` (for streaming processors whose flushing code must not run)."""
        self.settings.complete_call = False
        return self

    def disable_progress_assertion(self) -> ProcessorVerifier:
        """Allow calls that neither take input, nor emit, nor return True."""
        self.settings.assert_progress = False
        return self

    def execute_before_each_run(self, action: Callable[[], None]) -> ProcessorVerifier:
        """Call `action` before each mode runs (Jet's `executeBeforeEachRun`): reset what a sink
        writes outside the processor, so that each mode's `assert_output` sees its own run."""
        if not callable(action):
            raise TypeError(f"execute_before_each_run() needs a callable, got {action!r}")
        self.settings.before_each_run = action
        return self

    def disable_logging(self) -> ProcessorVerifier:
        """Do not log calls (to the `jetspark.testing` logger, DEBUG) nor slow-call warnings."""
        self.settings.logging = False
        return self

    def disable_redistribution(self) -> ProcessorVerifier:
        """Skip the modes that restore into another number of processors (for a processor that
        only ever runs as one instance, e.g. behind an `all_to_one` edge)."""
        self.settings.redistribution = ()
        return self

    def redistribution(self, *layouts: tuple[Layout, Layout]) -> ProcessorVerifier:
        """The (before, after) layouts of the redistribution modes; each mode restores at every
        point, alternating between the two."""
        self.settings.redistribution = tuple(layouts)
        return self

    def snapshot_points(self, *points: Sequence[int] | frozenset[int]) -> ProcessorVerifier:
        """Add a mode per set of points that restores exactly there (points counted from 1:
        before the first input, after each input batch, after each unfinished `complete()`)."""
        self.settings.restore_points.extend(frozenset(p) for p in points)
        return self

    def outbox_capacity(self, capacity: int) -> ProcessorVerifier:
        """Capacity of the small outbox (default 1); the large one holds 1024."""
        if capacity < 1:
            raise ValueError(f"outbox capacity must be >= 1, got {capacity}")
        self.settings.outbox_capacity = capacity
        return self

    def cooperative_time_limit(self, seconds: float) -> ProcessorVerifier:
        """Fail a cooperative processor's call that takes longer (default 1 s; 0 disables)."""
        self.settings.cooperative_limit = seconds
        return self

    def processor_index(self, local: int = 0, member: int = 0) -> ProcessorVerifier:
        """The indexes the processor sees in its context (global = member * local parallelism + local)."""
        self.settings.local_index = local
        self.settings.member_index = member
        return self

    def parallelism(self, local: int = 1, members: int = 1) -> ProcessorVerifier:
        """The local parallelism and member count the processor sees in its context."""
        if local < 1 or members < 1:
            raise ValueError(f"parallelism must be >= 1, got local={local}, members={members}")
        self.settings.local_parallelism = local
        self.settings.member_count = members
        return self

    def call_limit(self, calls: int) -> ProcessorVerifier:
        """Fail when one method loop (e.g. `complete()` until True) exceeds `calls` calls."""
        self.settings.max_calls = calls
        return self

    def timeout(self, seconds: float | None) -> ProcessorVerifier:
        """Fail when one method loop (e.g. `complete()` until True) lasts longer than `seconds`
        (default 30), naming the method that did not return True; None: no time limit."""
        if seconds is not None and not seconds > 0:
            raise ValueError(f"timeout must be a number of seconds > 0 or None, got {seconds!r}")
        self.settings.timeout_seconds = seconds
        return self

    def job_config(self, config: JobConfig) -> ProcessorVerifier:
        self.settings.job_config = config
        return self

    def run_until_output_matches(self, timeout: float, extra_time: float) -> ProcessorVerifier:
        """For a streaming processor: call `complete()` until the output matched for `extra_time`
        seconds, or `timeout` seconds passed (then the output must match)."""
        if timeout < 0 or extra_time < 0:
            raise ValueError("timeout and extra_time must be >= 0")
        self.settings.run_until = (timeout, extra_time)
        return self

    def vertex_name(self, name: str) -> ProcessorVerifier:
        self.settings.vertex_name = name
        return self

    def attributes(self, **attributes: Any) -> ProcessorVerifier:
        """Values put into `context.attributes` (as a runner passes its own)."""
        self.settings.attributes.update(attributes)
        return self

    # ---- running --------------------------------------------------------------------------

    def expect_output(self, items: Sequence[Any], any_order: bool = False) -> Verification:
        """Run; the output of ordinal 0 must equal `items` (in order unless `any_order`)."""
        return self.expect_outputs([items], any_order)

    def expect_outputs(self, outputs: Sequence[Sequence[Any]], any_order: bool = False) -> Verification:
        """Run; one expected list per output ordinal."""
        return self._run(Expectation(len(outputs), [list(o) for o in outputs], any_order=any_order))

    def output_checker(self, checker: Checker) -> ProcessorVerifier:
        """Compare expected and actual output of an ordinal with `checker(expected, actual)`
        instead of equality (e.g. `SAME_ITEMS_ANY_ORDER`)."""
        self._checker = checker
        return self

    def ignore_output_watermarks(self) -> ProcessorVerifier:
        """Compare outputs without their watermarks (for expected lists written without them)."""
        self._drop_watermarks = True
        return self

    def assert_output(self, output_count: int, assert_fn: AssertFn) -> Verification:
        """Run with `output_count` output ordinals; `assert_fn(mode, outputs)` raises
        AssertionError when the outputs are wrong."""
        return self._run(Expectation(output_count, assert_fn=assert_fn))

    def _run(self, expectation: Expectation) -> Verification:
        s = self.settings
        if not (0 <= s.local_index < s.local_parallelism and 0 <= s.member_index < s.member_count):
            raise ValueError(
                f"processor index (member {s.member_index}, local {s.local_index}) is outside the "
                f"parallelism ({s.member_count} members x {s.local_parallelism})"
            )
        unknown = [o for o in s.routings if o != ALL_ORDINALS and o >= len(s.inputs)]
        if unknown:
            raise ValueError(
                f"input routing declared for ordinal(s) {unknown}, but there are {len(s.inputs)} inputs"
            )
        expectation.checker = self._checker
        expectation.drop_watermarks = self._drop_watermarks
        return run_verification(self._supplier, s, expectation)


def _check_watermarks(ordinal: int, items: Sequence[Any]) -> None:
    last: int | None = None
    for item in items:
        if isinstance(item, Watermark) and not item.is_idle():
            if last is not None and item.timestamp <= last:
                raise ValueError(
                    f"input ordinal {ordinal}: watermark {item.timestamp} after {last}; watermarks must rise"
                )
            last = item.timestamp

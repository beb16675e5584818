"""Running a verification: every mode, the output check, and the diagnosis of failures.

Each mode runs to its end (or its first violation) on fresh processors. A violation of a call rule
(progress, re-offer, commit-finish emission, cooperative duration, endless loop) is reported as
is; an output mismatch or a plain exception is classified by the groups of modes it appears in:
already without snapshots (wrong output, or, if only with a small outbox, a rejected offer
ignored), only when snapshots are taken, only after restores, only after redistribution.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from jetspark.core.suppliers import SupplierLike
from jetspark.core.watermark import Watermark
from jetspark.engine.snapshot import saves_incrementally
from jetspark.testing._calls import CallLog
from jetspark.testing._context import ContextSettings, Layout, ProcessorFactory
from jetspark.testing._harness import Harness
from jetspark.testing._kinds import CALL_KINDS, FailureKind, ProcessorVerificationError, Violation
from jetspark.testing._modes import LARGE, Group, Mode, default_modes, mix_inputs, to_events
from jetspark.testing._report import ModeResult, describe_mismatch, format_failure, same_items_any_order
from jetspark.testing._settings import DEFAULT_REDISTRIBUTION, Checker, Settings

AssertFn = Callable[[str, list[list[Any]]], None]


@attrs.define
class Expectation:
    """What the output must be: `expected` lists checked by `checker` (or equality), or `assert_fn`."""

    output_count: int
    expected: list[list[Any]] | None = None
    checker: Checker | None = None
    any_order: bool = False
    assert_fn: AssertFn | None = None
    #: Compare without watermarks (in the expected and the actual output).
    drop_watermarks: bool = False

    def ordinal_any_order(self, mode: Mode) -> Callable[[int], bool]:
        return lambda _ordinal: self.any_order or (mode.multi and self.checker is None)

    def mismatch(self, mode: Mode, outputs: list[list[Any]]) -> str | None:
        """None when `outputs` is right for `mode`, else a description of the difference."""
        if self.drop_watermarks:
            outputs = [_without_watermarks(items) for items in outputs]
        if self.assert_fn is not None:
            try:
                self.assert_fn(mode.describe(), outputs)
            except AssertionError as error:
                return f"the output check failed: {error}\n" + "\n".join(
                    f"  output ordinal {o}: {items!r}" for o, items in enumerate(outputs)
                )
            return None
        assert self.expected is not None
        expected = self.expected
        if self.drop_watermarks:
            expected = [_without_watermarks(items) for items in expected]
        any_order = self.ordinal_any_order(mode)
        for ordinal, (want, got) in enumerate(zip(expected, outputs)):
            if self.checker is not None:
                ok = bool(self.checker(want, got))
            elif any_order(ordinal):
                ok = same_items_any_order(want, got)
            else:
                ok = want == got
            if not ok:
                return describe_mismatch(expected, outputs, any_order)
        return None


def _without_watermarks(items: list[Any]) -> list[Any]:
    return [item for item in items if not isinstance(item, Watermark)]


@attrs.frozen
class Verification:
    """The outcome of a passed verification: one result per mode, in the order run."""

    results: list[ModeResult]

    @property
    def modes(self) -> list[str]:
        return [r.mode.describe() for r in self.results]


def redistribution_layouts(settings: Settings) -> tuple[tuple[Layout, Layout], ...]:
    """The redistribution modes' layouts. None by default when the processor is one of several
    (`parallelism()` above 1, as Jet's `TestSupport.localParallelism`): its expected output is then
    that one processor's share, which the modes, running every processor of their own layouts and
    merging their outputs, cannot check. `redistribution(...)` named by the user still runs."""
    one_of_several = settings.layout.total_parallelism > 1
    if one_of_several and settings.redistribution is DEFAULT_REDISTRIBUTION:
        return ()
    return settings.redistribution


def run_verification(supplier: SupplierLike, settings: Settings, expectation: Expectation) -> Verification:
    if settings.restore_points and not settings.snapshots:
        raise ValueError("snapshot_points() needs snapshots: do not combine it with disable_snapshots()")
    has_input = any(settings.inputs)
    modes = default_modes(
        layout=settings.layout,
        has_input=has_input,
        snapshots=settings.snapshots,
        small_capacity=settings.outbox_capacity,
        redistribution=redistribution_layouts(settings),
        restore_points=settings.restore_points,
    )
    mixed = mix_inputs(settings.inputs, settings.priorities)
    results: list[ModeResult] = []
    names: list[str] = []
    incremental = False  # whether the processor names the keys it changed (seen in a run)
    for mode in modes:
        if mode.incremental and not incremental:
            continue  # the same as a full-snapshot mode
        result, name = run_mode(supplier, settings, expectation, mode, _fresh(mixed))
        incremental = incremental or result.saves_incrementally
        results.append(result)
        names.append(name)
        if result.violation is not None and result.violation.kind is FailureKind.NEVER_FINISHES:
            break  # the other modes would loop as long: one is enough to report
    diagnosis = diagnose(results, has_input)
    if diagnosis is not None:
        kind, primary = diagnosis
        name = names[results.index(primary)]
        routings = [r.describe() for r in settings.input_routings()]
        message = format_failure(kind, primary, results, settings.inputs, settings.priorities, routings, name)
        error = ProcessorVerificationError(message, kind, primary.mode.describe())
        raise error from (primary.violation.__cause__ if primary.violation is not None else None)
    return Verification(results)


def _fresh(items: list[Any]) -> list[Any]:
    """A deep copy of the input for one mode: a processor may change the items it receives (an
    accumulator combined in place), and each mode must start from the input as given."""
    try:
        return copy.deepcopy(items)
    except Exception:  # items that cannot be copied are shared; they had better not be changed
        return items


def run_mode(
    supplier: SupplierLike, settings: Settings, expectation: Expectation, mode: Mode, mixed: Sequence[Any]
) -> tuple[ModeResult, str]:
    """Run one mode on fresh processors; returns its result and the processor's class name."""
    if settings.before_each_run is not None:  # an external sink's store reset, say
        settings.before_each_run()
    log = CallLog(logging_enabled=settings.logging, mode=mode.describe())
    harness = new_harness(supplier, settings, mode, log, expectation.output_count)
    violation: Violation | None = None
    try:
        harness.start()
        harness.snapshot_point()
        for event in to_events(mixed, mode.inbox_size):
            harness.apply(event)
            harness.snapshot_point()
        if settings.complete_call:
            if settings.run_until is not None:
                harness.complete(lambda: expectation.mismatch(mode, harness.outputs) is None)
                if all(inst.completed for inst in harness.instances) and settings.run_until[0] > 0:
                    raise Violation(
                        FailureKind.CONTRACT,
                        "complete() returned True in a run-until-output-matches verification "
                        "(meant for streaming processors, whose complete() never returns True)",
                    )
            else:
                harness.complete()
    except Violation as error:
        violation = error
    finally:
        try:
            harness.close(violation)
        except Violation as error:  # raised only when the run had no violation before
            violation = error
    mismatch = expectation.mismatch(mode, harness.outputs) if violation is None else None
    name = type(harness.made[0].processor).__name__ if harness.made else "processor"
    result = ModeResult(
        mode,
        harness.outputs,
        violation,
        mismatch,
        log.last(),
        harness.restores,
        bool(harness.made) and saves_incrementally(harness.made[0].processor),
    )
    return result, name


def new_harness(
    supplier: SupplierLike, settings: Settings, mode: Mode, log: CallLog, output_count: int
) -> Harness:
    context = ContextSettings(
        vertex_name=settings.vertex_name,
        job_id=uuid.uuid4().hex[:16],
        job_config=settings.job_config_for(mode.snapshots),
        partition_count=settings.partition_count,
        attributes=settings.attributes,
    )
    return Harness(settings, mode, ProcessorFactory(supplier, context), log, output_count)


def diagnose(results: Sequence[ModeResult], has_input: bool) -> tuple[FailureKind, ModeResult] | None:
    """The failure class and the mode result that shows it best, or None when all passed."""
    failed = [r for r in results if not r.ok]
    if not failed:
        return None
    for result in failed:
        if result.violation is not None and result.violation.kind in CALL_KINDS:
            return result.violation.kind, result
    plain = [r for r in failed if r.mode.group is Group.PLAIN]
    if plain:
        passing_large = [
            r for r in results if r.ok and r.mode.group is Group.PLAIN and r.mode.outbox_capacity >= LARGE
        ]
        for bad in plain:
            if bad.mode.outbox_capacity < LARGE and any(
                good.mode.inbox_size == bad.mode.inbox_size or not has_input for good in passing_large
            ):
                return FailureKind.IGNORES_REJECTED_OFFER, bad
        first = plain[0]
        return (first.violation.kind if first.violation is not None else FailureKind.WRONG_OUTPUT), first
    for group, kind in (
        (Group.SNAPSHOT_ONLY, FailureKind.SNAPSHOT_CHANGES_OUTPUT),
        (Group.RESTORE, FailureKind.LOSES_STATE_ON_RESTORE),
        (Group.REDISTRIBUTION, FailureKind.MISHANDLES_REDISTRIBUTION),
    ):
        in_group = [r for r in failed if r.mode.group is group]
        if in_group:
            return kind, in_group[0]
    raise AssertionError("unreachable: every mode belongs to a group")


def driven_harness(
    supplier: SupplierLike,
    *,
    ordinals: int = 1,
    inbox_size: int = 16,
    outbox_capacity: int = 16,
    snapshots: bool = True,
    incremental: bool = False,
    **settings: Any,
) -> Harness:
    """A started harness of one processor that a test (or a benchmark) drives step by step:
    `feed`, `feed_watermark`, `end_input`, `snapshot(restore)`, `complete`, `close`, with the
    kit's checks on every call. `settings` go to `Settings` (e.g. `cooperative_limit`)."""
    kit = Settings(
        inputs=[[] for _ in range(ordinals)],
        priorities=[0] * ordinals,
        logging=False,
        outbox_capacity=outbox_capacity,
        **settings,
    )
    name = "incremental snapshots" if incremental else "driven"
    mode = Mode(
        group=Group.RESTORE,
        inbox_size=inbox_size,
        outbox_capacity=outbox_capacity,
        snapshots=snapshots,
        incremental=incremental,
        layouts=(kit.layout,),
        name=name,
    )
    harness = new_harness(supplier, kit, mode, CallLog(logging_enabled=False, mode=name), 1)
    harness.start()
    return harness

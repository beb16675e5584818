"""Failure reports: which class of bug, in which mode, on what input, with what output.

The message is meant to be read in a pytest failure: the class first, then why the kit thinks so,
the input, per output ordinal the expected and actual items and their difference, and the last
calls the kit made (newest last).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from jetspark.testing._calls import CallRecord, short
from jetspark.testing._kinds import FailureKind, Violation
from jetspark.testing._modes import Mode

MAX_LISTED = 60


@attrs.define
class ModeResult:
    """The outcome of one mode: the output, and a violation or an output mismatch, if any."""

    mode: Mode
    outputs: list[list[Any]]
    violation: Violation | None = None
    mismatch: str | None = None
    calls: list[CallRecord] = attrs.field(factory=list)
    restores: int = 0
    #: The processor names the keys it changed (`changed_snapshot_keys`): incremental modes apply.
    saves_incrementally: bool = False

    @property
    def ok(self) -> bool:
        return self.violation is None and self.mismatch is None


def same_items_any_order(expected: Sequence[Any], actual: Sequence[Any]) -> bool:
    """True when both hold the same items, each as many times, in any order (items need not be
    hashable)."""
    if len(expected) != len(actual):
        return False
    left = list(actual)
    for item in expected:
        for index, candidate in enumerate(left):
            if candidate == item:
                del left[index]
                break
        else:
            return False
    return True


def missing_and_unexpected(expected: Sequence[Any], actual: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    unexpected = list(actual)
    missing = []
    for item in expected:
        for index, candidate in enumerate(unexpected):
            if candidate == item:
                del unexpected[index]
                break
        else:
            missing.append(item)
    return missing, unexpected


def output_diff(expected: Sequence[Any], actual: Sequence[Any], any_order: bool) -> str:
    if any_order:
        missing, unexpected = missing_and_unexpected(expected, actual)
        return f"  missing:    {short(missing)}\n  unexpected: {short(unexpected)}"
    lines = difflib.unified_diff(
        [repr(x) for x in expected], [repr(x) for x in actual], "expected", "actual", lineterm="", n=2
    )
    body = list(lines)[2:]  # drop the file header lines
    if len(body) > MAX_LISTED:
        body = [*body[:MAX_LISTED], f"... ({len(body) - MAX_LISTED} more diff lines)"]
    return "\n".join("  " + line for line in body)


def _listing(items: Sequence[Any]) -> str:
    if len(items) > MAX_LISTED:
        shown = ", ".join(repr(x) for x in items[:MAX_LISTED])
        return f"[{shown}, ... ({len(items) - MAX_LISTED} more)]  ({len(items)} items)"
    return f"[{', '.join(repr(x) for x in items)}]  ({len(items)} item{'' if len(items) == 1 else 's'})"


def describe_mismatch(
    expected: Sequence[Sequence[Any]], actual: Sequence[Sequence[Any]], any_order: Callable[[int], bool]
) -> str:
    """Expected and actual output of each ordinal that differs, with a diff."""
    parts = []
    for ordinal, (want, got) in enumerate(zip(expected, actual)):
        parts.append(f"output ordinal {ordinal}:\n  expected: {_listing(want)}\n  actual:   {_listing(got)}")
        parts.append(output_diff(want, got, any_order(ordinal)))
    return "\n".join(parts)


EXPLANATIONS = {
    FailureKind.WRONG_OUTPUT: "The output is wrong even without snapshots.",
    FailureKind.RAISED: "The processor raised an exception even without snapshots.",
    FailureKind.IGNORES_REJECTED_OFFER: (
        "When offer() returns False the processor must return and offer the same item again on the "
        "next call (AbstractProcessor: return False from try_process_item)."
    ),
    FailureKind.SNAPSHOT_CHANGES_OUTPUT: (
        "The output is right without snapshots and wrong when snapshots are taken but never restored: "
        "save_to_snapshot() or the commit methods change the processor's state or output."
    ),
    FailureKind.LOSES_STATE_ON_RESTORE: (
        "The output is right without snapshots and wrong after a restore into a new instance: "
        "save_to_snapshot() does not save all the state, or restore_from_snapshot() / "
        "finish_snapshot_restore() does not restore it."
    ),
    FailureKind.MISHANDLES_REDISTRIBUTION: (
        "The processor is right when restored into one instance, and wrong when its snapshot is "
        "restored into another number of processors: keyed entries go to the owner of the key's "
        "partition and BroadcastKey entries to every processor, so state must be saved under the key "
        "its input is partitioned by (declare it with partitioned_input()), and state shared by all "
        "under a BroadcastKey. A processor that must run as a single instance can "
        "disable_redistribution()."
    ),
    FailureKind.EMITS_FROM_COMMIT_FINISH: "snapshot_commit_finish() must not offer anything to the outbox.",
    FailureKind.NO_PROGRESS: (
        "Each call must take an item from the inbox, emit something, or return True (see "
        "disable_progress_assertion() for processors that legitimately wait)."
    ),
    FailureKind.NEVER_FINISHES: "A method loop did not end.",
    FailureKind.BLOCKS_COOPERATIVE_CALL: "A call of a cooperative processor took too long.",
    FailureKind.CONTRACT: "The processor broke a rule of the Processor contract.",
}


def format_failure(
    kind: FailureKind,
    primary: ModeResult,
    results: Sequence[ModeResult],
    inputs: Sequence[Sequence[Any]],
    priorities: Sequence[int],
    routings: Sequence[str],
    processor_name: str,
) -> str:
    failing = [r.mode.describe() for r in results if not r.ok]
    passing = [r.mode.describe() for r in results if r.ok]
    lines = [
        f'[{kind.title}] {processor_name} failed in mode "{primary.mode.describe()}"',
        EXPLANATIONS[kind],
    ]
    if primary.violation is not None:
        lines.append(primary.violation.message)
    lines.append("failing modes: " + "; ".join(failing))
    if passing:
        lines.append("passing modes: " + "; ".join(passing))
    lines.append("input:")
    if not inputs:
        lines.append("  (none: a source)")
    for ordinal, (items, priority) in enumerate(zip(inputs, priorities)):
        routing = f", {routings[ordinal]} when several processors run" if primary.mode.multi else ""
        lines.append(f"  ordinal {ordinal} (priority {priority}{routing}): {_listing(items)}")
    if primary.mismatch is not None:
        lines.append(primary.mismatch)
    else:
        lines.append("output so far:")
        lines.extend(f"  ordinal {o}: {_listing(items)}" for o, items in enumerate(primary.outputs))
    lines.append("last calls (newest last):")
    lines.extend(f"  {record}" for record in primary.calls)
    return "\n".join(lines)

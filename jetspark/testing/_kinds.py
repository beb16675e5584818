"""The classes of processor failure the kit tells apart, and the internal exception that carries one.

A `Violation` is raised inside one mode's run, at the call that broke a rule; the verifier turns
the first relevant one (or an output mismatch) into a `ProcessorVerificationError` whose message
starts with the failure class, so a user reads at once what kind of bug to look for.
"""

from __future__ import annotations

import enum


class FailureKind(enum.Enum):
    """What is wrong with a processor; the value is the phrase a failure message starts with."""

    WRONG_OUTPUT = "wrong output"
    RAISED = "raised an exception"
    IGNORES_REJECTED_OFFER = "ignores a rejected offer"
    SNAPSHOT_CHANGES_OUTPUT = "saving a snapshot changes the output"
    LOSES_STATE_ON_RESTORE = "loses state on restore"
    MISHANDLES_REDISTRIBUTION = "mishandles redistribution of keyed state"
    EMITS_FROM_COMMIT_FINISH = "emits from snapshot_commit_finish"
    NO_PROGRESS = "never makes progress"
    NEVER_FINISHES = "never finishes"
    BLOCKS_COOPERATIVE_CALL = "blocks in a cooperative call"
    CONTRACT = "breaks the processor contract"

    @property
    def title(self) -> str:
        return self.value.upper()


#: Kinds found at one call, by a rule of the contract: they are reported as they are, whatever the
#: other modes did. Output mismatches and plain exceptions are classified by comparing modes.
CALL_KINDS = frozenset(
    {
        FailureKind.IGNORES_REJECTED_OFFER,
        FailureKind.EMITS_FROM_COMMIT_FINISH,
        FailureKind.NO_PROGRESS,
        FailureKind.NEVER_FINISHES,
        FailureKind.BLOCKS_COOPERATIVE_CALL,
        FailureKind.CONTRACT,
    }
)


class Violation(Exception):
    """A rule broken during one run: `kind` and a message naming the processor and the call."""

    def __init__(self, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class ProcessorVerificationError(AssertionError):
    """A processor failed verification. The message names the failure class, the mode, the input,
    the expected and actual output (as a diff) and the last calls made."""

    def __init__(self, message: str, kind: FailureKind, mode: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.mode = mode

"""The call log: what the kit called on which processor, with what result, how long it took.

Every call is recorded; the last few are shown in a failure report, and with logging on each one
is also logged (DEBUG) to the `jetspark.testing` logger as it happens.
"""

from __future__ import annotations

import logging
import reprlib
from collections import deque
from typing import Any

import attrs

_log = logging.getLogger("jetspark.testing")
_repr = reprlib.Repr()
_repr.maxlist = 8
_repr.maxtuple = 8
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxdict = 6


def short(value: Any) -> str:
    """A bounded repr, for logs and reports."""
    return _repr.repr(value)


@attrs.define
class CallRecord:
    who: str
    method: str
    args: str
    result: str = "..."
    inbox_before: int | None = None
    inbox_after: int | None = None
    emitted: list[Any] = attrs.field(factory=list)
    seconds: float = 0.0
    is_note: bool = False

    def __str__(self) -> str:
        if self.is_note:
            return f"-- {self.method} --"
        text = f"{self.who}: {self.method}({self.args}) -> {self.result}"
        if self.inbox_before is not None and self.inbox_after is not None:
            text += f", inbox {self.inbox_before} -> {self.inbox_after}"
        if self.emitted:
            text += f", emitted {short(self.emitted)}"
        return f"{text}  [{self.seconds * 1000:.2f} ms]"


class CallLog:
    """The last `keep` calls of one run."""

    def __init__(self, keep: int = 25, logging_enabled: bool = True, mode: str = "") -> None:
        self._records: deque[CallRecord] = deque(maxlen=keep)
        self._logging = logging_enabled and _log.isEnabledFor(logging.DEBUG)
        self._warn = logging_enabled
        self.mode = mode

    def add(self, record: CallRecord) -> None:
        self._records.append(record)

    def finished(self, record: CallRecord) -> None:
        """`record` is complete (result and emitted items known): log it if logging is on."""
        if self._logging:
            _log.debug("[%s] %s", self.mode, record)

    def note(self, message: str) -> None:
        """Something the kit did between calls (a snapshot, a restore), for the log."""
        self._records.append(CallRecord("kit", message, "", is_note=True))
        if self._logging:
            _log.debug("[%s] %s", self.mode, message)

    def warn(self, message: str) -> None:
        if self._warn:
            _log.warning("[%s] %s", self.mode, message)

    def latest(self) -> CallRecord | None:
        return self._records[-1] if self._records else None

    def last(self) -> list[CallRecord]:
        return list(self._records)

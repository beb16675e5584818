"""The call log: what the kit called on which processor, with what result, how long it took.

Every call is recorded; the last few are shown in a failure report, and with logging on each one
is also logged (DEBUG) to the `jetspark.testing` logger as it happens.
"""

from __future__ import annotations

import logging
import reprlib
from collections import deque
from itertools import islice
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


#: An inbox argument keeps this many of its items for the record: `short` shows 8, then "...".
SHOWN_ITEMS = _repr.maxlist + 1


class CallArgs:
    """A call's arguments as a record shows them, formatted only when the record is shown (a
    failure report, DEBUG logging): most records are never shown, and formatting every call took
    half of the kit's time. An inbox is kept as its first items at the time of the call."""

    __slots__ = ("_args", "_note")

    def __init__(self, args: tuple[Any, ...], note: str = "") -> None:
        self._args = tuple(
            InboxView(list(islice(arg, SHOWN_ITEMS)))
            if hasattr(arg, "size") and hasattr(arg, "peek")
            else arg
            for arg in args
        )
        self._note = note

    def __str__(self) -> str:
        shown = ", ".join(str(a) if isinstance(a, InboxView) else short(a) for a in self._args)
        return shown + (f"; {self._note}" if self._note else "")


@attrs.frozen
class InboxView:
    """The first items of an inbox when a call got it (enough for `short`'s "..." after them)."""

    items: list[Any]

    def __str__(self) -> str:
        return f"inbox {short(self.items)}"


class CallResult:
    """A call's return value, formatted when shown (see `CallArgs`)."""

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = value

    def __str__(self) -> str:
        return "None" if self._value is None else short(self._value)


@attrs.define
class CallRecord:
    who: str
    method: str
    args: str | CallArgs
    result: str | CallResult = "..."
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

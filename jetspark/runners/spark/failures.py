"""Carrying a processor failure from a Spark task back to the driver.

Spark reports a Python task failure to the driver as an exception whose message holds the task's
traceback text. The task therefore raises `TaskFailure` whose message embeds, between markers, a
base64 blob with the vertex, processor index, the original exception (pickled, when it can be)
and its traceback text; the driver finds the blob in the Spark error and raises
`JobFailedError` chained to the original exception.
"""

from __future__ import annotations

import base64
import contextlib
import pickle
import re
import traceback
from typing import Any

import cloudpickle

from jetspark.core.errors import JobFailedError

_START = "JETSPARK_FAILURE["
_PATTERN = re.compile(r"JETSPARK_FAILURE\[([A-Za-z0-9+/=]+)\]")


class TaskFailure(Exception):
    """Raised inside a Spark task; its message carries the encoded failure."""


class RemoteError(Exception):
    """Stands for an exception raised in a Spark task that could not be pickled back."""


def encode_failure(error: BaseException, vertex: str | None, processor_index: int | None) -> TaskFailure:
    """The exception a task raises for `error` (a JobFailedError chained to the cause, or the cause)."""
    cause = error.__cause__ if isinstance(error, JobFailedError) and error.__cause__ is not None else error
    if isinstance(error, JobFailedError):
        vertex = error.vertex if error.vertex is not None else vertex
        processor_index = error.processor_index if error.processor_index is not None else processor_index
    text = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))
    try:
        dumped: bytes = cloudpickle.dumps(cause)
        pickle.loads(dumped)
        blob: bytes | None = dumped
    except Exception:
        blob = None
    payload = {
        "message": str(error),
        "vertex": vertex,
        "processor_index": processor_index,
        "cause": blob,
        "cause_type": type(cause).__name__,
        "cause_text": str(cause),
        "traceback": text,
    }
    encoded = base64.b64encode(pickle.dumps(payload)).decode("ascii")
    return TaskFailure(f"{error}\n{_START}{encoded}]")


def decode_failure(spark_error: BaseException) -> JobFailedError | None:
    """The JobFailedError a Spark error carries, chained to the original exception; None if none."""
    match = _PATTERN.search(_text_of(spark_error))
    if match is None:
        return None
    payload: dict[str, Any] = pickle.loads(base64.b64decode(match.group(1)))
    cause: BaseException | None = None
    if payload["cause"] is not None:
        try:
            cause = pickle.loads(payload["cause"])
        except Exception:
            cause = None
    if cause is None:
        cause = RemoteError(f"{payload['cause_type']}: {payload['cause_text']}")
    remote_traceback = payload["traceback"]
    note = f"traceback in the Spark task:\n{remote_traceback}"
    if hasattr(cause, "add_note"):
        cause.add_note(note)
    error = JobFailedError(
        payload["message"], vertex=payload["vertex"], processor_index=payload["processor_index"]
    )
    error.remote_traceback = remote_traceback  # type: ignore[attr-defined]
    error.__cause__ = cause
    return error


def _text_of(error: BaseException) -> str:
    """The messages of `error` and everything it chains to (Spark nests the task's error)."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(str(current))
        desc = getattr(current, "desc", None)
        if isinstance(desc, str):
            parts.append(desc)
        java = getattr(current, "java_exception", None)
        if java is not None:
            with contextlib.suppress(Exception):
                parts.append(str(java.toString()))
        current = current.__cause__ or current.__context__
    return "\n".join(parts)

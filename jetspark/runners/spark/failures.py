"""Carrying a processor failure from a Spark task back to the driver.

Spark reports a Python task failure to the driver as an exception whose message holds the task's
traceback text. The task therefore raises `TaskFailure` (chained to the processor's exception, so
that the traceback Spark shows is the processor's, readable) whose message ends with one short
line between markers: a compressed record of the vertex, processor index and the original
exception (pickled, when it can be, and small enough). The driver finds the record in the Spark
error, takes the traceback from the text around it, and raises `JobFailedError` chained to the
original exception.

The traceback is not in the record: Spark logs the task's failure message (at ERROR on the
executor, at WARN on the driver when the task is lost), and under a session jetspark did not
configure (plain `spark-submit`, a notebook) that message should be the traceback, not a
multi-KB blob that repeats it.
"""

from __future__ import annotations

import base64
import contextlib
import pickle
import re
import traceback
import zlib
from typing import Any

import cloudpickle

from jetspark.core.errors import JobFailedError

_START = "JETSPARK_FAILURE["
_PATTERN = re.compile(r"JETSPARK_FAILURE\[([A-Za-z0-9+/=]+)\]")
#: A pickled exception larger than this (bytes) is not carried; the driver gets its type and text.
MAX_PICKLED_CAUSE = 4096
_TRACEBACK = "Traceback (most recent call last):"


class TaskFailure(Exception):
    """Raised inside a Spark task; its message carries the encoded failure."""


class RemoteError(Exception):
    """Stands for an exception raised in a Spark task that could not be pickled back."""


def encode_failure(error: BaseException, vertex: str | None, processor_index: int | None) -> TaskFailure:
    """The exception a task raises for `error` (a JobFailedError chained to the cause, or the
    cause); raise it `from error`, so that the traceback Spark reports shows the cause's."""
    cause = error.__cause__ if isinstance(error, JobFailedError) and error.__cause__ is not None else error
    if isinstance(error, JobFailedError):
        vertex = error.vertex if error.vertex is not None else vertex
        processor_index = error.processor_index if error.processor_index is not None else processor_index
    try:
        dumped: bytes = cloudpickle.dumps(cause)
        pickle.loads(dumped)
        blob: bytes | None = dumped if len(dumped) <= MAX_PICKLED_CAUSE else None
    except Exception:
        blob = None
    payload = {
        "message": str(error),
        "vertex": vertex,
        "processor_index": processor_index,
        "cause": blob,
        "cause_type": type(cause).__name__,
        "cause_text": str(cause),
    }
    encoded = base64.b64encode(zlib.compress(pickle.dumps(payload), 9)).decode("ascii")
    failure = TaskFailure(f"{error}\n{_START}{encoded}]")
    failure.local_traceback = "".join(  # type: ignore[attr-defined]
        traceback.format_exception(type(cause), cause, cause.__traceback__)
    )
    return failure


def decode_failure(spark_error: BaseException) -> JobFailedError | None:
    """The JobFailedError a Spark error carries, chained to the original exception; None if none."""
    text = _text_of(spark_error)
    match = _PATTERN.search(text)
    if match is None:
        return None
    payload: dict[str, Any] = pickle.loads(zlib.decompress(base64.b64decode(match.group(1))))
    cause: BaseException | None = None
    if payload["cause"] is not None:
        try:
            cause = pickle.loads(payload["cause"])
        except Exception:
            cause = None
    if cause is None:
        cause = RemoteError(f"{payload['cause_type']}: {payload['cause_text']}")
    remote_traceback = _traceback_before(text, match.start()) or getattr(spark_error, "local_traceback", "")
    if remote_traceback:
        note = f"traceback in the Spark task:\n{remote_traceback}"
        if hasattr(cause, "add_note"):
            cause.add_note(note)
    error = JobFailedError(
        payload["message"], vertex=payload["vertex"], processor_index=payload["processor_index"]
    )
    error.remote_traceback = remote_traceback  # type: ignore[attr-defined]
    error.__cause__ = cause
    return error


def _traceback_before(text: str, end: int) -> str:
    """The Python traceback that Spark's message holds before the record at `end`: from its first
    `Traceback (most recent call last):` line (the processor's own) to the record."""
    start = text.rfind(_TRACEBACK, 0, end)
    if start == -1:
        return ""
    first = start
    while (earlier := text.rfind(_TRACEBACK, 0, first)) != -1 and "\nJETSPARK_FAILURE[" not in text[
        earlier:first
    ]:
        first = earlier
    return text[first:end].rstrip() + "\n"


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


_LOST = re.compile(r"Lost task (\d+)\.(\d+) in stage (\d+)\.(\d+) \(TID \d+\) \(([^)]*)\): ([^\n]*)")


#: What the JVM's reader or writer of a Python worker meets when the worker (or pyspark.daemon)
#: was killed: the stream closed under it, or a write into the dead end of the pipe.
_DEAD_WORKER_PIPE = ("java.io.IOException: Stream closed", "java.io.IOException: Broken pipe")


def describe_failure(error: BaseException) -> str:
    """One line that says why a Spark job failed: the task's exception type and message (or that
    its Python worker died, or its executor was lost), with the Spark stage, task (partition) and
    attempt when Spark names them. For logs and the job's abort causes: Spark's own
    message starts with `An error occurred while calling ...` and says nothing."""
    text = _text_of(error)
    decoded = decode_failure(error)
    if decoded is not None:
        cause = decoded.__cause__
        what = f"{type(cause).__name__}: {cause}" if cause is not None else str(decoded)
        where = [f"vertex {decoded.vertex!r}"] if decoded.vertex is not None else []
        if decoded.processor_index is not None:
            where.append(f"processor {decoded.processor_index}")
        reason = what.splitlines()[0] if what else type(cause).__name__
        return _with_task(f"{reason}{' in ' + ', '.join(where) if where else ''}", text)
    lost = _LOST.search(text)
    if lost is not None:
        reason = lost.group(6)
        if "Python worker exited unexpectedly" in reason:
            reason = "Python worker died (exited unexpectedly: killed, or os._exit)"
        elif reason.strip() in _DEAD_WORKER_PIPE:  # the JVM's side of a dead worker
            reason = f"Python worker's stream closed (the worker or pyspark.daemon died: {reason.strip().removeprefix('java.io.IOException: ')})"
        elif "ExecutorLostFailure" in reason:
            reason = f"executor lost ({reason.split('ExecutorLostFailure', 1)[1].strip(' :()')})"
        else:
            reason = reason.removeprefix("org.apache.spark.api.python.PythonException: ").strip()
            tail = _last_exception_line(text[lost.end() :])
            if reason.startswith("An exception was thrown from the Python worker") and tail:
                reason = tail
        return _with_task(reason, text)
    tail = _last_exception_line(text)
    if tail:
        return tail
    spark = _SPARK_EXCEPTION.search(text)  # a task failure Spark 4 passes on unwrapped (no "Lost task")
    if spark is not None:
        reason = spark.group(1).strip()
        if "pyspark.daemon" in reason:
            return f"Python worker could not start (pyspark.daemon died: {reason})"
        return f"SparkException: {reason}"
    first = str(error).strip().splitlines()
    return f"{type(error).__name__}: {first[0] if first else ''}".rstrip(": ")


#: The first line of a Java `SparkException` in an error's text.
_SPARK_EXCEPTION = re.compile(r"org\.apache\.spark\.SparkException: ([^\n]+)")


def _with_task(reason: str, text: str) -> str:
    lost = _LOST.search(text)
    if lost is None:
        return reason
    task, attempt, stage = lost.group(1), lost.group(2), lost.group(3)
    return f"{reason} (Spark stage {stage}, task {task}, attempt {attempt}; {lost.group(5)})"


def _last_exception_line(text: str) -> str:
    """The `Type: message` line that ends the first Python traceback in `text`, if any."""
    start = text.find(_TRACEBACK)
    if start == -1:
        return ""
    lines = text[start:].splitlines()
    for index, line in enumerate(lines[1:], 1):
        if not line.startswith((" ", "\t")) and index > 1:
            return line.strip()
    return ""

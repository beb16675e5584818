"""How `jetspark run` and `jetspark dag` report an error that ends the job file: one line with
the error (a Py4J error reduced to its Java exception), and the user's own frame where it was
raised, instead of a traceback through runpy, jetspark, pyspark and py4j. `--verbose` prints the
full traceback as Python would. A stuck job's `QuiescenceError` keeps its dump (each processor's
state, up to `_MAX_DUMP_LINES` lines): naming the stuck processor is the point of that error."""

from __future__ import annotations

import os
import re
import sys
import sysconfig
import traceback
from pathlib import Path
from types import TracebackType

#: Where code that is not the user's lives: jetspark, the standard library, installed packages.
_NOT_USERS = tuple(
    str(Path(p).resolve()) + os.sep
    for p in {
        str(Path(__file__).resolve().parents[1]),  # the jetspark package
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
    }
)
_MAX_LINE = 400
#: Lines of a `QuiescenceError`'s dump printed without --verbose.
_MAX_DUMP_LINES = 40


def describe(error: BaseException) -> str:
    """`Type: message` of `error` on one line, a Py4J Java error reduced to its Java exception."""
    message = _java_cause(error) if _is_py4j(error) else str(error)
    first = message.strip().splitlines()[0] if message.strip() else ""
    lines = len(message.strip().splitlines())
    text = f"{type(error).__name__}: {first}" if first else type(error).__name__
    if lines > 1 and not _is_py4j(error):
        text += " ..."
    return text if len(text) <= _MAX_LINE else text[: _MAX_LINE - 3] + "..."


def _dump_of_a_stuck_job(error: BaseException) -> list[str]:
    """The lines after the first of a `QuiescenceError` in `error`'s chain: which processor is
    stuck, with its state and pending counts (at most `_MAX_DUMP_LINES`)."""
    from jetspark.core.errors import QuiescenceError

    stuck = next((e for e in _chain(error) if isinstance(e, QuiescenceError)), None)
    if stuck is None:
        return []
    dump = [f"  {line.strip()}" for line in str(stuck).strip().splitlines()[1:] if line.strip()]
    if len(dump) > _MAX_DUMP_LINES:
        dump = [*dump[:_MAX_DUMP_LINES], f"  ... {len(dump) - _MAX_DUMP_LINES} more lines"]
    return dump


def _is_py4j(error: BaseException) -> bool:
    return type(error).__module__.startswith("py4j")


def _java_cause(error: BaseException) -> str:
    """The innermost Java exception of a Py4J error: its last `Caused by:` line, else the first
    line naming a Java exception (Py4J's message holds the whole Java stack trace)."""
    text = str(error)
    lines = [line.strip() for line in text.splitlines()]
    caused = [line[len("Caused by: ") :] for line in lines if line.startswith("Caused by: ")]
    if caused:
        return caused[-1]
    named = [line.lstrip(": ") for line in lines if line and not line.startswith("at ")]
    return next(
        (line for line in named if "Exception" in line or "Error" in line), named[0] if named else text
    )


def _chain(error: BaseException) -> list[BaseException]:
    """`error` and the errors it was raised from or during, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return chain


def users_frame(error: BaseException, job_file: str | None = None) -> traceback.FrameSummary | None:
    """The innermost frame of user code (neither jetspark, the standard library nor an installed
    package) in `error`'s traceback or those of its causes; the job file's frames count too."""
    found: traceback.FrameSummary | None = None
    for link in reversed(_chain(error)):  # the innermost cause first: its frames are the deepest
        tb: TracebackType | None = link.__traceback__
        for frame in traceback.extract_tb(tb):
            if _is_users(frame.filename, job_file):
                found = frame
        if found is not None:
            return found
    return None


def _is_users(filename: str, job_file: str | None) -> bool:
    if filename.startswith("<"):
        return False
    resolved = str(Path(filename).resolve())
    if job_file is not None and resolved == str(Path(job_file).resolve()):
        return True
    return not resolved.startswith(_NOT_USERS)


_REMOTE_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+)$')


def remote_users_frame(error: BaseException, job_file: str | None = None) -> str | None:
    """Where the user's code raised inside a Spark task: the innermost user frame of the task's
    traceback that a `JobFailedError` carries (`remote_traceback`), as `file:line in name: code`."""
    for link in _chain(error):
        text = getattr(link, "remote_traceback", None)
        if not isinstance(text, str):
            continue
        lines = text.splitlines()
        found: str | None = None
        for index, line in enumerate(lines):
            match = _REMOTE_FRAME.match(line)
            if match is None or not _is_users(match["file"], job_file):
                continue
            following = lines[index + 1].strip() if index + 1 < len(lines) else ""
            code = "" if not following or _REMOTE_FRAME.match(lines[index + 1]) else f": {following}"
            found = f"{match['file']}:{match['line']} in {match['name']}{code}"
        if found is not None:
            return found
    return None


def report(error: BaseException, job_file: str | None = None, verbose: bool = False) -> None:
    """Print `error` to standard error: short by default (see the module docstring)."""
    if verbose:
        traceback.print_exception(error)
        return
    lines = [f"jetspark: {describe(error)}"]
    lines += _dump_of_a_stuck_job(error)
    causes = [c for c in _chain(error)[1:] if describe(c) and describe(c).split(": ", 1)[-1] not in lines[0]]
    if causes:
        lines.append(f"  caused by {describe(causes[-1])}")
    remote = remote_users_frame(error, job_file)
    if remote is not None:
        lines.append(f"  in a Spark task, at {remote}")
    frame = users_frame(error, job_file)
    if frame is not None:
        code = f": {frame.line.strip()}" if frame.line else ""
        lines.append(f"  at {frame.filename}:{frame.lineno} in {frame.name}{code}")
    lines.append("  (--verbose shows the full traceback)")
    print("\n".join(lines), file=sys.stderr)

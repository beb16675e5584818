"""Attempt-safe file output: each attempt writes under a name of its own, the coordinator publishes one.

Hadoop's file output committer, reduced to what jetspark's `files` sinks need:

- at submit, `OutputCommitter.prepare()` refuses a directory that holds output already (unless the
  sink was made with `overwrite=True`) and creates the job's staging area
  `<directory>/_temporary/<job id>/`;
- a task attempt (`AttemptStaging`) writes `<name>` as `_temporary/<job id>/attempt-<id>/<name>`,
  where `<id>` is unique per attempt (Spark's `taskAttemptId`; `attemptNumber` repeats after a
  stage re-attempt), and reports the files it wrote with its result;
- after the job succeeded, `commit(files)` removes the old output (with `overwrite`), renames
  exactly the reported files into place, deletes the staging area (every other attempt's
  leftovers with it) and writes an empty `_SUCCESS` last;
- after a failure or cancel, `abort()` deletes the staging area, and again a few seconds later,
  after Spark has killed the job's Python workers: a late writer finds its directory gone, and
  what it still writes into a file it had open goes to a deleted file. No `_SUCCESS`, no output.

The staging area is created by the coordinator only; attempts create just their own directory
inside it (`os.mkdir`, not `makedirs`), so a worker that outlives its job cannot bring it back.
The directory must be one file system shared by the coordinator and every executor.
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

import attrs

from jetspark.core.errors import DagValidationError
from jetspark.core.suppliers import VertexCapability
from jetspark.processors.sinks import FilesSink

if TYPE_CHECKING:  # tasks import this module (staging); planning stays on the driver
    from jetspark.planning.pipeline import PreparedDag

_log = logging.getLogger("jetspark.output")
STAGING_DIR = "_temporary"
SUCCESS_MARKER = "_SUCCESS"
#: What `files` sinks write; with `overwrite` only these are replaced, anything else is refused.
OUTPUT_PATTERNS = ("*-[0-9][0-9][0-9][0-9][0-9].txt", SUCCESS_MARKER)
#: Seconds after an abort when the staging area is deleted once more (Spark kills a cancelled
#: task's Python worker about 2-3 s after the driver learns of the cancel).
LATE_SWEEP_SECONDS = 6.0


class AttemptStaging:
    """The staging of one task attempt (see the module docstring); `files` lists what it wrote."""

    def __init__(self, job_id: str, attempt: int) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self.files: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def staged_path(self, directory: str, name: str) -> str:
        job_area = os.path.join(directory, STAGING_DIR, self.job_id)
        own = os.path.join(job_area, f"attempt-{self.attempt}")
        with self._lock:
            if not os.path.isdir(own):
                try:
                    os.mkdir(own)
                except FileExistsError:
                    pass
                except FileNotFoundError as error:
                    raise FileNotFoundError(
                        f"the staging area {job_area} of job {self.job_id} is gone: the job was cancelled "
                        "or has ended, so nothing more is written"
                    ) from error
            staged = os.path.join(own, name)
            self.files.append((staged, os.path.join(directory, name)))
        return staged


@attrs.frozen
class FileOutput:
    vertex: str
    directory: str
    overwrite: bool


class OutputCommitter:
    """The coordinator's side for every `files` sink of one job (see the module docstring)."""

    def __init__(self, job_id: str, outputs: Iterable[FileOutput]) -> None:
        self.job_id = job_id
        self.outputs = list(outputs)

    @classmethod
    def of(cls, job_id: str, prepared: PreparedDag) -> OutputCommitter:
        """The committer of the planned DAG's `files` sinks (`VertexCapability.WRITES_FILES`)."""
        outputs = []
        for name in prepared.with_capability(VertexCapability.WRITES_FILES):
            sink = cast(FilesSink, prepared.meta_supplier(name))
            outputs.append(FileOutput(name, os.path.abspath(sink.directory), sink.overwrite))
        return cls(job_id, outputs)

    def __bool__(self) -> bool:
        return bool(self.outputs)

    def prepare(self, staged: bool = True, resuming: bool = False) -> None:
        """At submit: refuse a directory that holds output or is shared by two sinks; create the
        job's staging area in each. Raises DagValidationError naming the vertex and directory.

        With `staged=False` (sinks that write in place) nothing is created, and the old output of
        a sink with `overwrite` is deleted now: it cannot wait for a commit. With `resuming` (a
        job resumed from its own committed snapshot) the output there is the job's own: kept."""
        seen: dict[str, str] = {}
        for output in self.outputs:
            if output.directory in seen:
                raise DagValidationError(
                    f"vertices {seen[output.directory]!r} and {output.vertex!r} both write files to "
                    f"{output.directory}; give each files() sink a directory of its own"
                )
            seen[output.directory] = output.vertex
            existing = _entries(output.directory)
            if existing and not resuming:
                foreign = [e for e in existing if not _is_output(e)]
                if foreign or not output.overwrite:
                    shown = ", ".join(sorted(foreign or existing)[:5])
                    advice = (
                        "files() with overwrite=True replaces earlier output, but never deletes other files"
                        if foreign
                        else "choose an empty directory, or pass overwrite=True to files() to replace it when the job succeeds"
                    )
                    raise DagValidationError(
                        f"vertex {output.vertex!r}: directory {output.directory} already holds {shown}"
                        f"{' ...' if len(foreign or existing) > 5 else ''}; {advice}"
                    )
            if staged:
                os.makedirs(self._job_area(output), exist_ok=True)
            elif output.overwrite and not resuming:
                self._remove_output(output)

    def commit(self, files: Iterable[tuple[str, str]]) -> None:
        """After success: publish exactly `files` (staged, final), then `_SUCCESS` per directory."""
        for output in self.outputs:
            if output.overwrite:
                self._remove_output(output)
        for staged, final in files:
            os.replace(staged, final)
        for output in self.outputs:
            self._remove_job_area(output)
        self.mark_success()

    def mark_success(self) -> None:
        """Write the empty `_SUCCESS` of every directory (sinks that wrote in place call this alone)."""
        for output in self.outputs:
            os.makedirs(output.directory, exist_ok=True)
            with open(os.path.join(output.directory, SUCCESS_MARKER), "wb"):
                pass

    def _remove_output(self, output: FileOutput) -> None:
        for entry in _entries(output.directory):
            if _is_output(entry):
                os.remove(os.path.join(output.directory, entry))

    def abort(self, late_sweep: float = LATE_SWEEP_SECONDS) -> None:
        """After a failure or cancel: delete the staging areas now and once more `late_sweep`
        seconds later (in a daemon thread), when the job's workers are gone."""
        for output in self.outputs:
            self._remove_job_area(output)
        if self.outputs and late_sweep > 0:
            timer = threading.Timer(late_sweep, self._sweep)
            timer.daemon = True
            timer.start()

    def _sweep(self) -> None:
        for output in self.outputs:
            self._remove_job_area(output)

    def _job_area(self, output: FileOutput) -> str:
        return os.path.join(output.directory, STAGING_DIR, self.job_id)

    def _remove_job_area(self, output: FileOutput) -> None:
        """Delete the job's staging area (retrying while a late writer adds files), and
        `_temporary` itself when no other job uses it."""
        area = self._job_area(output)
        for attempt in range(20):
            try:
                shutil.rmtree(area)
                break
            except FileNotFoundError:
                break
            except OSError:
                if attempt == 19:
                    _log.warning("could not delete the staging area %s", area, exc_info=True)
                time.sleep(0.05)
        with contextlib.suppress(OSError):  # other jobs' staging areas, or gone already
            os.rmdir(os.path.join(output.directory, STAGING_DIR))


def _entries(directory: str) -> list[str]:
    try:
        return [e for e in os.listdir(directory) if e != STAGING_DIR]
    except FileNotFoundError:
        return []


def _is_output(entry: str) -> bool:
    return any(fnmatch.fnmatchcase(entry, pattern) for pattern in OUTPUT_PATTERNS)

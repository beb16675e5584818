"""Jet's `WriteFilePTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.connector`), ported: the
file sink, on the local runner with one member (Jet's one-member cluster).

Jet's `Sinks.files(dir)` (`writeFileP`) is `processors.files(dir)`; Jet's exactly-once file sink
(`filesBuilder(dir).exactlyOnce(true)`) is `processors.transactional_files(dir)`; Jet's
`Sinks.json(dir)` is `processors.write_jsonl(dir)`. Jet's `TestSources.items` is `from_iterable` on
one processor; Jet's pipeline `setLocalParallelism(n)` on the sink is the sink vertex's local
parallelism. Jet's file `0` (the processor's index) is jetspark's `sink-00000.txt` (see
`files`); Jet's `checkFileContents` reads the published files of the sink (it leaves out
`_SUCCESS`, and counts `_temporary` or a name starting with a dot as a temporary file). Jet's
`SlowSourceP` emits an item per permit of a semaphore; here the test raises the number of items
the source may have emitted (`release`, Jet's `semaphore.release`) and waits on a condition
until it has, and Jet's `waitForNextSnapshot` waits for the source's `snapshot_commit_finish`. Each test is named after the Jet case it ports.

Differences, all deliberate and documented (docs/files.md, `processors.files`):
- `when_localParallelismMoreThan1_then_multipleFiles`: a job without a processing guarantee
  commits its files as Hadoop's committer does, followed by an empty `_SUCCESS`: the directory
  holds the two files and `_SUCCESS`.
- `when_append_then_previousContentsOfFileIsKept`: Jet appends to a file already in the
  directory; jetspark refuses a directory that already holds output when the job is submitted
  (`DagValidationError`), and with `overwrite=True` replaces it when the job succeeds
  (`..._overwrite`).
- `when_slowSource_then_fileFlushedAfterEachItem`: Jet's case asks `writeFileP` to flush after
  every item (`flushEarly`, an option jetspark's `files` has not). Without a processing guarantee
  jetspark's files appear only when the job succeeds (staged, then renamed into place), which the
  port checks; with one they are written in place and a snapshot flushes them, which
  `..._flushedAtEachSnapshot` checks with a snapshot taken after each item (`export_snapshot`).
- `testCharset`: `files` writes UTF-8 only (no charset option): the port writes Jet's text in
  UTF-8.
- `stressTest_*`: Jet's `job.restart(graceful)` is `suspend()` and `resume()` (graceful) or a
  `RestartableError` raised by the source (forceful: a restart from the last committed
  snapshot). Jet's source is a `SourceBuilder` stream that the test cancels once the files hold
  everything; here the source completes after its items, and it emits them as the test releases
  them, so that each restart falls at a known point. With the plain `files` sink a forceful
  restart writes again what was written after the last snapshot (at-least-once, documented in
  `files`), as Jet's sink with `exactlyOnce(false)`.

Skipped, with no counterpart: `test_rollByDate`, `test_rollByFileSize` (`files` does not roll
files by date or size; the transactional sinks start a new file per transaction).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    DagValidationError,
    Edge,
    JobConfig,
    ProcessingGuarantee,
    RestartableError,
)
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from jetspark.testing import run_dag

TIMEOUT = 60
HOUR_MILLIS = 3_600_000


class Record:
    """What the test shares with the processors (module state: a restored job makes new ones)."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        #: How far the source may go (Jet's semaphore permits, counted from the first item).
        self.allowed = 0
        #: The source's position: how many items it has emitted (a restored one: from its snapshot).
        self.number = 0
        #: The source's position in the last snapshot that was committed.
        self.committed = -1
        self.saved = -1
        self.fail_once = False


record = Record()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global record
    record = Record()


def wait_until(condition: Any, what: str) -> None:
    with record.changed:
        assert record.changed.wait_for(condition, TIMEOUT), f"timed out waiting for {what}"


class SlowSourceP(AbstractProcessor):
    """Jet's `SlowSourceP`: emits `0, 1, ...` up to `limit`, as far as the test allows."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.number = 0

    def is_cooperative(self) -> bool:
        return False

    def complete(self) -> bool:
        if record.fail_once:
            with record.changed:
                record.fail_once = False
                record.changed.notify_all()
            raise RestartableError("forceful restart, as Jet's job.restart(false)")
        while self.number < self.limit:
            if self.number >= record.allowed:
                return False
            assert self.try_emit(self.number)
            self.number += 1
            with record.changed:
                record.number = self.number
                record.changed.notify_all()
        return True

    def save_to_snapshot(self) -> bool:
        if not self.try_emit_to_snapshot("key", self.number):
            return False
        record.saved = self.number
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success:
            with record.changed:
                record.committed = record.saved
                record.changed.notify_all()
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        assert key == "key"
        self.number = value


def release(count: int) -> None:
    """Jet's `semaphore.release(count)`, then wait until the source has emitted those items."""
    with record.changed:
        record.allowed += count
        target = record.allowed
    wait_until(lambda: record.number >= target, f"the source to emit up to {target}")


def pipeline(directory: Path, items: Any, sink: Any = None, sink_parallelism: int = 1) -> DAG:
    """Jet's `buildPipeline`: `TestSources.items(...)` into the file sink."""
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items), 1)
    sink_vertex = dag.new_vertex(
        "sink", sink if sink is not None else P.files(str(directory)), sink_parallelism
    )
    dag.edge(Edge.between(source, sink_vertex))
    return dag


def slow_dag(directory: Path, limit: int, sink: Any = None, sink_parallelism: int = 1) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", lambda: SlowSourceP(limit), 1)
    sink_vertex = dag.new_vertex(
        "sink", sink if sink is not None else P.files(str(directory)), sink_parallelism
    )
    dag.edge(Edge.between(source, sink_vertex))
    return dag


def exactly_once(interval_millis: int = HOUR_MILLIS) -> JobConfig:
    return JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=interval_millis
    )


def is_temporary(name: str) -> bool:
    return name.startswith(".") or name == "_temporary"


def published(directory: Path) -> list[Path]:
    """The files a sink published: sorted by name, without `_SUCCESS` and temporary files."""
    return sorted(path for path in directory.iterdir() if not path.name.startswith((".", "_")))


def check_file_contents(
    directory: Path,
    num_from: int,
    num_to: int,
    exactly_once: bool = True,
    ignore_temp_files: bool = False,
    assert_sorted: bool = True,
) -> None:
    """Jet's `checkFileContents`: the published files hold `num_from..num_to-1`, each once and
    in this order (`assert_sorted`), or each at least once (not `exactly_once`)."""
    if not ignore_temp_files:
        temporary = [path.name for path in directory.iterdir() if is_temporary(path.name)]
        assert not temporary, f"temp files found: {temporary}"
    actual = [int(line) for path in published(directory) for line in path.read_text("utf-8").splitlines()]
    if not assert_sorted:
        actual.sort()
    if exactly_once:
        assert actual == list(range(num_from, num_to))
    else:
        missing = set(range(num_from, num_to)) - set(actual)
        assert not missing, f"some items are missing: {sorted(missing)}"


# ---- the sink, without a processing guarantee ---------------------------------------------------


def test_WriteFilePTest__when_localParallelismMoreThan1_then_multipleFiles(tmp_path: Path) -> None:
    """Two processors write two files; jetspark adds `_SUCCESS` (see the module docstring)."""
    run_dag(pipeline(tmp_path, [0, 1, 2], sink_parallelism=2))
    assert len(published(tmp_path)) == 2
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "_SUCCESS",
        "sink-00000.txt",
        "sink-00001.txt",
    ]
    check_file_contents(tmp_path, 0, 3, assert_sorted=False)


def test_WriteFilePTest__smokeTest_smallFile(tmp_path: Path) -> None:
    run_dag(pipeline(tmp_path, range(10)))
    check_file_contents(tmp_path, 0, 10)


def test_WriteFilePTest__smokeTest_bigFile(tmp_path: Path) -> None:
    run_dag(pipeline(tmp_path, range(100_000)))
    check_file_contents(tmp_path, 0, 100_000)


def test_WriteFilePTest__when_append_then_previousContentsOfFileIsKept(tmp_path: Path) -> None:
    """jetspark refuses a directory that holds output already (see the module docstring)."""
    (tmp_path / "sink-00000.txt").write_text("0\n")
    with pytest.raises(DagValidationError, match=r"already holds sink-00000\.txt"):
        LocalRunner().submit(pipeline(tmp_path, range(1, 10)))
    assert (tmp_path / "sink-00000.txt").read_text() == "0\n"


def test_WriteFilePTest__when_append_then_previousContentsOfFileIsKept__overwrite(tmp_path: Path) -> None:
    """With `overwrite=True` the earlier output is replaced when the job succeeds."""
    (tmp_path / "sink-00000.txt").write_text("0\n")
    run_dag(pipeline(tmp_path, range(1, 10), P.files(str(tmp_path), overwrite=True)))
    check_file_contents(tmp_path, 1, 10)


def test_WriteFilePTest__when_slowSource_then_fileFlushedAfterEachItem(tmp_path: Path) -> None:
    """Without a guarantee the file appears, whole, when the job succeeds (see the module
    docstring): while the source waits, nothing is published."""
    num_items = 10
    job = LocalRunner().submit(slow_dag(tmp_path, num_items))
    for _ in range(num_items - 1):
        release(1)
        assert published(tmp_path) == []
    release(1)
    job.join(TIMEOUT)
    check_file_contents(tmp_path, 0, num_items)


def test_WriteFilePTest__when_slowSource_then_fileFlushedAfterEachItem__flushedAtEachSnapshot(
    tmp_path: Path,
) -> None:
    """With a guarantee the file is written in place, and a snapshot taken after an item flushes
    it: the file holds every item emitted before the snapshot."""
    num_items = 10
    job = LocalRunner().submit(slow_dag(tmp_path, num_items), exactly_once())
    for i in range(num_items - 1):
        release(1)
        job.export_snapshot(f"after-{i}", TIMEOUT)
        check_file_contents(tmp_path, 0, i + 1)
    release(1)  # the last one: the source completes, and so does the job
    job.join(TIMEOUT)
    check_file_contents(tmp_path, 0, num_items)


def test_WriteFilePTest__testCharset(tmp_path: Path) -> None:
    """Jet writes the text in ISO-8859-2; jetspark's `files` writes UTF-8 only."""
    text = "ľščťž"
    run_dag(pipeline(tmp_path, [text]))
    assert (tmp_path / "sink-00000.txt").read_bytes() == (text + "\n").encode("utf-8")


def test_WriteFilePTest__test_createDirectories(tmp_path: Path) -> None:
    my_dir = tmp_path / "subdir1" / "subdir2"
    run_dag(pipeline(my_dir, range(10)))
    assert (tmp_path / "subdir1").is_dir()
    assert (tmp_path / "subdir1" / "subdir2").is_dir()
    check_file_contents(my_dir, 0, 10)


def test_WriteFilePTest__when_toStringF_then_used(tmp_path: Path) -> None:
    run_dag(pipeline(tmp_path, range(1, 11), P.files(str(tmp_path), lambda value: str(value - 1))))
    check_file_contents(tmp_path, 0, 10)


def test_WriteFilePTest__test_JsonFile(tmp_path: Path) -> None:
    test_person = {"name": "foo", "age": 5, "status": True}
    run_dag(pipeline(tmp_path, [test_person], P.write_jsonl(str(tmp_path))))
    lines = [line for path in published(tmp_path) for line in path.read_text("utf-8").splitlines()]
    assert len(lines) == 1
    assert json.loads(lines[0]) == test_person


# ---- with a processing guarantee ----------------------------------------------------------------


def test_WriteFilePTest__stressTest_noSnapshot(tmp_path: Path) -> None:
    run_dag(pipeline(tmp_path, range(10)), exactly_once())
    check_file_contents(tmp_path, 0, 10)


def test_WriteFilePTest__stressTest_snapshots_noRestarts(tmp_path: Path) -> None:
    """Jet's `waitForNextSnapshot` is the source's `snapshot_commit_finish` of a snapshot taken
    after the items so far."""
    num_items = 5
    job = LocalRunner().submit(slow_dag(tmp_path, num_items), exactly_once(interval_millis=20))
    assert job.status is JobStatus.RUNNING
    wait_until(lambda: record.committed >= 0, "the first snapshot")
    for i in range(num_items):
        wait_until(lambda i=i: record.committed >= i, f"a snapshot after item {i - 1}")
        release(1)
    job.join(TIMEOUT)
    check_file_contents(tmp_path, 0, num_items)


NUM_STRESS_ITEMS = 60
RESTARTS = 3


def run_stress(tmp_path: Path, graceful: bool, exactly: bool) -> None:
    """Jet's `stressTest(graceful, exactlyOnce)`: a source that saves its position, into a file sink
    of two processors, restarted while it runs (see the module docstring)."""
    sink = P.transactional_files(str(tmp_path)) if exactly else P.files(str(tmp_path))
    job: LocalJob = LocalRunner().submit(
        slow_dag(tmp_path, NUM_STRESS_ITEMS, sink, sink_parallelism=2), exactly_once(interval_millis=20)
    )
    step = 10
    for _ in range(RESTARTS):  # at most 15 items each: the source is still running
        release(step)
        if graceful:
            job.suspend(TIMEOUT)
            job = job.resume()
        else:
            position = record.number
            wait_until(lambda p=position: record.committed >= p, "a snapshot of the items so far")
            release(step // 2)  # written after that snapshot, unless another one follows
            with record.changed:
                record.fail_once = True
            wait_until(lambda: not record.fail_once, "the source to fail")
    release(NUM_STRESS_ITEMS - record.allowed)
    job.join(TIMEOUT)
    assert job.status is JobStatus.COMPLETED
    check_file_contents(tmp_path, 0, NUM_STRESS_ITEMS, exactly_once=exactly, assert_sorted=False)


def test_WriteFilePTest__stressTest_exactlyOnce_graceful(tmp_path: Path) -> None:
    run_stress(tmp_path, graceful=True, exactly=True)


def test_WriteFilePTest__stressTest_exactlyOnce_forceful(tmp_path: Path) -> None:
    run_stress(tmp_path, graceful=False, exactly=True)


def test_WriteFilePTest__stressTest_atLeastOnce_forceful(tmp_path: Path) -> None:
    run_stress(tmp_path, graceful=False, exactly=False)

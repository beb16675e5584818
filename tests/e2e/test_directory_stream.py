"""`directory_stream` tails append-only files: every complete line once, offsets in snapshots, so
a suspended and resumed job (also on another member count) neither repeats nor skips a line."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobCancelledError, JobConfig, JobFailedError, ProcessingGuarantee
from jetspark.runners.local import JobStatus, LocalJob, LocalRunner
from tests.waiting import wait_until


def tail_dag(directory: Path) -> DAG:
    dag = DAG()
    source = dag.new_vertex("lines", P.directory_stream(str(directory), "*.log", poll_millis=5))
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.collect())))
    return dag


def append(path: Path, lines: list[str], end: str = "\n") -> None:
    with path.open("a") as file:
        file.write("\n".join(lines) + end)


def seen(job: LocalJob) -> Counter[str]:
    return Counter(job.result("sink"))


def stop(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(30)


def test_lines_appended_while_running_and_across_a_suspension_arrive_once(tmp_path: Path) -> None:
    files = [tmp_path / f"f{i}.log" for i in range(5)]
    for index, path in enumerate(files):
        append(path, [f"{index}-{n}" for n in range(100)])
    (tmp_path / "skipped.txt").write_text("not a log\n")
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=10)
    job = LocalRunner(2).submit(tail_dag(tmp_path), config)
    wait_until(lambda: len(job.result("sink")) >= 500)
    for index, path in enumerate(files):
        append(path, [f"{index}-{n}" for n in range(100, 150)])
    wait_until(lambda: len(job.result("sink")) >= 750)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED
    for index, path in enumerate(files):
        append(path, [f"{index}-{n}" for n in range(150, 200)])
    job.resume(member_count=3)  # files' offsets go to their new owners
    wait_until(lambda: len(job.result("sink")) >= 1000)
    stop(job)
    counts = seen(job)
    assert set(counts) == {f"{i}-{n}" for i in range(5) for n in range(200)}
    assert max(counts.values()) == 1


def test_a_line_without_its_newline_waits_for_it(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    append(path, ["one", "tw"], end="")
    job = LocalRunner(1).submit(tail_dag(tmp_path), JobConfig())
    wait_until(lambda: job.result("sink") == ["one"])
    append(path, ["o", "three"])
    wait_until(lambda: len(job.result("sink")) == 3)
    stop(job)
    assert job.result("sink") == ["one", "two", "three"]


def test_a_file_that_shrinks_fails_the_job_naming_it(tmp_path: Path) -> None:
    """Cut short, keeping its first bytes: the same file, shrunk (a file that starts otherwise is
    another file under the name, read from its start: the next test)."""
    path = tmp_path / "a.log"
    first = "a" * 70
    append(path, [first, "two"])
    job = LocalRunner(1).submit(tail_dag(tmp_path), JobConfig())
    wait_until(lambda: len(job.result("sink")) == 2)
    with open(path, "r+b") as file:
        file.truncate(len(first) + 1)
    with pytest.raises(JobFailedError, match=r"a\.log shrank"):
        job.join(30)


def test_a_file_written_anew_under_its_name_is_read_from_its_start(tmp_path: Path) -> None:
    """Truncated and written again (logrotate's copytruncate), perhaps on its old inode: it starts
    with other bytes, so it is another file, read from its start, not failed as shrunk."""
    path = tmp_path / "a.log"
    append(path, ["one", "two", "three"])
    job = LocalRunner(1).submit(tail_dag(tmp_path), JobConfig())
    wait_until(lambda: len(job.result("sink")) == 3)
    path.write_text("x\n")
    wait_until(lambda: len(job.result("sink")) == 4 or job.ended)
    assert job.result("sink")[3:] == ["x"], job.error
    job.cancel()

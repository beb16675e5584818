"""`directory_stream` in every format (appended JSON Lines and CSV lines, whole new Parquet files)
and its `errors=` policy for lines it cannot read: fail naming the file and byte offset, skip and
count, or dead-letter; a skipped line is not met again after a restore."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobCancelledError, JobConfig, JobFailedError, ProcessingGuarantee
from jetspark.runners.local import JobStatus, LocalJob, LocalRunner
from tests.waiting import wait_until

EXACTLY_ONCE = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=10)


def stream_dag(directory: Path, dead_letters: bool = False, **options: Any) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.directory_stream(str(directory), poll_millis=5, **options))
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.collect())))
    if dead_letters:
        dag.edge(Edge.from_(source, 1).to(dag.new_vertex("bad", P.collect())))
    return dag


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as file:
        file.write(data)


def stop(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(30)


def test_a_line_that_is_not_utf8_fails_the_job_naming_file_and_byte_offset(tmp_path: Path) -> None:
    append(tmp_path / "a.log", b"fine\nalso fine\nbroken \xc3\x28 here\n")
    job = LocalRunner(1).submit(stream_dag(tmp_path), JobConfig())
    with pytest.raises(JobFailedError, match=r"bad record in .*a\.log at byte 15: not UTF-8"):
        job.join(30)


def test_skip_counts_bad_lines_and_a_resumed_job_does_not_meet_them_again(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    append(path, b"one\n\xff\xfe\ntwo\n")
    job = LocalRunner(1).submit(stream_dag(tmp_path, errors="skip"), EXACTLY_ONCE)
    wait_until(lambda: job.result("sink") == ["one", "two"])
    assert job.metrics()["source"][P.BAD_RECORDS_METRIC] == 1
    job.suspend()
    append(path, b"three\n")
    job.resume()
    wait_until(lambda: len(job.result("sink")) == 3)
    # the counts are the resumed execution's (as Jet's): it did not meet the bad line again
    assert job.metrics()["source"][P.BAD_RECORDS_METRIC] == 0
    stop(job)
    assert job.result("sink") == ["one", "two", "three"]


def test_dead_letter_sends_bad_lines_with_file_and_offset_to_ordinal_1(tmp_path: Path) -> None:
    append(tmp_path / "a.jsonl", b'{"n": 1}\n{"n": \n{"n": 3}\n')
    job = LocalRunner(1).submit(
        stream_dag(tmp_path, dead_letters=True, format="jsonl", errors="dead_letter"), JobConfig()
    )
    wait_until(lambda: len(job.result("sink")) == 2 and len(job.result("bad")) == 1)
    stop(job)
    assert job.result("sink") == [{"n": 1}, {"n": 3}]
    [bad] = job.result("bad")
    assert (Path(bad.file).name, bad.offset, bad.raw) == ("a.jsonl", 9, b'{"n": ')
    assert bad.error.startswith("not valid JSON")


def test_jsonl_lines_appended_across_a_suspension_arrive_once_on_another_member_count(tmp_path: Path) -> None:
    files = [tmp_path / f"f{i}.jsonl" for i in range(4)]
    for index, path in enumerate(files):
        append(path, b"".join(b'{"f": %d, "n": %d}\n' % (index, n) for n in range(100)))
    job = LocalRunner(2).submit(stream_dag(tmp_path, format="jsonl"), EXACTLY_ONCE)
    wait_until(lambda: len(job.result("sink")) >= 400)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED
    for index, path in enumerate(files):
        append(path, b"".join(b'{"f": %d, "n": %d}\n' % (index, n) for n in range(100, 150)))
    job.resume(member_count=3)
    wait_until(lambda: len(job.result("sink")) >= 600)
    stop(job)
    counts = Counter((row["f"], row["n"]) for row in job.result("sink"))
    assert set(counts) == {(f, n) for f in range(4) for n in range(150)}
    assert max(counts.values()) == 1


def test_csv_files_keep_their_header_across_a_suspension(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    append(path, b"id,price\n1,0.5\n")
    job = LocalRunner(1).submit(
        stream_dag(tmp_path, format=P.csv_format(types={"id": int, "price": float})), EXACTLY_ONCE
    )
    wait_until(lambda: len(job.result("sink")) == 1)
    job.suspend()
    append(path, b"2,1.5\n")
    job.resume()  # a new processor: it reads the header again, and does not emit it
    wait_until(lambda: len(job.result("sink")) == 2)
    append(tmp_path / "b.csv", b"id,price\n")  # a header alone: no row
    append(tmp_path / "b.csv", b"3,\n")
    wait_until(lambda: len(job.result("sink")) == 3)
    stop(job)
    assert job.result("sink") == [{"id": 1, "price": 0.5}, {"id": 2, "price": 1.5}, {"id": 3, "price": None}]


def write_parquet(directory: Path, name: str, ids: range) -> None:
    """Written under a dot name and renamed, so the stream sees the file whole."""
    hidden = directory / f".{name}"
    pq.write_table(pa.Table.from_pylist([{"id": n, "key": n % 3} for n in ids]), hidden, row_group_size=50)
    hidden.rename(directory / name)


def test_whole_parquet_files_arrive_once_across_a_suspension(tmp_path: Path) -> None:
    write_parquet(tmp_path, "a.parquet", range(0, 120))
    job = LocalRunner(2).submit(stream_dag(tmp_path, format=P.parquet_format(columns=["id"])), EXACTLY_ONCE)
    wait_until(lambda: len(job.result("sink")) >= 120)
    job.suspend()
    write_parquet(tmp_path, "b.parquet", range(120, 300))
    job.resume(member_count=1)
    write_parquet(tmp_path, "c.parquet", range(300, 310))
    wait_until(lambda: len(job.result("sink")) >= 310)
    stop(job)
    counts = Counter(row["id"] for row in job.result("sink"))
    assert set(counts) == set(range(310))
    assert max(counts.values()) == 1
    assert job.result("sink")[0] == {"id": 0}


def test_an_unknown_format_is_refused_naming_the_choices(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"directory_stream: format must be one of 'text', 'jsonl', 'csv', 'parquet'"
    ):
        P.directory_stream(str(tmp_path), format="avro")

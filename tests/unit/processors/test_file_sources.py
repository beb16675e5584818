"""read_text, read_jsonl, read_csv and read_parquet on the local runner, with real files: paths,
splits across members, formats, bad records under each policy, and suspend/resume mid-file."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jetspark import processors as P
from jetspark.core import (
    DAG,
    AbstractProcessor,
    Edge,
    JobConfig,
    JobFailedError,
    ProcessingGuarantee,
    ProcessorSupplier,
)
from jetspark.runners.local import JobStatus, LocalJob, LocalRunner
from tests.gates import Gate, ask_to_suspend, gated_pass
from tests.waiting import wait_until


def read_all(source: ProcessorSupplier, members: int = 1, lp: int = 1) -> list[Any]:
    dag = DAG()
    src = dag.new_vertex("source", source, lp)
    dag.edge(Edge.between(src, dag.new_vertex("sink", P.collect())).distributed())
    return LocalRunner(members).run(dag).result("sink")  # type: ignore[no-any-return]


def write_lines(path: Path, lines: list[str], end: str = "\n") -> Path:
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


# ---- paths and splits --------------------------------------------------------------------------


def test_a_directory_a_glob_and_a_file_name_the_files_to_read(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt", "c.log", "_SUCCESS", ".hidden"):
        write_lines(tmp_path / name, [f"{name}-1", f"{name}-2"])
    for directory in ("k=1", "_temporary", ".staging"):
        (tmp_path / directory).mkdir()
        write_lines(tmp_path / directory / "d.txt", [directory])
    assert sorted(read_all(P.read_text(str(tmp_path)))) == sorted(
        ["k=1"] + [f"{n}-{i}" for n in ("a.txt", "b.txt", "c.log") for i in (1, 2)]
    )
    assert sorted(read_all(P.read_text(str(tmp_path / "*.txt")))) == [
        "a.txt-1",
        "a.txt-2",
        "b.txt-1",
        "b.txt-2",
    ]
    assert read_all(P.read_text(str(tmp_path / "c.log"))) == ["c.log-1", "c.log-2"]


def test_a_path_that_names_no_file_is_refused_when_the_source_is_built(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"read_jsonl: no such file or directory: .*missing"):
        P.read_jsonl(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match=r"read_text: .*\*\.csv' matches no files"):
        P.read_text(str(tmp_path / "*.csv"))


@pytest.mark.parametrize(
    ("members", "lp", "split_bytes"), [(1, 1, 7), (3, 1, 50), (2, 2, 1), (3, 2, 1 << 20)]
)
def test_every_line_is_read_once_whatever_the_splits_and_members(
    tmp_path: Path, members: int, lp: int, split_bytes: int
) -> None:
    expected = []
    for index in range(4):
        lines = [f"file{index}-line{n}" + "x" * (n % 13) for n in range(300)]
        write_lines(
            tmp_path / f"f{index}.txt", lines, end="" if index == 2 else "\n"
        )  # one without a last newline
        expected += lines
    got = read_all(P.read_text(str(tmp_path), split_bytes=split_bytes), members, lp)
    assert Counter(got) == Counter(expected)


class Tag(AbstractProcessor):
    """Emits (own global processor index, item)."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit((self.context.global_processor_index, item))


def test_splits_are_dealt_to_every_processor_evenly(tmp_path: Path) -> None:
    write_lines(tmp_path / "big.txt", [f"{n:04d}" for n in range(4000)])  # 20,000 bytes: 20 splits
    dag = DAG()
    src = dag.new_vertex("source", P.read_text(str(tmp_path), split_bytes=1000), 2)
    tag = dag.new_vertex("tag", Tag, 2)
    dag.edge(Edge.between(src, tag).isolated())
    dag.edge(Edge.between(tag, dag.new_vertex("sink", P.collect())).distributed())
    tagged = LocalRunner(3).run(dag).result("sink")
    assert sorted(line for _, line in tagged) == [f"{n:04d}" for n in range(4000)]
    per_processor = Counter(index for index, _ in tagged)
    assert sorted(per_processor) == list(range(6))
    assert set(per_processor.values()) <= {600, 800}  # 20 splits of 200 lines: 3 or 4 each


# ---- formats -------------------------------------------------------------------------------


def test_jsonl_reads_values_and_skips_blank_lines(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"k": "a", "v": 1}\n\n  \n[1, 2]\r\n"s"\n{"k": "é"}', encoding="utf-8")
    assert read_all(P.read_jsonl(str(tmp_path / "a.jsonl"))) == [{"k": "a", "v": 1}, [1, 2], "s", {"k": "é"}]


def test_text_keeps_blank_lines_and_drops_carriage_returns(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"one\r\n\r\ntwo\n\nthree")
    assert read_all(P.read_text(str(tmp_path))) == ["one", "", "two", "", "three"]


def test_csv_with_a_header_gives_typed_dicts(tmp_path: Path) -> None:
    write_lines(tmp_path / "a.csv", ["id,name,price", "1,apple,0.5", '2,"pear, green",', "", "3,plum,2"])
    source = P.read_csv(str(tmp_path / "a.csv"), types={"id": int, "price": float})
    assert read_all(source) == [
        {"id": 1, "name": "apple", "price": 0.5},
        {"id": 2, "name": "pear, green", "price": None},
        {"id": 3, "name": "plum", "price": 2.0},
    ]


def test_csv_without_a_header_gives_tuples_and_each_split_knows_the_header(tmp_path: Path) -> None:
    write_lines(tmp_path / "a.tsv", ["1\tx", "2\ty"])
    assert read_all(P.read_csv(str(tmp_path), header=False, types={0: int}, delimiter="\t")) == [
        (1, "x"),
        (2, "y"),
    ]
    write_lines(tmp_path / "b.csv", ["n,sq"] + [f"{n},{n * n}" for n in range(500)])
    rows = read_all(
        P.read_csv(str(tmp_path / "b.csv"), types={"n": int, "sq": int}, split_bytes=64), members=3
    )
    assert sorted(rows, key=lambda row: row["n"]) == [{"n": n, "sq": n * n} for n in range(500)]


def test_csv_types_must_name_header_columns(tmp_path: Path) -> None:
    write_lines(tmp_path / "a.csv", ["a,b", "1,2"])
    with pytest.raises(JobFailedError, match=r"types name columns \['c'\]"):
        read_all(P.read_csv(str(tmp_path), types={"c": int}))


def write_parquet(path: Path, rows: int, row_group_size: int) -> list[dict[str, Any]]:
    data = [{"id": n, "key": f"k{n % 7}", "value": n * 0.5} for n in range(rows)]
    pq.write_table(pa.Table.from_pylist(data), path, row_group_size=row_group_size)
    return data


def test_parquet_reads_every_row_group_once_across_members_with_projection(tmp_path: Path) -> None:
    data = write_parquet(tmp_path / "a.parquet", 1000, 64) + write_parquet(tmp_path / "b.parquet", 10, 100)
    rows = read_all(P.read_parquet(str(tmp_path), columns=["id", "key"]), members=3)
    assert sorted(rows, key=lambda row: row["id"]) == sorted(
        ({"id": row["id"], "key": row["key"]} for row in data), key=lambda row: row["id"]
    )


def test_parquet_refuses_an_unknown_column_naming_it_and_the_file(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet", 3, 10)
    with pytest.raises(ValueError, match=r"read_parquet: .*a\.parquet has no column\(s\) \['nope'\]"):
        P.read_parquet(str(tmp_path), columns=["id", "nope"])


# ---- bad records ---------------------------------------------------------------------------

BAD_JSONL = b'{"n": 1}\n{"n": 2\n{"n": \xff3}\n{"n": 4}\n'
#: byte offsets of the two bad lines in BAD_JSONL
BAD_OFFSETS = [9, 17]


def test_a_bad_record_fails_the_job_naming_file_and_offset(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(BAD_JSONL)
    with pytest.raises(JobFailedError, match=r"bad record in .*a\.jsonl at byte 9: not valid JSON"):
        read_all(P.read_jsonl(str(tmp_path)))


def test_a_line_that_is_not_utf8_is_named_with_its_offset(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"ok\nnot \xff utf-8\n")
    with pytest.raises(JobFailedError, match=r"a\.txt at byte 3: not UTF-8 \(invalid start byte at byte 4"):
        read_all(P.read_text(str(tmp_path)))


def test_skip_drops_and_counts_bad_records(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(BAD_JSONL)
    dag = DAG()
    src = dag.new_vertex("source", P.read_jsonl(str(tmp_path), errors="skip"))
    dag.edge(Edge.between(src, dag.new_vertex("sink", P.collect())))
    job = LocalRunner(1).run(dag)
    assert job.result("sink") == [{"n": 1}, {"n": 4}]
    assert job.metrics()["source"][P.BAD_RECORDS_METRIC] == 2


def test_dead_letter_sends_bad_records_to_ordinal_1(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(BAD_JSONL)
    dag = DAG()
    src = dag.new_vertex("source", P.read_jsonl(str(tmp_path), errors="dead_letter"))
    dag.edge(Edge.between(src, dag.new_vertex("good", P.collect())))
    dag.edge(Edge.from_(src, 1).to(dag.new_vertex("bad", P.collect())))
    job = LocalRunner(1).run(dag)
    assert job.result("good") == [{"n": 1}, {"n": 4}]
    bad = job.result("bad")
    assert [(Path(b.file).name, b.offset, b.raw) for b in bad] == [
        ("a.jsonl", 9, b'{"n": 2'),
        ("a.jsonl", 17, b'{"n": \xff3}'),
    ]
    assert all(isinstance(b, P.BadRecord) for b in bad)
    assert "not valid JSON" in bad[0].error and "not UTF-8" in bad[1].error
    assert job.metrics()["source"][P.BAD_RECORDS_METRIC] == 2


def test_dead_letter_without_an_ordinal_1_edge_is_refused_naming_the_vertex(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(BAD_JSONL)
    with pytest.raises(JobFailedError, match=r"vertex 'source': errors='dead_letter' .* has 1 outbound edge"):
        read_all(P.read_jsonl(str(tmp_path), errors="dead_letter"))


def test_csv_rows_of_the_wrong_width_or_type_are_bad_records(tmp_path: Path) -> None:
    write_lines(tmp_path / "a.csv", ["a,b", "1,2", "3", "x,4", "5,6"])
    dag = DAG()
    src = dag.new_vertex("source", P.read_csv(str(tmp_path), types={"a": int}, errors="dead_letter"))
    dag.edge(Edge.between(src, dag.new_vertex("good", P.collect())))
    dag.edge(Edge.from_(src, 1).to(dag.new_vertex("bad", P.collect())))
    job = LocalRunner(1).run(dag)
    assert job.result("good") == [{"a": 1, "b": "2"}, {"a": 5, "b": "6"}]
    assert [(b.offset, b.error) for b in job.result("bad")] == [
        (8, "1 fields, the header has 2"),
        (10, "column 'a': invalid literal for int() with base 10: 'x'"),
    ]


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"read_text: errors must be one of 'fail', 'skip', 'dead_letter', got 'ignore'"
    ):
        P.read_text(".", errors="ignore")  # type: ignore[arg-type]


# ---- snapshots -------------------------------------------------------------------------------

EXACTLY_ONCE = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=10)


def suspended_midway_and_resumed(
    source: ProcessorSupplier, members: int, resume_members: int, tmp_path: Path, total: int
) -> LocalJob:
    """Hold the items after 100 per processor, suspend there, resume on `resume_members`. Each
    processor must have more to read than its queues hold (about 3 x 1024 items: the held step's
    inbox, the queue, the source's outbox), or it ends before the suspension."""
    gate = Gate(tmp_path / "gate", hold_at=100)
    dag = DAG()
    src = dag.new_vertex("source", source)
    step = dag.new_vertex("step", gated_pass(gate))
    dag.edge(Edge.between(src, step))
    dag.edge(Edge.between(step, dag.new_vertex("sink", P.collect())).distributed())
    job = LocalRunner(members).submit(dag, EXACTLY_ONCE)
    wait_until(lambda: len(job.result("sink")) >= 100 * members)
    ask_to_suspend(job)
    gate.open()
    wait_until(lambda: job.status is not JobStatus.RUNNING, "the suspension", timeout=60)
    assert job.status is JobStatus.SUSPENDED, job.error
    assert len(job.result("sink")) < total, "the job ended before it was suspended"
    job.resume(member_count=resume_members).join(60)
    return job


@pytest.mark.parametrize(("members", "resume_members"), [(1, 1), (2, 3), (3, 1)])
def test_a_suspended_jsonl_source_resumes_on_another_member_count_exactly_once(
    tmp_path: Path, members: int, resume_members: int
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for index in range(3):
        write_lines(data / f"{index}.jsonl", [json.dumps({"f": index, "n": n}) for n in range(10_000)])
    job = suspended_midway_and_resumed(
        P.read_jsonl(str(data), split_bytes=60_000), members, resume_members, tmp_path, 30_000
    )
    counts = Counter((row["f"], row["n"]) for row in job.result("sink"))
    assert set(counts) == {(f, n) for f in range(3) for n in range(10_000)}
    assert max(counts.values()) == 1


def test_a_suspended_parquet_source_resumes_exactly_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    rows = write_parquet(data / "a.parquet", 20_000, 3000)
    job = suspended_midway_and_resumed(P.read_parquet(str(data), columns=["id"]), 2, 3, tmp_path, 20_000)
    counts = Counter(row["id"] for row in job.result("sink"))
    assert set(counts) == {row["id"] for row in rows}
    assert max(counts.values()) == 1


@pytest.mark.parametrize("lp", [1, 2])
def test_behind_first_member_only_every_file_is_read_once(tmp_path: Path, lp: int) -> None:
    """Only the first of 3 members runs the source: its processors deal the files among
    themselves, not among the 3 x lp processors the global index counts (whose shares nobody
    would read)."""
    from jetspark.core.suppliers import FirstMemberOnly

    for n in range(7):
        write_lines(tmp_path / f"part-{n}.txt", [f"{n}-{i}" for i in range(5)])
    got = read_all(FirstMemberOnly(P.read_text(str(tmp_path))), members=3, lp=lp)
    assert sorted(got) == sorted(f"{n}-{i}" for n in range(7) for i in range(5))

"""write_jsonl, write_csv and write_parquet on the local runner: what they write reads back with
the file sources, partitioned by a column when asked, and under EXACTLY_ONCE every record is in
the committed files once after a restart from a snapshot, with nothing left uncommitted."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, JobFailedError, ProcessingGuarantee, ProcessorSupplier
from jetspark.runners.local import LocalRunner
from tests.e2e.test_snapshots import failing_once, run_failing_once_after_snapshots
from tests.gates import Gate, gated_stream

ROWS = [{"id": n, "city": ["Oslo", "Lima", "Pune/W"][n % 3], "amount": n * 1.5} for n in range(1000)]


def write(
    sink: ProcessorSupplier, items: list[Any], members: int = 2, config: JobConfig | None = None
) -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items))
    dag.edge(Edge.between(source, dag.new_vertex("out", sink)))
    LocalRunner(members).run(dag, config or JobConfig(), timeout=60)


def read(source: ProcessorSupplier) -> list[Any]:
    dag = DAG()
    src = dag.new_vertex("source", source)
    dag.edge(Edge.between(src, dag.new_vertex("sink", P.collect())))
    return LocalRunner(1).run(dag, timeout=60).result("sink")  # type: ignore[no-any-return]


def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: row["id"])


def visible_files(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def test_jsonl_written_reads_back(tmp_path: Path) -> None:
    write(P.write_jsonl(str(tmp_path / "out")), ROWS)
    # part-<job id>-<processor>-<seq>: the job id keeps a run started over from overwriting these
    names = visible_files(tmp_path / "out")
    assert [re.sub(r"^part-[0-9a-f]+-", "part-<job>-", n) for n in names] == [
        "part-<job>-00000-0000000000.jsonl",
        "part-<job>-00001-0000000000.jsonl",
    ]
    assert len({n.split("-")[1] for n in names}) == 1, "one job id"
    assert by_id(read(P.read_jsonl(str(tmp_path / "out")))) == ROWS


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_the_bytes_a_sink_wrote_are_its_bytes_written_metric(tmp_path: Path, kind: str) -> None:
    """`bytes_written` (the web UI's sink bytes of an epoch): the size of the files it wrote,
    partitioned or not, over every processor."""
    sink = {
        "jsonl": P.write_jsonl(str(tmp_path / "out"), partition_by="city"),
        "csv": P.write_csv(str(tmp_path / "out"), columns=["id", "city", "amount"]),
        "parquet": P.write_parquet(str(tmp_path / "out")),
    }[kind]
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(ROWS))
    dag.edge(Edge.between(source, dag.new_vertex("out", sink)))
    job = LocalRunner(2).run(dag, JobConfig(), timeout=60)
    written = sum(f.stat().st_size for f in (tmp_path / "out").rglob("*") if f.is_file())
    assert written > 0 and job.metrics()["out"]["bytes_written"] == written


def test_csv_written_with_a_header_reads_back_typed(tmp_path: Path) -> None:
    write(P.write_csv(str(tmp_path / "out"), columns=["id", "city", "amount"]), ROWS)
    first = sorted((tmp_path / "out").iterdir())[0].read_text().splitlines()
    assert first[:2] == ["id,city,amount", "0,Oslo,0.0"]
    rows = read(P.read_csv(str(tmp_path / "out"), types={"id": int, "amount": float}))
    assert by_id(rows) == ROWS


def test_parquet_written_reads_back_with_its_types(tmp_path: Path) -> None:
    write(P.write_parquet(str(tmp_path / "out")), ROWS)
    assert by_id(read(P.read_parquet(str(tmp_path / "out")))) == ROWS
    schema = pq.read_schema(next((tmp_path / "out").iterdir()))
    assert [str(t) for t in schema.types] == ["int64", "string", "double"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_partition_by_writes_a_directory_per_value_and_the_sources_read_the_column_back(
    tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / "out"
    sink = {"jsonl": P.write_jsonl, "csv": P.write_csv, "parquet": P.write_parquet}[fmt](
        str(out), partition_by="city"
    )
    write(sink, ROWS)
    assert sorted(os.listdir(out)) == ["city=Lima", "city=Oslo", "city=Pune%2FW"]
    reader = {
        "jsonl": P.read_jsonl,
        "csv": lambda path: P.read_csv(path, types={"id": int, "amount": float}),
        "parquet": P.read_parquet,
    }[fmt]
    lima = read(reader(str(out / "city=Lima")))  # one partition alone: the column is in the path only
    assert by_id(lima) == [{"id": r["id"], "amount": r["amount"]} for r in ROWS if r["city"] == "Lima"]
    assert by_id(read(reader(str(out)))) == ROWS  # the whole output: the column comes back


def test_partition_values_are_typed_as_spark_types_them(tmp_path: Path) -> None:
    rows = [{"id": n, "day": [20240101, None, 2.5][n % 3]} for n in range(9)]
    write(P.write_jsonl(str(tmp_path / "out"), partition_by="day"), rows)
    assert sorted(os.listdir(tmp_path / "out")) == [
        "day=2.5",
        "day=20240101",
        "day=__HIVE_DEFAULT_PARTITION__",
    ]
    assert by_id(read(P.read_jsonl(str(tmp_path / "out")))) == rows


def test_partition_by_a_field_a_record_lacks_fails_naming_it(tmp_path: Path) -> None:
    with pytest.raises(JobFailedError, match=r"partition_by='town', but a record has no such field"):
        write(P.write_jsonl(str(tmp_path / "out"), partition_by="town"), ROWS[:3], members=1)


COUNT = 6000


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_exactly_once_after_a_restart_from_a_snapshot(tmp_path: Path, fmt: str) -> None:
    """The source waits half-way at a gate until two snapshots were taken; the first item past it
    fails once and the job restarts from the last snapshot: every record once, none uncommitted."""
    out = tmp_path / "out"
    state: dict[str, Any] = {}
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    step = failing_once(state, at=COUNT // 2)
    source = gated_stream(gate, count=COUNT, items_per_second=8000, fn=step)
    dag = DAG()
    src = dag.new_vertex("source", source)
    rows = dag.new_vertex("rows", P.map(lambda n: {"id": n, "part": n % 4}))
    sink = (
        P.write_jsonl(str(out), partition_by="part")
        if fmt == "jsonl"
        else P.write_parquet(str(out), partition_by="part")
    )
    dag.edge(Edge.between(src, rows))
    dag.edge(Edge.between(rows, dag.new_vertex("out", sink)).distributed())
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=20)
    job = LocalRunner(2).submit(dag, config)
    run_failing_once_after_snapshots(job, gate, state, timeout=120)
    assert state.get("failed") and state["snapshot_at_failure"] >= 1
    reader = P.read_jsonl if fmt == "jsonl" else P.read_parquet
    counts = Counter(row["id"] for row in read(reader(str(out))))
    assert set(counts) == set(range(COUNT))
    assert max(counts.values()) == 1
    assert not [p for p in out.rglob(".*")], "uncommitted transaction files left"

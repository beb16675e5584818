"""The file sources and sinks on Spark: one test per source format, with real files read on the
executors, splits dealt across members, and Parquet in and out exactly once across epochs with a
failure injected."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig
from jetspark.runners.spark import SparkRunner
from tests.spark.test_epochs import epochs, failing_at
from tests.waiting import wait_until

pytestmark = pytest.mark.spark

MEMBERS = JobConfig(member_count=2)


class Tag:
    """A map that tags each item with the Spark partition (member) it was read on."""

    def __call__(self, item: Any) -> Any:
        from pyspark import TaskContext

        context = TaskContext.get()
        return (context.partitionId() if context is not None else -1, item)


def run(spark: Any, source: Any, tag: bool = False, dead_letters: bool = False) -> Any:
    dag = DAG()
    src = dag.new_vertex("source", source)
    sink = dag.new_vertex("sink", P.collect())
    if tag:
        tagged = dag.new_vertex("tag", P.map(Tag()))
        dag.edge(Edge.between(src, tagged))
        dag.edge(Edge.between(tagged, sink).distributed())
    else:
        dag.edge(Edge.between(src, sink).distributed())
    if dead_letters:
        dag.edge(Edge.from_(src, 1).to(dag.new_vertex("bad", P.collect())).distributed())
    return SparkRunner(spark).run(dag, MEMBERS, timeout=120)


def test_read_text_deals_byte_range_splits_to_both_members(spark: Any, tmp_path: Path) -> None:
    lines = [f"line {n}" for n in range(5000)]
    (tmp_path / "a.txt").write_text("\n".join(lines) + "\n")
    job = run(spark, P.read_text(str(tmp_path), split_bytes=4096), tag=True)
    got = job.result("sink")
    assert Counter(line for _, line in got) == Counter(lines)
    assert {member for member, _ in got} == {0, 1}


def test_read_jsonl_sends_bad_lines_to_the_dead_letters(spark: Any, tmp_path: Path) -> None:
    good = [json.dumps({"n": n}) for n in range(1000)]
    (tmp_path / "a.jsonl").write_text("\n".join([*good[:500], "{broken", *good[500:]]) + "\n")
    job = run(spark, P.read_jsonl(str(tmp_path), errors="dead_letter", split_bytes=2000), dead_letters=True)
    assert sorted(row["n"] for row in job.result("sink")) == list(range(1000))
    [bad] = job.result("bad")
    assert (bad.offset, bad.raw) == (sum(len(line) + 1 for line in good[:500]), b"{broken")
    assert job.metrics()["source"][P.BAD_RECORDS_METRIC] == 1


def test_read_csv_typed_rows_into_a_keyed_count(spark: Any, tmp_path: Path) -> None:
    rows = [f"{n},{['a', 'b', 'c'][n % 3]},{n / 2}" for n in range(3000)]
    (tmp_path / "a.csv").write_text("id,key,value\n" + "\n".join(rows) + "\n")
    dag = DAG()
    source = P.read_csv(str(tmp_path), types={"id": int, "value": float}, split_bytes=8192)
    src = dag.new_vertex("source", source)
    total = P.aggregate_by_key(dag, "total", src, lambda row: row["key"], P.summing(lambda row: row["id"]))
    dag.edge(Edge.between(total, dag.new_vertex("sink", P.collect())).distributed())
    job = SparkRunner(spark).run(dag, MEMBERS, timeout=120)
    expected: Counter[str] = Counter()
    for n in range(3000):
        expected[["a", "b", "c"][n % 3]] += n
    assert dict(job.result("sink")) == dict(expected)


def test_read_parquet_into_write_parquet_exactly_once_across_epochs_with_a_failure(
    spark: Any, tmp_path: Path
) -> None:
    data = tmp_path / "in"
    data.mkdir()
    pq.write_table(
        pa.Table.from_pylist([{"id": n, "part": n % 3, "pad": "x" * 20} for n in range(20_000)]),
        data / "a.parquet",
        row_group_size=2000,
    )
    out = tmp_path / "out"
    dag = DAG()
    src = dag.new_vertex("source", P.read_parquet(str(data), columns=["id", "part"]))
    step = dag.new_vertex("step", P.map(failing_at({"id": 12_345, "part": 0}, tmp_path / "failed")))
    sink = dag.new_vertex("sink", P.write_parquet(str(out), partition_by="part"))
    dag.edge(Edge.between(src, step))
    dag.edge(Edge.between(step, sink).distributed())
    config = epochs(tmp_path / "ck", name="parquet", interval=50)
    SparkRunner(spark, restart_backoff=0.05).run(dag, config, timeout=240)
    assert (tmp_path / "failed").exists(), "the failure was injected"
    written = pq.read_table(str(out)).to_pylist()  # pyarrow reads the part=<n> directories
    counts = Counter(row["id"] for row in written)
    assert set(counts) == set(range(20_000))
    assert max(counts.values()) == 1
    assert not list(out.rglob(".*")), "uncommitted transaction files left"


def test_directory_stream_of_jsonl_into_write_jsonl_exactly_once_across_epochs_with_a_failure(
    spark: Any, tmp_path: Path
) -> None:
    """Lines appended while the job runs, a bad line skipped, a failure that aborts an epoch: the
    committed output holds every good record once."""

    source_dir, out = tmp_path / "in", tmp_path / "out"
    source_dir.mkdir()

    def append(index: int, first: int, last: int) -> None:
        with (source_dir / f"f{index}.jsonl").open("ab") as file:
            file.write(b"".join(b'{"f": %d, "n": %d}\n' % (index, n) for n in range(first, last)))

    for index in range(3):
        append(index, 0, 300)
    with (source_dir / "f0.jsonl").open("ab") as file:
        file.write(b"\xff not json\n")
    dag = DAG()
    lines = dag.new_vertex(
        "lines", P.directory_stream(str(source_dir), "*.jsonl", 20, format="jsonl", errors="skip")
    )
    step = dag.new_vertex("step", P.map(failing_at({"f": 1, "n": 400}, tmp_path / "failed")))
    sink = dag.new_vertex("sink", P.write_jsonl(str(out), partition_by="f"))
    dag.edge(Edge.between(lines, step))
    dag.edge(Edge.between(step, sink).distributed())
    job = SparkRunner(spark, restart_backoff=0.05).submit(dag, epochs(tmp_path / "ck", name="tail-jsonl"))

    def committed() -> list[tuple[int, int]]:
        if not out.exists():
            return []
        rows = []
        for path in out.rglob("part-*.jsonl"):
            f = int(path.parent.name.split("=")[1])
            rows += [(f, json.loads(line)["n"]) for line in path.read_text().splitlines()]
        return rows

    wait_until(lambda: len(committed()) >= 900, timeout=120)
    for index in range(3):
        append(index, 300, 500)
    wait_until(lambda: len(committed()) >= 1500, timeout=120)
    job.suspend()
    assert (tmp_path / "failed").exists() and job.epochs_aborted >= 1
    counts = Counter(committed())
    assert set(counts) == {(f, n) for f in range(3) for n in range(500)}
    assert max(counts.values()) == 1


@pytest.mark.slow  # Spark SQL's first DataFrame read takes several seconds
def test_spark_reads_what_write_parquet_wrote_partitioned_with_the_partition_column(
    spark: Any, tmp_path: Path
) -> None:
    dag = DAG()
    source = dag.new_vertex(
        "source", P.from_iterable([{"id": n, "day": 20240101 + n % 3} for n in range(300)])
    )
    dag.edge(
        Edge.between(
            source, dag.new_vertex("out", P.write_parquet(str(tmp_path / "out"), partition_by="day"))
        )
    )
    SparkRunner(spark).run(dag, MEMBERS, timeout=120)
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((row["id"], row["day"]) for row in rows) == [(n, 20240101 + n % 3) for n in range(300)]

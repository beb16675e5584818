"""Sources over RDDs and DataFrames, and the DataFrame sink."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.edge import Edge
from jetspark.core.errors import DagValidationError, JobFailedError
from jetspark.processors import collect, map
from jetspark.runners.spark import SparkRunner, from_dataframe, from_rdd, write_dataframe
from tests.spark import dags

pytestmark = pytest.mark.spark


def test_rdd_partition_m_is_read_by_member_m_when_the_counts_match(spark: Any) -> None:
    rdd = spark.sparkContext.parallelize(range(100), 2)  # partition 0: 0..49, partition 1: 50..99
    dag = DAG()
    source = dag.new_vertex("source", from_rdd(rdd), local_parallelism=2)
    where = dag.new_vertex("where", dags.Where)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, where))
    dag.edge(Edge.between(where, sink))
    job = SparkRunner(spark).run(dag, JobConfig(member_count=2), timeout=120)
    members = {n: member for n, member, _index, _pid in job.result("sink")}
    assert members == {n: n // 50 for n in range(100)}
    assert job.metrics()["source"]["emitted"] == 100


@pytest.mark.slow  # Spark SQL's first DataFrame, write and read take several seconds
def test_dataframe_in_dataframe_out(spark: Any, tmp_path: Path) -> None:
    df = spark.range(0, 300, numPartitions=3)  # 3 partitions over 2 members: partition p -> member p % 2
    dag = DAG()
    source = dag.new_vertex("rows", from_dataframe(df))
    keyed = dag.new_vertex("keyed", map(lambda row: (row.id % 7, row.id)))
    out = dag.new_vertex("out", write_dataframe(str(tmp_path / "out"), schema="k long, v long"))
    dag.edge(Edge.between(source, keyed))
    dag.edge(Edge.between(keyed, out).partitioned(dags.first).distributed())
    job = SparkRunner(spark).run(dag, JobConfig(member_count=2), timeout=120)
    written = spark.read.parquet(str(tmp_path / "out"))
    assert sorted(tuple(row) for row in written.collect()) == sorted((n % 7, n) for n in range(300))
    assert job.dataframe("out").count() == 300
    assert job.metrics()["rows"]["emitted"] == 300


def test_files_sink_writes_on_the_executors_one_file_per_processor(spark: Any, tmp_path: Path) -> None:
    from jetspark.processors import files, from_iterable

    dag = DAG()
    source = dag.new_vertex("source", from_iterable(range(200)))
    sink = dag.new_vertex("written", files(str(tmp_path)), local_parallelism=2)
    dag.edge(Edge.between(source, sink).distributed())
    SparkRunner(spark).run(dag, JobConfig(member_count=2), timeout=120)
    paths = sorted(p.name for p in tmp_path.iterdir())
    assert paths == ["_SUCCESS"] + [f"written-{i:05d}.txt" for i in range(4)], "no staging area is left"
    lines = [int(line) for p in tmp_path.glob("written-*.txt") for line in p.read_text().splitlines()]
    assert sorted(lines) == list(range(200))
    assert (tmp_path / "_SUCCESS").read_bytes() == b""


def files_job(directory: Path, count: int = 200, overwrite: bool = False, fail_at: int | None = None) -> DAG:
    from jetspark.processors import files, from_iterable

    dag = DAG()
    source = dag.new_vertex("source", from_iterable(("n", n) for n in range(count)))
    upstream = source
    if fail_at is not None:
        upstream = dag.new_vertex("fail", lambda: dags.Fail(fail_at))
        dag.edge(Edge.between(source, upstream))
    sink = dag.new_vertex("written", files(str(directory), lambda item: str(item[1]), overwrite=overwrite))
    dag.edge(Edge.between(upstream, sink).partitioned(dags.key_of).distributed())
    return dag


def test_files_sink_refuses_a_directory_with_output_at_submit(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "written-00000.txt").write_text("old\n")
    with pytest.raises(
        DagValidationError, match=r"vertex 'written': directory .* already holds written-00000.txt"
    ):
        SparkRunner(spark).submit(files_job(tmp_path), JobConfig(member_count=2))
    assert (tmp_path / "written-00000.txt").read_text() == "old\n", "nothing was touched"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["written-00000.txt"]


def test_files_sink_with_overwrite_replaces_the_old_output_when_the_job_succeeds(
    spark: Any, tmp_path: Path
) -> None:
    for name in ("written-00000.txt", "written-00007.txt", "_SUCCESS"):
        (tmp_path / name).write_text("old\n")
    SparkRunner(spark).run(files_job(tmp_path, overwrite=True), JobConfig(member_count=2), timeout=120)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["_SUCCESS", "written-00000.txt", "written-00001.txt"]
    lines = [int(line) for p in tmp_path.glob("written-*.txt") for line in p.read_text().splitlines()]
    assert sorted(lines) == list(range(200))


def test_files_sink_refuses_to_overwrite_files_it_did_not_write(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("mine\n")
    with pytest.raises(DagValidationError, match="never deletes other files"):
        SparkRunner(spark).submit(files_job(tmp_path, overwrite=True), JobConfig(member_count=2))
    assert (tmp_path / "notes.md").read_text() == "mine\n"


def test_a_failed_job_leaves_no_files_and_no_success_marker(spark: Any, tmp_path: Path) -> None:
    job = SparkRunner(spark).submit(files_job(tmp_path, count=5000, fail_at=4000), JobConfig(member_count=2))
    with pytest.raises(JobFailedError):
        job.join(120)
    assert list(tmp_path.iterdir()) == [], "no output, no _SUCCESS and no staging area"

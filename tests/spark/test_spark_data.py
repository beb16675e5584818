"""Sources over RDDs and DataFrames, and the DataFrame sink."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.edge import Edge
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
    assert paths == [f"written-{i:05d}.txt" for i in range(4)]
    lines = [int(line) for p in tmp_path.iterdir() for line in p.read_text().splitlines()]
    assert sorted(lines) == list(range(200))

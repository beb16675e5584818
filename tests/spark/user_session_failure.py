"""A driver as a notebook or plain spark-submit runs it: its own SparkSession (Spark's default
logging), then a jetspark job whose processor fails. Prints what the driver got."""

from __future__ import annotations

from pyspark.sql import SparkSession

from jetspark import DAG, Edge, JobConfig
from jetspark.core.errors import JobFailedError
from jetspark.processors import collect, from_iterable
from jetspark.processors import map as map_p
from jetspark.runners.spark import SparkRunner


def check(item: int) -> int:
    if item == 7:
        raise ValueError("item 7 is bad")
    return item


spark = SparkSession.builder.master("local[1]").appName("user's own").getOrCreate()
dag = DAG()
numbers = dag.new_vertex("numbers", from_iterable(range(10)))
checked = dag.new_vertex("check", map_p(check))
dag.edge(Edge.between(numbers, checked).distributed())
dag.edge(Edge.between(checked, dag.new_vertex("sink", collect())))
try:
    SparkRunner(spark).run(dag, JobConfig(name="failing"))
except JobFailedError as error:
    print(f"cause: {type(error.__cause__).__name__}: {error.__cause__}")
    print(f"remote traceback names check(): {'in check' in error.remote_traceback}")  # type: ignore[attr-defined]
spark.stop()

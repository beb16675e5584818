"""A user's job file whose function fails on one item: run by `jetspark run`, `jetspark submit`
and plain `spark-submit` in tests/spark/test_user_tracebacks.py, which look for this file's name,
line and source line in the traceback the executor sends back."""

from __future__ import annotations

from jetspark import DAG, Edge, JobConfig
from jetspark.api import run
from jetspark.processors import collect, from_iterable
from jetspark.processors import map as map_p


def check(item: int) -> int:
    if item == 7:
        raise ValueError("item 7 is bad")
    return item


if __name__ == "__main__":
    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(10)))
    checked = dag.new_vertex("check", map_p(check))
    dag.edge(Edge.between(numbers, checked).distributed())
    dag.edge(Edge.between(checked, dag.new_vertex("sink", collect())))
    run(dag, JobConfig(name="failing"))

"""Bad input is refused by submit(), in the caller's thread, before anything runs."""

from __future__ import annotations

import pytest

from jetspark import processors as P
from jetspark.core import DAG, DagValidationError, Edge
from jetspark.runners.local import LocalRunner


def test_a_plan_error_is_raised_by_submit_not_later_by_join() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(3)), local_parallelism=2)
    sink = dag.new_vertex("sink", P.collect(), local_parallelism=1)
    dag.edge(Edge.between(source, sink).isolated())
    with pytest.raises(DagValidationError, match=r"edge source\[0\] -> sink\[0\]: an isolated edge needs"):
        LocalRunner().submit(dag)


def test_a_validation_error_names_the_edge_at_submit() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(3)))
    sink = dag.new_vertex("sink", P.collect())
    edge = Edge.between(source, sink)
    edge.routing = edge.routing.PARTITIONED  # a partitioned edge without its key function
    dag.edge(edge)
    with pytest.raises(DagValidationError, match="partitioned edge needs a key function"):
        LocalRunner().submit(dag)

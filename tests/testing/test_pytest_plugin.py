"""The pytest plugin is registered by its entry point, and the DAG helpers check a DAG's output."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

import pytest

from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.runners.local import LocalRunner
from jetspark.testing import assert_dag_output, run_dag


def test_the_plugin_is_registered_as_a_pytest11_entry_point(pytestconfig: pytest.Config) -> None:
    names = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert names.get("jetspark") == "jetspark.testing.pytest_plugin"
    assert pytestconfig.pluginmanager.has_plugin("jetspark")


def small_dag(items: list[Any]) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items))
    double = dag.new_vertex("double", P.map(lambda x: x * 2))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, double))
    dag.edge(Edge.between(double, sink))
    return dag


def test_the_local_runner_fixture(jetspark_local_runner: LocalRunner) -> None:
    job = jetspark_local_runner.run(small_dag([1, 2]), timeout=30)
    assert sorted(job.result("sink")) == [2, 4]


def test_the_local_runner_factory_simulates_members(jetspark_local_runner_factory: Any) -> None:
    runner = jetspark_local_runner_factory(3)
    assert_dag_output(small_dag(list(range(10))), {"sink": [x * 2 for x in range(10)]}, runner=runner)


def test_assert_dag_output_shows_the_difference() -> None:
    with pytest.raises(AssertionError) as info:
        assert_dag_output(small_dag([1, 2, 3]), {"sink": [2, 4, 7]})
    message = str(info.value)
    assert "sink vertex 'sink'" in message
    assert "missing:    [7]" in message
    assert "unexpected: [6]" in message


def test_run_dag_returns_the_finished_job() -> None:
    assert sorted(run_dag(small_dag([5])).result("sink")) == [10]


@pytest.mark.spark
def test_the_spark_fixtures_share_one_session(
    jetspark_spark_session: Any, jetspark_spark_runner: Any
) -> None:
    assert jetspark_spark_runner.spark is jetspark_spark_session
    assert_dag_output(small_dag([1, 2, 3]), {"sink": [2, 4, 6]}, runner=jetspark_spark_runner, timeout=120)

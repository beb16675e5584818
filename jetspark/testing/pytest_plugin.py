"""pytest plugin of jetspark, registered by the `pytest11` entry point `jetspark`.

Fixtures:

- `jetspark_local_runner`: a `LocalRunner` (one member; `jetspark_local_runner_factory(n)` for n
  simulated members).
- `jetspark_spark_session` (session scope): one Spark session shared by the whole test run, made
  by the Spark runner (`jetspark.runners.spark`, the only module allowed to touch pyspark); the
  test is skipped when the Spark runner or pyspark is not installed.
- `jetspark_spark_runner`: a Spark runner on that session.

DAG helpers are plain functions: `jetspark.testing.run_dag` and `assert_dag_output`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from jetspark.runners.local import LocalRunner

SPARK_RUNNER_MODULE = "jetspark.runners.spark"


@pytest.fixture
def jetspark_local_runner_factory() -> Callable[[int], LocalRunner]:
    """Make local runners with a given number of simulated members."""

    def make(member_count: int = 1) -> LocalRunner:
        return LocalRunner(member_count=member_count)

    return make


@pytest.fixture
def jetspark_local_runner(jetspark_local_runner_factory: Callable[[int], LocalRunner]) -> LocalRunner:
    return jetspark_local_runner_factory(1)


def _spark_runner_module() -> Any:
    try:
        return importlib.import_module(SPARK_RUNNER_MODULE)
    except ImportError as error:
        pytest.skip(f"the Spark runner is not available: {error}")


@pytest.fixture(scope="session")
def jetspark_spark_session() -> Iterator[Any]:
    """The one Spark session of the test run (starting one takes seconds; never make another)."""
    module = _spark_runner_module()
    make = getattr(module, "shared_session", None)
    if make is None:
        pytest.skip(f"{SPARK_RUNNER_MODULE} has no shared_session() yet")
    session = make()
    yield session
    stop = getattr(module, "stop_shared_session", None)
    if stop is not None:
        stop()


@pytest.fixture
def jetspark_spark_runner(jetspark_spark_session: Any) -> Any:
    module = _spark_runner_module()
    runner_class = getattr(module, "SparkRunner", None)
    if runner_class is None:
        pytest.skip(f"{SPARK_RUNNER_MODULE} has no SparkRunner yet")
    return runner_class(jetspark_spark_session)

"""pytest plugin of jetspark, registered by the `pytest11` entry point `jetspark`.

Fixtures:

- `jetspark_local_runner`: a `LocalRunner` (one member; `jetspark_local_runner_factory(n)` for n
  simulated members).
- `jetspark_spark_session` (session scope): one Spark session shared by the whole test run, from
  the Spark runner (`jetspark.runners.spark`, the only module allowed to touch pyspark); the test
  is skipped when pyspark or Java is missing. Mark such tests `@pytest.mark.spark`.
- `jetspark_spark_runner`: a two-member `SparkRunner` on that session.

DAG helpers are plain functions: `jetspark.testing.run_dag` and `assert_dag_output`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
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
def jetspark_spark_session() -> Any:
    """The one Spark session of the test run, from the Spark runner's `get_session` (which reuses
    a running session): master `JETSPARK_MASTER`, else `local[2]`. Skips when Java is missing."""
    module = _spark_runner_module()
    try:
        return module.get_session(os.environ.get(module.session.MASTER_ENV) or "local[2]")
    except module.JavaNotFoundError as error:
        pytest.skip(str(error))


@pytest.fixture
def jetspark_spark_runner(jetspark_spark_session: Any) -> Any:
    """A Spark runner with two members on the shared session."""
    return _spark_runner_module().SparkRunner(jetspark_spark_session, member_count=2)

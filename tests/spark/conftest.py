"""The one Spark session of the test run, and shipping test code to Spark's Python workers.

The session is `local[2]` (two task slots, default parallelism 2), with no web UI and WARN logs
(jetspark's embedded settings). Everything in the `tests` package (test modules, `dags.py`) is
pickled by value with cloudpickle, so processors defined in tests reach the workers, which
cannot import `tests`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import cloudpickle
import pytest

import tests

cloudpickle.register_pickle_by_value(tests)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from jetspark.runners.spark.session import get_session

    session = get_session(
        "local[2]",
        extra_conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"},
    )
    yield session
    session.stop()

"""Every DAG shape of `tests/e2e/shapes.py` on Spark: the expected items, as on the local runner."""

from __future__ import annotations

from typing import Any

import pytest

from jetspark.core.config import JobConfig
from jetspark.runners.local import LocalRunner
from jetspark.runners.spark import SparkRunner
from tests.e2e.shapes import SHAPES, normalized

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_gives_the_expected_items_on_three_members(spark: Any, name: str) -> None:
    config = JobConfig(member_count=3)
    dag, expected = SHAPES[name](local_parallelism=2)
    job = SparkRunner(spark).run(dag, config, timeout=120)
    local_dag, _ = SHAPES[name](local_parallelism=2)
    local = LocalRunner().run(local_dag, config, timeout=120)
    for sink, items in expected.items():
        assert normalized(job.result(sink)) == normalized(items), sink
        assert normalized(job.result(sink)) == normalized(local.result(sink)), sink
    assert job.metrics() == local.metrics()

"""Every shape of `shapes.py` on the local runner: 1 and 3 members, local parallelism 1 and 2, and
under back-pressure; the sinks receive exactly the plain-Python result every time (so the results
of all settings are identical too)."""

from __future__ import annotations

import pytest

from jetspark.core import JobConfig
from jetspark.runners.local import LocalRunner
from tests.e2e.shapes import SHAPES, normalized

SETTINGS = [
    # (members, local parallelism, outbox batch size, queue size)
    (1, 1, 1024, 1024),
    (1, 2, 1024, 1024),
    (3, 1, 1024, 1024),
    (3, 2, 1024, 1024),
    (3, 2, 1, 1),
]


@pytest.mark.parametrize(("members", "lp", "batch", "queue"), SETTINGS, ids=lambda v: str(v))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_shape_gives_the_plain_python_result(
    shape: str, members: int, lp: int, batch: int, queue: int
) -> None:
    dag, expected = SHAPES[shape](local_parallelism=lp, queue_size=queue)
    job = LocalRunner(members, batch_size=batch).run(dag, JobConfig(), timeout=60)
    for sink, items in expected.items():
        assert normalized(job.result(sink)) == normalized(items), sink

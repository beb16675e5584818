"""Engine settings the processor tests run under: one member or three, roomy or back-pressured.

`Setting.edge(a, b)` makes an edge with the setting's queue size and `Setting.run(dag)` runs a DAG
on the local runner with the setting's member count and outbox batch size; under pressure (batch
and queue of 1) nearly every second offer is rejected, which exercises the re-offer paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs
import pytest

from jetspark.core import DAG, Edge, JobConfig, Vertex
from jetspark.runners.local import LocalJob, LocalRunner


@attrs.frozen
class Setting:
    members: int
    batch_size: int
    queue_size: int

    def edge(self, source: Vertex, destination: Vertex) -> Edge:
        return Edge.between(source, destination).with_queue_size(self.queue_size)

    def runner(self) -> LocalRunner:
        return LocalRunner(self.members, batch_size=self.batch_size)

    def run(self, dag: DAG, config: JobConfig | None = None) -> LocalJob:
        return self.runner().run(dag, config, timeout=60)

    def __str__(self) -> str:
        pressure = "pressure" if self.batch_size == 1 else "roomy"
        return f"m{self.members}-{pressure}"


ROOMY = Setting(members=1, batch_size=1024, queue_size=1024)
PRESSURE = Setting(members=1, batch_size=1, queue_size=1)
SETTINGS = [ROOMY, PRESSURE, Setting(3, 1024, 1024), Setting(3, 1, 1)]
SINGLE_MEMBER = [ROOMY, PRESSURE]


@pytest.fixture(params=SETTINGS, ids=str)
def setting(request: Any) -> Setting:
    """Every setting: 1 or 3 members, with and without back-pressure."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=SINGLE_MEMBER, ids=str)
def single(request: Any) -> Setting:
    """One member, one processor per vertex: output order is deterministic."""
    return request.param  # type: ignore[no-any-return]


def apply_steps(steps: Iterable[tuple[str, Callable[[Any], Any]]], items: Iterable[Any]) -> list[Any]:
    """What a chain of one-step vertices emits, computed in plain Python (None outputs dropped)."""
    current = list(items)
    for kind, fn in steps:
        if kind == "map":
            current = [y for y in map(fn, current) if y is not None]
        elif kind == "filter":
            current = [x for x in current if fn(x)]
        else:
            current = [y for x in current for y in fn(x) if y is not None]
    return current


@pytest.fixture
def reference() -> Callable[[Iterable[tuple[str, Callable[[Any], Any]]], Iterable[Any]], list[Any]]:
    """`apply_steps`: the plain-Python meaning of map/filter/flat_map steps."""
    return apply_steps

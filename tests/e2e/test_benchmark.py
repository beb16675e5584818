"""The hot-path budget: 1M ints -> map x*2 -> filter x%3 != 0 -> count by str(x%1000) on the local
runner must cost at most 3x a bare Python loop doing the same.

Both are measured in CPU time of this process (`time.process_time`, all threads), so that other
processes on a shared machine do not skew the ratio; each is the best of a few interleaved runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge
from jetspark.runners.local import LocalRunner

N = 1_000_000


def bare_loop() -> dict[str, int]:
    counts: dict[str, int] = {}
    for x in range(N):
        y = x * 2
        if y % 3 != 0:
            key = str(y % 1000)
            counts[key] = counts.get(key, 0) + 1
    return counts


def double(x: int) -> int:
    return x * 2


def not_divisible_by_3(x: int) -> bool:
    return x % 3 != 0


def key_of(x: int) -> str:
    return str(x % 1000)


def pipeline(construction: str) -> Callable[[], dict[str, int]]:
    """The benchmark DAG, built one of three ways (see BUDGETS)."""

    def run() -> dict[str, int]:
        dag = DAG()
        source = dag.new_vertex("source", P.from_iterable(range(N)))
        steps = P.Chain().map(double).filter(not_divisible_by_3)
        if construction == "steps-in-aggregation":
            counts = P.aggregate_by_key(dag, "counts", source, key_of, P.counting(), steps=steps)
        else:
            if construction == "fused-vertex":
                last = dag.new_vertex("steps", P.fused(steps))
                dag.edge(Edge.between(source, last))
            else:
                doubled = dag.new_vertex("map", P.map(double))
                last = dag.new_vertex("filter", P.filter(not_divisible_by_3))
                dag.edge(Edge.between(source, doubled))
                dag.edge(Edge.between(doubled, last))
            counts = P.aggregate_by_key(dag, "counts", last, key_of, P.counting())
        sink = dag.new_vertex("sink", P.collect())
        dag.edge(Edge.between(counts, sink))
        return dict(LocalRunner(1).run(dag, timeout=120).result("sink"))

    return run


def cpu_seconds(fn: Callable[[], dict[str, int]]) -> tuple[float, dict[str, int]]:
    started = time.process_time()
    result = fn()
    return time.process_time() - started, result


#: Ratio to the bare loop each construction must keep. On an idle 2-core machine all three take
#: about 2-2.6x; on a loaded one up to about 3x. The 3x budget is asserted for the cheapest
#: construction (the map and filter run inside the aggregation's first stage); the others get a
#: little headroom, so that a busy machine does not fail the build, and still catch regressions.
BUDGETS = {"steps-in-aggregation": 3.0, "fused-vertex": 3.5, "one-vertex-per-step": 4.0}


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("construction", list(BUDGETS))
def test_pipeline_cost_relative_to_a_bare_loop(construction: str) -> None:
    bare_times, pipeline_times = [], []
    expected: dict[str, int] = {}
    for _ in range(3):
        seconds, expected = cpu_seconds(bare_loop)
        bare_times.append(seconds)
        seconds, result = cpu_seconds(pipeline(construction))
        pipeline_times.append(seconds)
        assert result == expected
    ratio = min(pipeline_times) / min(bare_times)
    print(
        f"{construction}: bare {min(bare_times):.3f} s, pipeline {min(pipeline_times):.3f} s, ratio {ratio:.2f}"
    )
    assert ratio <= BUDGETS[construction]

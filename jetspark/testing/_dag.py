"""Helpers to run a whole DAG and check what its collecting sinks received.

Any runner with `submit(dag, config) -> job`, where the job has `join(timeout)` and
`result(vertex)`, will do: the local runner by default, the Spark runner where Spark is the subject.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.testing._report import describe_mismatch, same_items_any_order


class Job(Protocol):
    def join(self, timeout: float | None = None) -> Any: ...

    def result(self, vertex: str) -> list[Any]: ...


class Runner(Protocol):
    def submit(self, dag: DAG, config: JobConfig | None = None) -> Any: ...


def run_dag(
    dag: DAG, config: JobConfig | None = None, runner: Runner | None = None, timeout: float = 60.0
) -> Job:
    """Submit `dag` (to a one-member local runner unless `runner` is given) and wait for its end."""
    if runner is None:
        from jetspark.runners.local import LocalRunner

        runner = LocalRunner()
    job: Job = runner.submit(dag, config)
    job.join(timeout)
    return job


def assert_dag_output(
    dag: DAG,
    expected: Mapping[str, Sequence[Any]],
    *,
    config: JobConfig | None = None,
    runner: Runner | None = None,
    any_order: bool = True,
    timeout: float = 60.0,
) -> Job:
    """Run `dag` and check that each collecting sink vertex named in `expected` received exactly
    those items (in any order by default: processors of a vertex run in parallel)."""
    job = run_dag(dag, config, runner, timeout)
    problems = []
    for vertex, want in expected.items():
        got = job.result(vertex)
        ok = same_items_any_order(want, got) if any_order else list(want) == list(got)
        if not ok:
            problems.append(
                f"sink vertex {vertex!r}:\n" + describe_mismatch([list(want)], [got], lambda _o: any_order)
            )
    if problems:
        raise AssertionError("DAG output differs from the expected output\n" + "\n".join(problems))
    return job

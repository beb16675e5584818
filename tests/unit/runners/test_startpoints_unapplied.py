"""A written startpoint that a plan cannot apply stays in the store and is named in a warning:
a vertex the job lacks, a vertex that takes no startpoints, a processor that does not read the
split (`runners.startpoints.fan_out`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from jetspark import processors as P
from jetspark.checkpoint.startpoints import Oldest, SourcePartition, StartpointStore
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.planning.pipeline import build_plan
from jetspark.runners.startpoints import fan_out


def plan_and_config(tmp_path: Path) -> tuple[object, JobConfig]:
    (tmp_path / "in").mkdir(exist_ok=True)
    dag = DAG()
    lines = dag.new_vertex("lines", P.directory_stream(str(tmp_path / "in"), "*.log"), 1)
    dag.edge(Edge.between(lines, dag.new_vertex("sink", P.collect(), 1)))
    config = JobConfig(
        name="job",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        checkpoint_root=str(tmp_path / "ck"),
    )
    return build_plan(dag, config, member_count=1), config


@pytest.mark.parametrize(
    ("vertex", "processor", "why"),
    [
        ("nope", None, "the job has no vertex 'nope' (its vertices: lines, sink)"),
        ("sink", None, "vertex 'sink' is not a source that takes startpoints"),
        ("lines", 7, "it was written for processor 7, but split 'a.log' is read by processor 0"),
    ],
)
def test_a_startpoint_the_plan_cannot_apply_is_kept_and_named_in_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, vertex: str, processor: int | None, why: str
) -> None:
    plan, config = plan_and_config(tmp_path)
    store = StartpointStore(str(tmp_path / "ck"), "job")
    store.write(SourcePartition(vertex, "a.log"), Oldest(), processor)
    with caplog.at_level(logging.WARNING, logger="jetspark.startpoints"):
        assert fan_out(config, "job", plan) == {}  # type: ignore[arg-type]
    assert f"job 'job': startpoint {vertex}/a.log not applied: {why}" in caplog.text
    assert [p for p, _, _ in store.written()] == [SourcePartition(vertex, "a.log")]


def test_a_startpoint_the_plan_applies_warns_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plan, config = plan_and_config(tmp_path)
    StartpointStore(str(tmp_path / "ck"), "job").write(SourcePartition("lines", "a.log"), Oldest())
    with caplog.at_level(logging.WARNING, logger="jetspark.startpoints"):
        assert set(fan_out(config, "job", plan)) == {("lines", 0)}  # type: ignore[arg-type]
    assert "not applied" not in caplog.text

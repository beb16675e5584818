"""The planning pipeline: a job is validated, fused and cut into stages once; what comes out is
frozen; each vertex's capabilities are read once into the plan."""

from __future__ import annotations

import pickle
from typing import Any

import attrs
import cloudpickle
import pytest

from jetspark.core import DAG, AbstractProcessor, Edge, JobConfig, ProcessorSupplier
from jetspark.core.errors import RestartableError
from jetspark.core.suppliers import FirstMemberOnly, VertexCapability
from jetspark.planning import pipeline
from jetspark.planning.explain import explain
from jetspark.planning.pipeline import build_plan, plan_execution, prepare, replace_meta_suppliers
from jetspark.processors import collect, files, from_iterable
from jetspark.processors import filter as filter_p
from jetspark.processors import map as map_p
from jetspark.runners.local import LocalRunner
from jetspark.runners.spark.epoch_tables import write_epochs
from jetspark.runners.spark.sinks import write_dataframe
from jetspark.runners.spark.sources import DataFrameSource, RddSource
from tests.counting import CountingDAG


def chain(dag: DAG | None = None, count: int = 10) -> DAG:
    dag = dag if dag is not None else DAG()
    source = dag.new_vertex("source", from_iterable(range(count)))
    double = dag.new_vertex("double", map_p(lambda x: 2 * x))
    odd = dag.new_vertex("small", filter_p(lambda x: x < 10))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, double).distributed())
    dag.edge(Edge.between(double, odd))
    dag.edge(Edge.between(odd, sink))
    return dag


# ---- frozen records ---------------------------------------------------------------------------


def test_every_record_of_a_plan_refuses_assignment() -> None:
    plan = build_plan(chain(), JobConfig(), 2)
    vertex = plan.vertices["double"]
    edge = plan.edges[0]
    stage = plan.stages.stages[0]
    targets = plan.consumers_of(edge, (0, 0))
    for record, field, value in [
        (plan, "job_id", "other"),
        (plan, "member_count", 5),
        (plan, "vertices", {}),
        (vertex, "local_parallelism", 9),
        (vertex, "suppliers", ()),
        (vertex, "capabilities", frozenset()),
        (edge, "routing", None),
        (stage, "vertices", ()),
        (plan.stages, "stages", ()),
        (plan.pruning, "deployed", ()),
        (targets, "consumers", ()),
    ]:
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(record, field, value)


def test_collections_in_a_plan_are_tuples_and_read_only_maps() -> None:
    plan = build_plan(chain(), JobConfig(), 2)
    vertex = plan.vertices["small"]
    assert isinstance(vertex.suppliers, tuple) and len(vertex.suppliers) == 2
    assert isinstance(vertex.inbound, tuple) and isinstance(vertex.outbound, tuple)
    assert isinstance(plan.pruning.declined, tuple) and isinstance(plan.pruning.vertices, tuple)
    with pytest.raises(TypeError):
        plan.vertices["other"] = vertex  # type: ignore[index]
    with pytest.raises(TypeError):
        plan.stages.stage_of["other"] = 0  # type: ignore[index]
    assert not hasattr(plan, "logger")


def test_a_plan_pickles_as_it_is_and_stays_read_only() -> None:
    plan = build_plan(chain(), JobConfig(), 3)
    once = pickle.loads(cloudpickle.dumps(plan))
    for copy in (once, pickle.loads(cloudpickle.dumps(once))):  # as a task gets it, and again
        assert list(copy.vertices) == list(plan.vertices) == ["source", "double", "small", "sink"]
        assert copy.stages.stage_of == plan.stages.stage_of
        assert copy.vertices["sink"].members() == plan.vertices["sink"].members()
        with pytest.raises(TypeError):
            copy.vertices["x"] = copy.vertices["sink"]  # type: ignore[index]


def test_pruning_narrows_the_draft_and_the_frozen_plan_keeps_the_result() -> None:
    dag = DAG()
    source = dag.new_vertex("source", FirstMemberOnly(ProcessorSupplier.of(AbstractProcessor)), 1)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.between(source, sink))  # local: members without a source processor feed nothing
    plan = build_plan(dag, JobConfig(), 3)
    assert plan.vertices["source"].members() == [0]
    assert plan.vertices["sink"].suppliers[1:] == (None, None)  # pruned: no producer on 1 and 2
    assert [p.vertex for p in plan.pruning.vertices] == ["sink"]
    assert plan.pruning.deployed == (0,)


# ---- planned once -----------------------------------------------------------------------------


def test_a_local_job_is_validated_fused_and_cut_once_however_often_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cuts: list[DAG] = []
    real = pipeline.build_stages

    def counting_build_stages(dag: DAG) -> Any:
        cuts.append(dag)
        return real(dag)

    monkeypatch.setattr(pipeline, "build_stages", counting_build_stages)
    failures = [RestartableError("once"), RestartableError("twice")]

    def flaky(x: int) -> int:
        if x == 3 and failures:
            raise failures.pop()
        return x

    dag = CountingDAG()
    source = dag.new_vertex("source", from_iterable(range(6)))
    step = dag.new_vertex("flaky", map_p(flaky))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, step).distributed()).edge(Edge.between(step, sink))
    job = LocalRunner(2).run(dag, JobConfig(), timeout=60)
    assert sorted(job.result("sink")) == list(range(6))
    assert job.restarts == 2  # three executions, each planned (its meta suppliers asked) anew
    assert dag.validations == 1
    assert len(cuts) == 1


def test_explain_validates_once() -> None:
    dag = chain(CountingDAG())
    assert "stage 0" in explain(dag)
    assert dag.validations == 1  # type: ignore[attr-defined]


def test_each_execution_is_planned_from_the_prepared_dag_without_validating_it_again() -> None:
    dag = chain(CountingDAG())
    prepared = prepare(dag, JobConfig())
    first = plan_execution(prepared, 2, job_id="j")
    second = plan_execution(prepared, 3, job_id="j")
    assert dag.validations == 1  # type: ignore[attr-defined]
    assert first.stages is second.stages is prepared.stages
    assert (first.member_count, second.member_count) == (2, 3)
    # fused once: the map folded into the filter after it
    assert list(first.vertices) == list(prepared.names) == ["source", "small", "sink"]


# ---- capabilities -----------------------------------------------------------------------------


class _FakeRdd:
    def __init__(self, partitions: int) -> None:
        self.partitions = partitions

    def getNumPartitions(self) -> int:
        return self.partitions


class _FakeDataFrame:
    rdd = _FakeRdd(2)
    columns = ["n"]


def capabilities_dag(tmp_dir: str) -> DAG:
    dag = DAG()
    rdd = dag.new_vertex("rdd", RddSource(_FakeRdd(2)))
    frame = dag.new_vertex("frame", DataFrameSource(_FakeDataFrame()))
    plain = dag.new_vertex("plain", from_iterable([1]))
    for name, supplier, upstream in [
        ("files", files(tmp_dir), rdd),
        ("dataframe", write_dataframe(), frame),
        ("tables", write_epochs(f"{tmp_dir}/tables"), plain),
        ("collected", collect(), plain),
    ]:
        dag.edge(
            Edge.from_(upstream, len(dag.outbound_edges(upstream.name))).to(dag.new_vertex(name, supplier))
        )
    return dag


def test_each_built_in_kind_has_its_capabilities_in_the_prepared_dag_and_the_plan(tmp_path: Any) -> None:
    dag = capabilities_dag(str(tmp_path / "out"))
    prepared = prepare(dag, JobConfig())
    cap = VertexCapability
    expected = {
        "rdd": {cap.READS_RDD},
        "frame": {cap.READS_RDD, cap.READS_DATAFRAME},
        "plain": set(),
        "files": {cap.WRITES_FILES},
        "dataframe": {cap.WRITES_DATAFRAME},
        "tables": {cap.WRITES_EPOCH_TABLES},
        "collected": set(),
    }
    assert {name: set(found) for name, found in prepared.capabilities.items()} == expected
    assert prepared.with_capability(cap.READS_RDD) == ["rdd", "frame"]
    assert prepared.with_capability(cap.WRITES_FILES) == ["files"]


def test_the_plan_carries_the_capabilities_and_a_replaced_supplier_gets_its_own(tmp_path: Any) -> None:
    dag = DAG()
    frame = dag.new_vertex("frame", DataFrameSource(_FakeDataFrame()))
    out = dag.new_vertex("out", files(str(tmp_path / "out")))
    dag.edge(Edge.between(frame, out))
    prepared = prepare(dag, JobConfig())
    replaced = replace_meta_suppliers(prepared, {"frame": from_iterable([1, 2])})
    assert replaced is not prepared and replaced.stages is prepared.stages
    assert prepared.capabilities["frame"] == {VertexCapability.READS_RDD, VertexCapability.READS_DATAFRAME}
    assert replaced.capabilities["frame"] == frozenset()  # read again from the new supplier
    assert isinstance(prepared.meta_supplier("frame"), DataFrameSource)  # the old record is unchanged
    plan = plan_execution(replaced, 2)
    assert plan.vertices["out"].capabilities == {VertexCapability.WRITES_FILES}
    assert plan.with_capability(VertexCapability.WRITES_FILES) == ["out"]
    assert plan.vertices["frame"].capabilities == frozenset()


def test_a_fused_vertex_has_no_capability() -> None:
    prepared = prepare(chain(), JobConfig())
    assert dict(prepared.capabilities) == {"source": frozenset(), "small": frozenset(), "sink": frozenset()}

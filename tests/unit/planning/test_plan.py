"""build_plan and ExecutionPlan: parallelism, contexts, suppliers, and who sends to whom."""

from __future__ import annotations

import pickle
import threading
from collections.abc import Sequence

import cloudpickle
import pytest

from jetspark.core import (
    DAG,
    AbstractProcessor,
    DagValidationError,
    Edge,
    JobConfig,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    Vertex,
)
from jetspark.core.suppliers import MemberSuppliers
from jetspark.planning.pipeline import build_plan
from jetspark.planning.plan import create_processors


class Noop(AbstractProcessor):
    pass


class Preferring(ProcessorMetaSupplier):
    """Gives every member the Noop supplier, except members listed in `absent`."""

    def __init__(self, preferred: int = -1, absent: Sequence[int] = ()) -> None:
        self.preferred = preferred
        self.absent = set(absent)

    def preferred_local_parallelism(self) -> int:
        return self.preferred

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        supplier = ProcessorSupplier.of(Noop)
        return {m: None if m in self.absent else supplier for m in member_indexes}


def two_vertices(
    edge: str = "unicast", up_lp: int = 2, down_lp: int = 2, distributed: bool = False
) -> tuple[DAG, Edge]:
    dag = DAG()
    up = dag.new_vertex("up", Noop, up_lp)
    down = dag.new_vertex("down", Noop, down_lp)
    e = Edge.between(up, down)
    if edge == "partitioned":
        e.partitioned(lambda item: item)
    elif edge != "unicast":
        getattr(e, edge)()
    if distributed:
        e.distributed()
    dag.edge(e)
    return dag, e


# ---- parallelism and contexts ----------------------------------------------------------------


def test_local_parallelism_vertex_then_preference_up_to_the_job_default() -> None:
    dag = DAG()
    dag.new_vertex("explicit", Preferring(preferred=5), 3)
    dag.new_vertex("preferred", Preferring(preferred=5))
    dag.new_vertex("modest", Preferring(preferred=1))
    dag.new_vertex("default", Preferring())
    plan = build_plan(dag, JobConfig(default_local_parallelism=2), 1)
    # a preference above the default is capped at it (Jet's `determineLocalParallelism`)
    names = ("explicit", "preferred", "modest", "default")
    assert [plan.vertex_plan(n).local_parallelism for n in names] == [3, 2, 1, 2]


def test_the_job_default_local_parallelism_is_one() -> None:
    dag = DAG()
    dag.new_vertex("v", Noop)
    assert build_plan(dag, JobConfig(), 3).vertex_plan("v").local_parallelism == 1


def test_a_bad_preferred_parallelism_names_the_vertex() -> None:
    dag = DAG()
    dag.new_vertex("greedy", Preferring(preferred=0))
    with pytest.raises(DagValidationError, match=r"vertex 'greedy'.*got 0"):
        build_plan(dag, JobConfig(), 1)


def test_member_count_must_be_positive() -> None:
    dag = DAG()
    dag.new_vertex("v", Noop)
    with pytest.raises(DagValidationError, match="member count must be >= 1, got 0"):
        build_plan(dag, JobConfig(), 0)


def test_processor_context_places_the_processor() -> None:
    dag = DAG()
    dag.new_vertex("v", Noop, 3)
    config = JobConfig()
    plan = build_plan(dag, config, 2, job_id="job", execution_id="exe", partition_count=12)
    context = plan.processor_context("v", 1, 2)
    assert (context.job_id, context.execution_id, context.job_config) == ("job", "exe", config)
    assert (context.vertex_name, context.member_index, context.local_processor_index) == ("v", 1, 2)
    assert context.global_processor_index == 1 * 3 + 2
    assert context.total_parallelism == 6 and context.member_count == 2 and context.partition_count == 12
    assert context.member_partitions == (1, 3, 5, 7, 9, 11)
    assert context.processor_partitions == (5, 11)
    assert context.partition_assignment == {0: (0, 2, 4, 6, 8, 10), 1: (1, 3, 5, 7, 9, 11)}
    assert context.logger.name == "jetspark.vertex.v"


# ---- suppliers -------------------------------------------------------------------------------


def test_create_processors_makes_local_parallelism_processors() -> None:
    dag = DAG()
    dag.new_vertex("v", Noop, 3)
    processors = create_processors(build_plan(dag, JobConfig(), 2), "v", 1)
    assert len(processors) == 3 and len({id(p) for p in processors}) == 3


def test_a_member_without_supplier_runs_no_processor_of_the_vertex() -> None:
    dag = DAG()
    dag.vertex(Vertex("v", Preferring(absent=[1]), 2))
    plan = build_plan(dag, JobConfig(), 3)
    assert plan.vertex_plan("v").members() == [0, 2]
    assert plan.vertex_plan("v").processor_ids() == [(0, 0), (0, 1), (2, 0), (2, 1)]
    assert create_processors(plan, "v", 1) == []


def test_running_processor_index_counts_only_the_processors_that_run() -> None:
    """Members 0 and 2 of 3 run the vertex (2 each): the global index and total parallelism
    count member 1's two processors too (as Jet's do); the running index and count do not, so
    a source dealing its input by them leaves nothing unread."""
    dag = DAG()
    dag.vertex(Vertex("v", Preferring(absent=[1]), 2))
    plan = build_plan(dag, JobConfig(), 3)
    contexts = [plan.processor_context("v", m, i) for m, i in plan.vertex_plan("v").processor_ids()]
    assert [c.global_processor_index for c in contexts] == [0, 1, 4, 5]
    assert {c.total_parallelism for c in contexts} == {6}
    assert [c.running_processor_index for c in contexts] == [0, 1, 2, 3]
    assert {c.running_processor_count for c in contexts} == {4}
    every = build_plan(two_vertices()[0], JobConfig(), 2).processor_context("up", 1, 1)
    assert (every.running_processor_index, every.running_processor_count) == (3, 4)


class WrongCount(ProcessorSupplier):
    def get(self, count: int) -> list[Noop]:
        return [Noop() for _ in range(count + 1)]


class NotAProcessor(ProcessorSupplier):
    def get(self, count: int) -> list[object]:  # type: ignore[override]
        return [object() for _ in range(count)]


def test_a_supplier_returning_the_wrong_number_names_vertex_and_member() -> None:
    dag = DAG()
    dag.new_vertex("v", WrongCount(), 2)
    with pytest.raises(
        DagValidationError, match=r"vertex 'v': supplier returned 3 processors on member 1, expected 2"
    ):
        create_processors(build_plan(dag, JobConfig(), 2), "v", 1)


def test_a_supplier_returning_a_non_processor_names_the_vertex() -> None:
    dag = DAG()
    dag.new_vertex("v", NotAProcessor(), 1)
    with pytest.raises(DagValidationError, match=r"vertex 'v': supplier returned object, not a Processor"):
        create_processors(build_plan(dag, JobConfig(), 1), "v", 0)


# ---- routing targets -------------------------------------------------------------------------


def test_a_local_edge_stays_on_the_producers_member() -> None:
    dag, edge = two_vertices("unicast")
    plan = build_plan(dag, JobConfig(), 2)
    assert plan.consumers_of(plan.edge_def(edge), (1, 0)).consumers == ((1, 0), (1, 1))


def test_a_distributed_edge_reaches_every_member() -> None:
    dag, edge = two_vertices("broadcast", distributed=True)
    plan = build_plan(dag, JobConfig(), 2)
    assert plan.consumers_of(plan.edge_def(edge), (1, 0)).consumers == ((0, 0), (0, 1), (1, 0), (1, 1))


def test_an_isolated_edge_pairs_processors() -> None:
    dag, edge = two_vertices("isolated", up_lp=2, down_lp=4)
    plan = build_plan(dag, JobConfig(), 1)
    assert plan.consumers_of(plan.edge_def(edge), (0, 0)).consumers == ((0, 0), (0, 2))
    assert plan.consumers_of(plan.edge_def(edge), (0, 1)).consumers == ((0, 1), (0, 3))
    assert plan.producers_of(plan.edge_def(edge), (0, 3)) == [(0, 1)]


def test_an_isolated_edge_to_fewer_processors_sends_each_upstream_to_one_downstream() -> None:
    """Jet 4 and later: with more upstream than downstream processors, upstream i sends to
    downstream i % downstream count of its own member, and to no other."""
    dag, edge = two_vertices("isolated", up_lp=5, down_lp=2)
    plan = build_plan(dag, JobConfig(), 2)
    definition = plan.edge_def(edge)
    for member in range(2):
        for local in range(5):
            assert plan.consumers_of(definition, (member, local)).consumers == ((member, local % 2),)
    assert plan.producers_of(definition, (1, 0)) == [(1, 0), (1, 2), (1, 4)]
    assert plan.producers_of(definition, (1, 1)) == [(1, 1), (1, 3)]


def test_a_fanout_edge_groups_consumers_by_member() -> None:
    dag, edge = two_vertices("fanout", distributed=True)
    plan = build_plan(dag, JobConfig(), 3)
    targets = plan.consumers_of(plan.edge_def(edge), (0, 0))
    assert targets.consumers_by_member == ((0, 1), (2, 3), (4, 5))


def test_a_partitioned_edge_to_a_member_without_the_owner_is_an_error() -> None:
    dag = DAG()
    up = dag.new_vertex("up", Noop, 1)
    down = dag.vertex(Vertex("down", Preferring(absent=[1]), 1))
    edge = Edge.between(up, down).partitioned(lambda item: item).distributed()
    dag.edge(edge)
    plan = build_plan(dag, JobConfig(), 2, partition_count=4)
    with pytest.raises(
        DagValidationError, match=r"partition 1 belongs to processor \(1, 0\) of vertex 'down'"
    ):
        plan.consumers_of(plan.edge_def(edge), (0, 0))


def test_producers_of_is_the_inverse_of_consumers_of() -> None:
    for routing in ("unicast", "broadcast", "partitioned", "fanout"):
        for distributed in (False, True):
            dag, edge = two_vertices(routing, up_lp=2, down_lp=3, distributed=distributed)
            plan = build_plan(dag, JobConfig(), 2, partition_count=20)
            producers = plan.vertex_plan("up").processor_ids()
            for consumer in plan.vertex_plan("down").processor_ids():
                expected = [
                    p for p in producers if consumer in plan.consumers_of(plan.edge_def(edge), p).consumers
                ]
                assert plan.producers_of(plan.edge_def(edge), consumer) == expected, (
                    routing,
                    distributed,
                    consumer,
                )


def test_processors_of_a_rejected_supplier_result_are_closed() -> None:
    """The seed: close() is called for every processor made, even when init() never ran."""
    from jetspark.core import DAG, AbstractProcessor, JobConfig, ProcessorSupplier
    from jetspark.planning.pipeline import build_plan

    closed: list[int] = []

    class Closing(AbstractProcessor):
        def close(self) -> None:
            closed.append(id(self))

    class TooMany(ProcessorSupplier):
        def get(self, count: int) -> list[Closing]:
            return [Closing() for _ in range(count + 1)]

    dag = DAG()
    dag.new_vertex("v", TooMany(), local_parallelism=2)
    plan = build_plan(dag, JobConfig(), 1)
    with pytest.raises(DagValidationError, match="vertex 'v': supplier returned 3 processors"):
        create_processors(plan, "v", 0)
    assert len(closed) == 3


def test_a_plan_pickles_without_the_dag_or_its_meta_suppliers() -> None:
    """Executors get the plan; a meta supplier that cannot be pickled stays with the coordinator."""

    class LockedMeta(ProcessorMetaSupplier):
        def __init__(self) -> None:
            self.lock = threading.Lock()  # not picklable

        def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
            return lambda member: ProcessorSupplier.of(Noop)

    dag = DAG()
    up = dag.new_vertex("up", LockedMeta(), 2)
    down = dag.new_vertex("down", Noop, 1)
    dag.edge(Edge.between(up, down).partitioned(lambda x: x % 7).distributed().with_priority(3))
    plan = build_plan(dag, JobConfig(), 2)
    copy = pickle.loads(cloudpickle.dumps(plan))
    (edge,) = copy.edges
    assert (edge.index, edge.source_name, edge.destination_name, edge.priority) == (0, "up", "down", 3)
    assert copy.vertices["down"].inbound[0] is edge and copy.vertices["up"].outbound[0] is edge
    assert edge.key_fn(15) == 1
    assert copy.consumers_of(edge, (1, 1)).consumers == ((0, 0), (1, 0))

"""Bad input is refused by submit(), in the caller's thread, before anything runs."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from jetspark import processors as P
from jetspark.core import DAG, DagValidationError, Edge, JobConfig, ProcessingGuarantee, ProcessorMetaSupplier
from jetspark.core.suppliers import MemberSuppliers
from jetspark.runners.local import LocalRunner


class PrefersNoProcessors(ProcessorMetaSupplier):
    """A meta supplier whose preferred local parallelism (0) only the plan can refuse."""

    def preferred_local_parallelism(self) -> int:
        return 0

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        return {m: None for m in member_indexes}


def test_a_plan_error_is_raised_by_submit_not_later_by_join() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(3)))
    sink = dag.new_vertex("sink", PrefersNoProcessors())
    dag.edge(Edge.between(source, sink))
    with pytest.raises(DagValidationError, match=r"vertex 'sink': preferred local parallelism must be"):
        LocalRunner().submit(dag)


def test_a_validation_error_names_the_edge_at_submit() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(3)))
    sink = dag.new_vertex("sink", P.collect())
    edge = Edge.between(source, sink)
    edge.routing = edge.routing.PARTITIONED  # a partitioned edge without its key function
    dag.edge(edge)
    with pytest.raises(DagValidationError, match="partitioned edge needs a key function"):
        LocalRunner().submit(dag)


@pytest.mark.parametrize(
    ("count", "error"), [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError)]
)
def test_member_count_is_checked_alike_by_the_job_config_and_the_local_runner(
    count: object, error: type[Exception]
) -> None:
    """Rule: a member count must be an int >= 1 wherever it is given; `LocalRunner(member_count=0)`
    used to run silently on one member while `JobConfig(member_count=0)` raised."""
    with pytest.raises(error, match=r"JobConfig\.member_count must be an int >= 1"):
        JobConfig(member_count=count)  # type: ignore[arg-type]
    with pytest.raises(error, match=r"LocalRunner: member_count must be an int >= 1"):
        LocalRunner(member_count=count)  # type: ignore[arg-type]
    dag = DAG()
    dag.new_vertex("source", P.generator_stream(count=10**6, items_per_second=100))
    job = LocalRunner().submit(dag, JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE))
    job.suspend()
    with pytest.raises(error, match=r"resume\(\): member_count must be an int >= 1"):
        job.resume(member_count=count)  # type: ignore[arg-type]
    job.cancel()

"""Jet's `DetermineLocalParallelismTest` (hazelcast-jet-core, `impl.execution.init`), ported.

A vertex's local parallelism comes from the vertex's own setting, else its meta supplier's
`preferred_local_parallelism()`, else the default. Jet's default is the member's cooperative
thread count (2 in the test); jetspark's is `JobConfig.default_local_parallelism`, set to 2 here.
Jet's meta supplier asserts the parallelism it is given in `init`; here it records
`MetaSupplierContext.local_parallelism` and the test checks it, after planning the job as the
local runner does (`planning.pipeline.prepare` and `plan_execution`, on one member). Each test is
named after the Jet case it ports.
"""

from __future__ import annotations

from collections.abc import Sequence

from jetspark import (
    DAG,
    AbstractProcessor,
    JobConfig,
    MetaSupplierContext,
    ProcessorMetaSupplier,
    ProcessorSupplier,
)
from jetspark.core.suppliers import MemberSuppliers
from jetspark.planning.pipeline import plan_execution, prepare

DEFAULT_PARALLELISM = 2


class Noop(AbstractProcessor):
    pass


class RecordingMetaSupplier(ProcessorMetaSupplier):
    def __init__(self, preferred: int) -> None:
        self.preferred = preferred
        self.seen: list[int] = []

    def preferred_local_parallelism(self) -> int:
        return self.preferred

    def init(self, context: MetaSupplierContext) -> None:
        self.seen.append(context.local_parallelism)

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        return {index: ProcessorSupplier.of(Noop) for index in member_indexes}


def parallelism_with(preferred: int, specified: int) -> int:
    pms = RecordingMetaSupplier(preferred)
    dag = DAG()
    dag.new_vertex("x", pms, specified)
    plan = plan_execution(prepare(dag, JobConfig(default_local_parallelism=DEFAULT_PARALLELISM)), 1)
    assert len(pms.seen) == 1
    assert plan.vertices["x"].local_parallelism == pms.seen[0]
    return pms.seen[0]


def test_DetermineLocalParallelismTest__when_preferredLowerThanDefault_then_preferred() -> None:
    assert parallelism_with(1, -1) == 1


def test_DetermineLocalParallelismTest__when_preferredGreaterThanDefault_then_default() -> None:
    assert parallelism_with(4, -1) == DEFAULT_PARALLELISM


def test_DetermineLocalParallelismTest__when_preferredNotSet_then_default() -> None:
    assert parallelism_with(-1, -1) == DEFAULT_PARALLELISM


def test_DetermineLocalParallelismTest__when_vertexSpecifiesParallelism_then_overridesPreferred() -> None:
    assert parallelism_with(1, 8) == 8


def test_DetermineLocalParallelismTest__when_vertexSpecifiesParallelism_then_overridesDefault() -> None:
    assert parallelism_with(-1, 8) == 8

"""Jet's `TestSupportTest` (hazelcast-jet-core, `com.hazelcast.jet.core.test`), ported to the kit.

Jet's `TestSupport.verifyProcessor` is jetspark's `jetspark.testing.verify_processor`. Each test
is named after the Jet case it ports.

Differences:
- `test_processorMetaSupplierHasJetInstance`, `test_processorSupplierHasJetInstance`: Jet checks
  that the `JetInstance` given to the kit reaches the suppliers' contexts; jetspark has no
  instance object, so the port checks the same path with what a jetspark context carries from
  the test: the job config given with `.job_config(...)` and the vertex name.

`TestOutboxTest` and `ArrayDequeInboxTest` run against the engine's outbox and inbox, which the
kit uses itself: `tests/jet/test_jet_inbox_and_test_outbox.py`.

Skipped, with no counterpart: `WriteBufferedPTest` (2 cases): jetspark has no `writeBufferedP`
(create, add, flush and dispose a buffer); its buffered sink is `batches(write)`, one
`write(items, context)` call per inbox batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from jetspark import (
    AbstractProcessor,
    JobConfig,
    MetaSupplierContext,
    Processor,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    SupplierContext,
)
from jetspark import processors as P
from jetspark.core.suppliers import MemberSuppliers
from jetspark.testing import SAME_ITEMS_ANY_ORDER, verify_processor


class Noop(AbstractProcessor):
    pass


def test_TestSupportTest__test_compareAsSet() -> None:
    assert SAME_ITEMS_ANY_ORDER(["a", "b", "a"], ["a", "a", "b"])
    assert not SAME_ITEMS_ANY_ORDER(["a", "b", "a"], ["a", "b", "b"])


class ClosingSupplier(ProcessorSupplier):
    def __init__(self) -> None:
        self.closed = 0
        self.counts: list[int] = []

    def get(self, count: int) -> Sequence[Processor]:
        self.counts.append(count)
        return [Noop() for _ in range(count)]

    def close(self, error: BaseException | None) -> None:
        assert error is None
        self.closed += 1


def test_TestSupportTest__when_processorSupplierTested_then_completeCalled() -> None:
    supplier = ClosingSupplier()
    verify_processor(supplier).disable_snapshots().expect_output([])
    assert supplier.closed > 0, "the supplier's close() was not called"
    assert set(supplier.counts) == {1}
    assert supplier.closed == len(supplier.counts)  # closed once per run that made processors

    supplier = ClosingSupplier()  # once more behind a meta supplier
    verify_processor(ProcessorMetaSupplier.of(supplier)).disable_snapshots().expect_output([])
    assert supplier.closed > 0, "the supplier's close() was not called behind a meta supplier"


CONFIG = JobConfig(name="jet-test-support")


def test_TestSupportTest__test_processorMetaSupplierHasJetInstance() -> None:
    seen: list[MetaSupplierContext] = []

    class Meta(ProcessorMetaSupplier):
        def init(self, context: MetaSupplierContext) -> None:
            seen.append(context)

        def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
            return {index: ProcessorSupplier.of(Noop) for index in member_indexes}

    verify_processor(Meta()).job_config(CONFIG).vertex_name("under-test").disable_snapshots().expect_output(
        []
    )
    assert seen
    assert all(c.job_config.name == CONFIG.name and c.vertex_name == "under-test" for c in seen)


def test_TestSupportTest__test_processorSupplierHasJetInstance() -> None:
    seen: list[SupplierContext] = []

    class Supplier(ProcessorSupplier):
        def init(self, context: SupplierContext) -> None:
            seen.append(context)

        def get(self, count: int) -> Sequence[Processor]:
            assert count == 1
            return [Noop()]

    verify_processor(Supplier()).job_config(CONFIG).vertex_name(
        "under-test"
    ).disable_snapshots().expect_output([])
    assert seen
    assert all(c.job_config.name == CONFIG.name and c.vertex_name == "under-test" for c in seen)


def test_TestSupportTest__noop_sink_verifies() -> None:
    """Not a Jet case: the sink the Jet cases build on (`noopP`) under the kit with snapshots."""
    verify_processor(P.noop()).input([1, 2]).expect_output([])

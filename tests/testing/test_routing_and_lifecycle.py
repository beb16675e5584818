"""The kit routes like the runners do, and makes and closes processors like they do."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from kit_examples import Dedup

from jetspark import DAG, AbstractProcessor, BroadcastKey, Edge, JobConfig, ProcessorSupplier
from jetspark.engine.snapshot import decode_entries, encode_entry, entry_partition
from jetspark.planning.pipeline import build_plan
from jetspark.runners.wiring import restore_entries_for
from jetspark.testing import FailureKind, Layout, ProcessorVerificationError, verify_processor
from jetspark.testing._routing import InputRouting, Router

LAYOUTS = [Layout(1, 1), Layout(2, 1), Layout(1, 3), Layout(3, 2)]
KEYS: list[Any] = [*range(40), "a", "b", ("t", 1), 2.5, None, BroadcastKey("all"), BroadcastKey(7)]


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_snapshot_entries_go_where_the_runner_restores_them(layout: Layout) -> None:
    dag = DAG()
    dag.new_vertex("v", Dedup, layout.local_parallelism)
    plan = build_plan(dag, JobConfig(), layout.member_count)
    count = plan.arrangement.partition_count
    entries = [encode_entry(key, i, entry_partition(key, count)) for i, key in enumerate(KEYS)]
    router = Router(layout, count, [])
    restored: list[Any] = []
    for member, local in layout.processor_ids():
        runner = restore_entries_for({"v": entries}, plan, "v", member, local)
        kit = decode_entries(router.entries_for(entries, member * layout.local_parallelism + local))
        assert kit == runner
        restored.extend(key for key, _ in kit if not isinstance(key, BroadcastKey))
    assert sorted(map(repr, restored)) == sorted(repr(k) for k in KEYS if not isinstance(k, BroadcastKey))


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_partitioned_input_goes_where_a_distributed_partitioned_edge_sends_it(layout: Layout) -> None:
    dag = DAG()
    source = dag.new_vertex("source", Dedup, 1)
    target = dag.new_vertex("v", Dedup, layout.local_parallelism)
    edge = Edge.between(source, target).partitioned(lambda x: x).distributed()
    dag.edge(edge)
    plan = build_plan(dag, JobConfig(), layout.member_count)
    targets = plan.consumers_of(plan.edge_def(edge), (0, 0))
    assert targets.partition_to_consumer is not None
    router = Router(layout, plan.arrangement.partition_count, [InputRouting(key_fn=lambda x: x)])
    items = list(range(60))
    shares = router.split(0, items)
    for position, share in enumerate(shares):
        for item in share:
            partition = edge.partitioner(item, plan.arrangement.partition_count)
            member, local = targets.consumers[targets.partition_to_consumer[partition]]
            assert member * layout.local_parallelism + local == position


def test_round_robin_and_broadcast_input() -> None:
    router = Router(Layout(1, 3), 271, [InputRouting(), InputRouting(broadcast=True)])
    assert router.split(0, [1, 2, 3, 4]) == [[1, 4], [2], [3]]
    assert router.split(0, [5]) == [[], [5], []]
    assert router.split(1, ["x"]) == [["x"], ["x"], ["x"]]


class Restorer(AbstractProcessor):
    """Saves a keyed entry per item seen and one broadcast entry; records what it restores."""

    restored: ClassVar[list[tuple[Layout, int, Any]]] = []

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.seen.append(item)
        return True

    def save_to_snapshot(self) -> bool:
        for item in self.seen:
            self.try_emit_to_snapshot(item, item)
        self.try_emit_to_snapshot(BroadcastKey(self.context.global_processor_index), "b")
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        c = self.context
        Restorer.restored.append((Layout(c.member_count, c.local_parallelism), c.global_processor_index, key))
        if not isinstance(key, BroadcastKey):
            self.seen.append(key)


def test_the_kit_restores_keyed_entries_to_their_owners_and_broadcast_entries_to_all() -> None:
    Restorer.restored.clear()
    verify_processor(Restorer).input(list(range(12))).partitioned_input(lambda x: x).outbox_capacity(
        1024
    ).expect_output([])
    multi = [r for r in Restorer.restored if r[0] != Layout(1, 1)]
    assert multi
    for layout, index, key in multi:
        if not isinstance(key, BroadcastKey):
            assert Router(layout, 271, []).owner(key) == index
    broadcast = [(layout, index) for layout, index, key in multi if isinstance(key, BroadcastKey)]
    for layout in {layout for layout, _ in broadcast}:
        assert {index for lay, index in broadcast if lay == layout} == set(range(layout.total_parallelism))


class Tracked(Dedup):
    """Records every call on every instance."""

    instances: ClassVar[list[Tracked]] = []
    fail_init = False

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        Tracked.instances.append(self)

    def init(self, outbox: Any, context: Any) -> None:
        self.calls.append("init")
        if Tracked.fail_init:
            raise RuntimeError("init failed")
        super().init(outbox, context)

    def process(self, ordinal: int, inbox: Any) -> None:
        self.calls.append("process")
        super().process(ordinal, inbox)

    def close(self) -> None:
        self.calls.append("close")


def test_every_processor_made_is_initialized_first_and_closed_exactly_once() -> None:
    Tracked.instances.clear()
    Tracked.fail_init = False
    verify_processor(ProcessorSupplier.of(Tracked)).input([1, 2, 1]).parallelism(local=2).partitioned_input(
        lambda x: x
    ).expect_output([1, 2])
    assert len(Tracked.instances) > 20
    for instance in Tracked.instances:
        assert instance.calls.count("close") == 1, instance.calls
        assert instance.calls[-1] == "close"
        assert instance.calls[0] in ("init", "close")  # an unused local processor is only closed
    assert sum(1 for i in Tracked.instances if i.calls == ["close"]) > 0


def test_a_processor_whose_init_fails_is_still_closed() -> None:
    Tracked.instances.clear()
    Tracked.fail_init = True
    try:
        with pytest.raises(ProcessorVerificationError) as info:
            verify_processor(Tracked).input([1]).expect_output([1])
    finally:
        Tracked.fail_init = False
    assert info.value.kind is FailureKind.RAISED
    assert "init() raised RuntimeError" in str(info.value)
    # the first processor's init failed; the others of its execution were never initialized
    assert all(instance.calls in (["init", "close"], ["close"]) for instance in Tracked.instances)
    assert any(instance.calls == ["init", "close"] for instance in Tracked.instances)


class CountingSupplier(ProcessorSupplier):
    def __init__(self) -> None:
        self.inits = 0
        self.closes = 0

    def init(self, context: Any) -> None:
        self.inits += 1

    def get(self, count: int) -> list[Dedup]:
        return [Dedup() for _ in range(count)]

    def close(self, error: BaseException | None) -> None:
        self.closes += 1


def test_each_restore_is_a_new_execution_of_the_suppliers() -> None:
    supplier = CountingSupplier()
    result = verify_processor(supplier).input([1, 2]).partitioned_input(lambda x: x).expect_output([1, 2])
    executions = sum(r.restores + 1 for r in result.results)
    assert supplier.closes == executions
    assert supplier.inits >= executions


class FailingSupplier(ProcessorSupplier):
    def get(self, count: int) -> list[Dedup]:
        raise OSError("no processors today")


def test_a_failing_supplier_is_reported() -> None:
    with pytest.raises(ProcessorVerificationError) as info:
        verify_processor(FailingSupplier()).input([1]).expect_output([1])
    assert info.value.kind is FailureKind.RAISED
    assert "making the processors (1 processor (1 x 1)) failed: OSError: no processors today" in str(
        info.value
    )


class SecondMemberFails(ProcessorSupplier):
    def __init__(self) -> None:
        self.member = 0

    def init(self, context: Any) -> None:
        self.member = context.member_index

    def get(self, count: int) -> list[Tracked]:
        if self.member == 1:
            raise OSError("member 1 has no processors")
        return [Tracked() for _ in range(count)]


def test_processors_made_before_a_supplier_failure_are_closed() -> None:
    Tracked.instances.clear()
    with pytest.raises(ProcessorVerificationError, match="member 1 has no processors"):
        verify_processor(SecondMemberFails()).input([1]).partitioned_input(lambda x: x).expect_output([1])
    assert Tracked.instances
    assert all(instance.calls.count("close") == 1 for instance in Tracked.instances)


class Ticker(AbstractProcessor):
    """Emits "tick" from its first try_process() call: output without input, as a timer would."""

    def __init__(self) -> None:
        self.ticked = False

    def try_process(self) -> bool:
        if not self.ticked:
            self.ticked = self.try_emit("tick")
            return self.ticked
        return True

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)


def test_try_process_is_called_while_the_inbox_is_empty_before_any_input() -> None:
    """As the engine does (Jet calls tryProcess whenever the inbox is empty): a processor with an
    inbound edge that never gets an item still gets try_process() calls."""
    verify_processor(Ticker).disable_snapshots().disable_redistribution().input([]).expect_output(["tick"])
    verify_processor(Ticker).disable_snapshots().disable_redistribution().input([1, 2]).expect_output(
        ["tick", 1, 2]
    )

"""Suppliers: how a vertex makes its processors, on the coordinator and then on each member.

A `ProcessorMetaSupplier` runs once per execution on the coordinator (the Spark driver, or the
local runner) and hands each member a `ProcessorSupplier`, or None when that member needs no
processor of the vertex (pruning). The `ProcessorSupplier` then makes the member's processors.
Both travel to executors with cloudpickle, so they must be picklable.
"""

from __future__ import annotations

import abc
import enum
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from jetspark.core.context import MetaSupplierContext, SupplierContext
from jetspark.core.processor import Processor


class SnapshotCommitter(abc.ABC):
    """Does on the coordinator, right after a snapshot is committed, what the vertex's processors'
    `snapshot_commit_finish(True)` does (a sink's prepared transactions made visible), so that a
    runner whose processors learn of the commit only later (Spark in epochs: at the next epoch's
    restore) need not wait for them. The processors must still do it themselves, idempotently:
    the coordinator's commit is an early copy of theirs, never the only one (it may fail, or the
    coordinator may die before it)."""

    @abc.abstractmethod
    def commit(self, entries: Iterable[tuple[Any, Any]]) -> int:
        """Commit what the processors that saved `entries` (the vertex's (key, value) pairs in the
        committed snapshot) would commit when they restore it; return how many transactions (or
        other units) it committed. May raise: the processors' restore commits instead."""

    def discard_pending(self) -> int:
        """The job was cancelled and its last snapshot's transactions committed: roll back what
        its processors left pending besides (a task of the cancelled epoch may prepare after the
        last restore rolled such transactions back, and no later run of the job will); return
        how many. The default does nothing."""
        return 0

    def close(self) -> None:  # noqa: B027
        """Release what `commit` holds (a connection); called when the job ends or after a failure."""


class ProcessorSupplier(abc.ABC):
    """Makes the processors of one vertex on one member."""

    def init(self, context: SupplierContext) -> None:  # noqa: B027
        """Called once on the member before `get`."""

    @abc.abstractmethod
    def get(self, count: int) -> Sequence[Processor]:
        """Return `count` new processors, one per local processor index."""

    def close(self, error: BaseException | None) -> None:  # noqa: B027
        """Called after every processor of this member was closed; `error` is the job's failure."""

    def does_work_without_input(self) -> bool:
        """What `ProcessorMetaSupplier.of(this).does_work_without_input()` answers. Default: True."""
        return True

    def isolated_input_reason(self) -> str | None:
        """What `ProcessorMetaSupplier.of(this).isolated_input_reason()` answers. Default: None."""
        return None

    def keyed_input_reason(self) -> str | None:
        """What `ProcessorMetaSupplier.of(this).keyed_input_reason()` answers. Default: None."""
        return None

    def snapshot_committer(self, job_id: str, vertex: str) -> SnapshotCommitter | None:
        """What `ProcessorMetaSupplier.of(this).snapshot_committer()` answers. Default: None."""
        return None

    @staticmethod
    def of(
        factory: Callable[[], Processor],
        does_work_without_input: bool = True,
        *,
        keyed_input_reason: str | None = None,
    ) -> ProcessorSupplier:
        """A supplier that calls `factory` once per processor. Pass `does_work_without_input=False`
        when a processor that receives nothing emits nothing and has no effect (a sink, a
        transform), so that the planner may prune it (`ProcessorMetaSupplier.does_work_without_input`).
        Pass a `keyed_input_reason` when each key's items must all reach one processor (a keyed
        aggregation): the DAG then refuses an inbound edge not partitioned by key
        (`ProcessorMetaSupplier.keyed_input_reason`)."""
        return _FactorySupplier(factory, does_work_without_input, keyed_input_reason)


class _FactorySupplier(ProcessorSupplier):
    def __init__(
        self,
        factory: Callable[[], Processor],
        does_work_without_input: bool = True,
        keyed_input_reason: str | None = None,
    ) -> None:
        self.factory = factory
        self._works_alone = does_work_without_input
        self._keyed_input_reason = keyed_input_reason

    def does_work_without_input(self) -> bool:
        return self._works_alone

    def keyed_input_reason(self) -> str | None:
        return self._keyed_input_reason

    def get(self, count: int) -> list[Processor]:
        return [self.factory() for _ in range(count)]

    def snapshot_committer(self, job_id: str, vertex: str) -> SnapshotCommitter | None:
        """The committer of a processor class that makes one (`snapshot_committer(job_id,
        vertex)` on the class, as `processors.transactional.TransactionalSinkP` has): the factory
        must be the class or a `functools.partial` of it, so that no other processor is built
        on the coordinator just to ask."""
        kind = _made_class(self.factory)
        if kind is None or not callable(getattr(kind, "snapshot_committer", None)):
            return None
        committer: SnapshotCommitter | None = self.factory().snapshot_committer(job_id, vertex)  # type: ignore[attr-defined]
        return committer

    def __repr__(self) -> str:
        return f"ProcessorSupplier.of({getattr(self.factory, '__qualname__', self.factory)!r})"


def _made_class(factory: Callable[[], Processor]) -> type | None:
    """The class `factory` instantiates, when it is a class or a `functools.partial` of one."""
    while isinstance(factory, functools.partial):
        factory = factory.func
    return factory if isinstance(factory, type) else None


MemberSuppliers: TypeAlias = (
    Callable[[int], ProcessorSupplier | None] | Mapping[int, ProcessorSupplier | None]
)


class VertexCapability(enum.Enum):
    """What a vertex does that its runner must arrange beyond running its processors.

    A meta supplier declares its vertex's capabilities (`ProcessorMetaSupplier.capabilities`);
    the planner reads them once into the plan (`VertexPlan.capabilities`), and runners ask the
    plan, not the type of the meta supplier.
    """

    #: A source over the partitions of a Spark RDD, read in place by the Spark runner (`from_rdd`).
    READS_RDD = "reads an RDD"
    #: A source over a Spark DataFrame (`from_dataframe`): under a processing guarantee it is read
    #: once into a copy (a side input) before the job starts.
    READS_DATAFRAME = "reads a DataFrame"
    #: A sink whose files the runner stages per attempt and publishes when the job succeeds (`files`).
    WRITES_FILES = "writes files"
    #: A sink whose items the Spark runner writes as a DataFrame when the job completes.
    WRITES_DATAFRAME = "writes a DataFrame"
    #: A sink whose items the epoch loop writes as one table directory per committed epoch.
    WRITES_EPOCH_TABLES = "writes epoch tables"


class ProcessorMetaSupplier(abc.ABC):
    """Decides, on the coordinator, which supplier each member gets."""

    def capabilities(self) -> frozenset[VertexCapability]:
        """What the runner must do for this vertex besides running its processors (none by
        default); read once, when the job is planned."""
        return frozenset()

    def preferred_local_parallelism(self) -> int:
        """Local parallelism this vertex wants, or -1 to accept the vertex's or job's default. As
        in Jet, a preference is capped at the job's `default_local_parallelism` (1 unless set);
        a vertex's own local parallelism overrides both."""
        return -1

    def init(self, context: MetaSupplierContext) -> None:  # noqa: B027
        """Called once on the coordinator before `get`."""

    @abc.abstractmethod
    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        """Map each member index to its supplier, or to None when the member runs no processor."""

    def does_work_without_input(self) -> bool:
        """False if a processor that receives no item would do nothing: emit nothing, write
        nothing, change nothing (a transform, a keyed aggregation, a collecting sink).

        Then, in a job without a processing guarantee, the planner does not create the vertex's
        processors on a member where no producer sends to them (or anywhere, for a vertex without
        inbound edges), and a member left with no processor of any vertex is not deployed
        (`jetspark.planning.pruning`). True (the default) keeps every processor the meta supplier
        gives: a processor that emits a result for empty input (a count that emits 0) must
        answer True.
        """
        return True

    def close(self, error: BaseException | None) -> None:  # noqa: B027
        """Called on the coordinator after the job ended; `error` is its failure, if any. Also
        when the job could not be planned because a meta supplier's `init` or `get` raised (then
        on every vertex's meta supplier, whether its `init` ran or not)."""

    def snapshot_committer(self, job_id: str, vertex: str) -> SnapshotCommitter | None:
        """A committer that does on the coordinator, right after each committed snapshot, what
        this vertex's processors do in `snapshot_commit_finish(True)`, or None (the default: the
        processors alone do it). Asked once per job, by a runner that would otherwise make the
        committed output wait (Spark in epochs), with the job's durable id and the vertex's name;
        it may connect to the external system, and returns None if it cannot reach it."""
        return None

    def isolated_input_reason(self) -> str | None:
        """None (the default), or why each processor of this vertex must hear one upstream
        processor alone, in that processor's order (a watermark generator: items of several
        processors interleaved look like time running backwards). `DAG.validate` then refuses
        an inbound edge that is not isolated, or that pairs several upstream processors with one."""
        return None

    def keyed_input_reason(self) -> str | None:
        """None (the default), or why all items of one key must reach one processor of this
        vertex (a keyed aggregation: a session split across two processors is two wrong
        sessions). `DAG.validate` then refuses an inbound edge that is not partitioned when the
        vertex may have several processors per member, and planning refuses, on several
        members, one that is not also distributed (unless its keys were placed by member
        upstream, see `planning.keyed_inputs`)."""
        return None

    @staticmethod
    def of(
        supplier: ProcessorSupplier | Callable[[], Processor], preferred_local_parallelism: int = -1
    ) -> ProcessorMetaSupplier:
        """A meta supplier that gives every member the same supplier."""
        if not isinstance(supplier, ProcessorSupplier):
            supplier = ProcessorSupplier.of(supplier)
        return _SameEverywhere(supplier, preferred_local_parallelism)


class _SameEverywhere(ProcessorMetaSupplier):
    def __init__(self, supplier: ProcessorSupplier, preferred_local_parallelism: int) -> None:
        self.supplier = supplier
        self._preferred = preferred_local_parallelism

    def preferred_local_parallelism(self) -> int:
        return self._preferred

    def does_work_without_input(self) -> bool:
        return self.supplier.does_work_without_input()

    def isolated_input_reason(self) -> str | None:
        return self.supplier.isolated_input_reason()

    def keyed_input_reason(self) -> str | None:
        return self.supplier.keyed_input_reason()

    def snapshot_committer(self, job_id: str, vertex: str) -> SnapshotCommitter | None:
        return self.supplier.snapshot_committer(job_id, vertex)

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        return {index: self.supplier for index in member_indexes}

    def __repr__(self) -> str:
        return f"ProcessorMetaSupplier.of({self.supplier!r})"


SupplierLike: TypeAlias = ProcessorMetaSupplier | ProcessorSupplier | Callable[[], Processor]


def to_meta_supplier(supplier: SupplierLike) -> ProcessorMetaSupplier:
    """Accept a meta supplier, a supplier, or a zero-argument callable returning a processor."""
    if isinstance(supplier, ProcessorMetaSupplier):
        return supplier
    if isinstance(supplier, ProcessorSupplier) or callable(supplier):
        return ProcessorMetaSupplier.of(supplier)
    raise TypeError(
        "expected a ProcessorMetaSupplier, a ProcessorSupplier or a callable returning a Processor, "
        f"got {type(supplier).__name__}"
    )


class FirstMemberOnly(ProcessorMetaSupplier):
    """One processor, on the lowest-numbered member; the other members run none of the vertex
    (a source with a single reader, such as a replication slot: Jet's total parallelism one)."""

    def __init__(self, supplier: ProcessorSupplier) -> None:
        self.supplier = supplier

    def preferred_local_parallelism(self) -> int:
        return 1

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        first = min(member_indexes)
        return {index: self.supplier if index == first else None for index in member_indexes}


def resolve_member_supplier(suppliers: MemberSuppliers, member_index: int) -> ProcessorSupplier | None:
    """Look up a member's supplier in what `ProcessorMetaSupplier.get` returned (mapping or callable)."""
    if isinstance(suppliers, Mapping):
        return suppliers.get(member_index)
    return suppliers(member_index)


#: A stateless step of a chain: `("map" | "filter" | "flat_map", fn)`.
Step: TypeAlias = tuple[str, Callable[[Any], Any]]


class FusibleSupplier(ProcessorSupplier):
    """A supplier the planner may merge with its neighbour over a local one-to-one edge.

    As in Jet, a chain of stateless steps costs the least when its vertices are fused: an item then
    crosses no queue, outbox or inbox between the steps. A supplier of stateless steps says which
    steps it runs; a supplier that can run such steps before its own work says so by returning a
    supplier from `with_leading_steps`. Both defaults decline.
    """

    def stateless_steps(self) -> tuple[Step, ...] | None:
        """The steps this supplier's processors run, when that is all they do (no state)."""
        return None

    def with_leading_steps(self, steps: tuple[Step, ...]) -> ProcessorSupplier | None:
        """A supplier whose processors run `steps` on every item first, or None if it cannot."""
        return None


def same_supplier_everywhere(meta_supplier: ProcessorMetaSupplier) -> ProcessorSupplier | None:
    """The supplier that `meta_supplier` gives every member, if it was made by `ProcessorMetaSupplier.of`."""
    return meta_supplier.supplier if isinstance(meta_supplier, _SameEverywhere) else None

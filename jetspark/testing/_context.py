"""Layouts, contexts and processor creation, done the way a runner does them.

A `Layout` is a member count and a local parallelism. `ProcessorFactory.create` plays one
execution's start: the meta supplier is initialized and asked for the members' suppliers, each
member's supplier is initialized and asked for its processors, and every processor gets a full
`ProcessorContext` (partition assignment included). `end_execution` closes the suppliers and the
meta supplier, as a runner does after every execution (a restore from a snapshot starts a new one).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import attrs

from jetspark.core.config import JobConfig
from jetspark.core.context import MetaSupplierContext, ProcessorContext, SupplierContext
from jetspark.core.processor import Processor
from jetspark.core.suppliers import (
    ProcessorMetaSupplier,
    ProcessorSupplier,
    SupplierLike,
    resolve_member_supplier,
    to_meta_supplier,
)
from jetspark.planning.partitions import PartitionArrangement

ProcessorId = tuple[int, int]  # (member index, local processor index)


@attrs.frozen
class Layout:
    """`member_count` members with `local_parallelism` processors each."""

    member_count: int = 1
    local_parallelism: int = 1

    @property
    def total_parallelism(self) -> int:
        return self.member_count * self.local_parallelism

    def processor_ids(self) -> list[ProcessorId]:
        return [(m, i) for m in range(self.member_count) for i in range(self.local_parallelism)]

    def __str__(self) -> str:
        count = self.total_parallelism
        plural = "processor" if count == 1 else "processors"
        return f"{count} {plural} ({self.member_count} x {self.local_parallelism})"


@attrs.frozen(kw_only=True)
class ContextSettings:
    """What every context of one verification shares."""

    vertex_name: str
    job_id: str
    job_config: JobConfig
    partition_count: int
    attributes: dict[str, Any]


def meta_context(settings: ContextSettings, layout: Layout, execution_id: str) -> dict[str, Any]:
    arrangement = PartitionArrangement(settings.partition_count, layout.member_count)
    return {
        "job_id": settings.job_id,
        "execution_id": execution_id,
        "job_config": settings.job_config,
        "vertex_name": settings.vertex_name,
        "local_parallelism": layout.local_parallelism,
        "member_count": layout.member_count,
        "partition_count": settings.partition_count,
        "partition_assignment": arrangement.assignment(),
        "logger": logging.getLogger(f"jetspark.vertex.{settings.vertex_name}"),
    }


def processor_context(
    settings: ContextSettings, layout: Layout, member: int, local_index: int, execution_id: str
) -> ProcessorContext:
    arrangement = PartitionArrangement(settings.partition_count, layout.member_count)
    lp = layout.local_parallelism
    return ProcessorContext(
        **meta_context(settings, layout, execution_id),
        member_index=member,
        member_partitions=arrangement.member_partitions(member),
        local_processor_index=local_index,
        global_processor_index=member * lp + local_index,
        processor_partitions=arrangement.processor_partitions(member, local_index, lp),
        attributes=dict(settings.attributes),
    )


class ProcessorFactory:
    """Makes processors from a supplier as a runner would, one execution at a time."""

    def __init__(self, supplier: SupplierLike, settings: ContextSettings) -> None:
        self.meta: ProcessorMetaSupplier = to_meta_supplier(supplier)
        self.settings = settings
        self._executions = 0
        self._open_suppliers: list[ProcessorSupplier] = []
        self._meta_open = False
        #: Processors made but not handed out (a member's other local indexes); closed at once.
        self.discarded: list[Processor] = []

    def create(self, layout: Layout, ids: Sequence[ProcessorId]) -> list[tuple[Processor, ProcessorContext]]:
        """Start an execution in `layout` and return the processors `ids`, with their contexts."""
        self._executions += 1
        execution_id = f"{self.settings.job_id}-{self._executions}"
        self.meta.init(MetaSupplierContext(**meta_context(self.settings, layout, execution_id)))
        self._meta_open = True
        out: list[tuple[Processor, ProcessorContext]] = []
        try:
            self._make(layout, ids, execution_id, out)
        except BaseException:
            self.discarded.extend(p for p, _ in out)  # made before the failure: closed all the same
            raise
        return out

    def _make(
        self,
        layout: Layout,
        ids: Sequence[ProcessorId],
        execution_id: str,
        out: list[tuple[Processor, ProcessorContext]],
    ) -> None:
        returned = self.meta.get(list(range(layout.member_count)))
        for member in sorted({m for m, _ in ids}):
            supplier = resolve_member_supplier(returned, member)
            if supplier is None:
                raise ValueError(
                    f"vertex {self.settings.vertex_name!r}: the meta supplier returned no supplier for member "
                    f"{member} of {layout.member_count}; verify_processor needs a processor there"
                )
            context = processor_context(self.settings, layout, member, 0, execution_id)
            supplier.init(
                SupplierContext(**{f.name: getattr(context, f.name) for f in attrs.fields(SupplierContext)})
            )
            if all(s is not supplier for s in self._open_suppliers):
                self._open_suppliers.append(supplier)
            made = list(supplier.get(layout.local_parallelism))
            if len(made) != layout.local_parallelism:
                raise ValueError(
                    f"vertex {self.settings.vertex_name!r}: supplier returned {len(made)} processors for member "
                    f"{member}, expected {layout.local_parallelism}"
                )
            wanted = {i for m, i in ids if m == member}
            for index, processor in enumerate(made):
                if not isinstance(processor, Processor):
                    raise TypeError(
                        f"vertex {self.settings.vertex_name!r}: supplier returned {type(processor).__name__}, "
                        "not a Processor"
                    )
                if index in wanted:
                    out.append(
                        (processor, processor_context(self.settings, layout, member, index, execution_id))
                    )
                else:
                    self.discarded.append(processor)

    def end_execution(self, error: BaseException | None) -> None:
        """Close the suppliers and the meta supplier of the current execution (once)."""
        suppliers, self._open_suppliers = self._open_suppliers, []
        for supplier in suppliers:
            supplier.close(error)
        if self._meta_open:
            self._meta_open = False
            self.meta.close(error)

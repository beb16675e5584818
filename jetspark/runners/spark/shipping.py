"""Driver side of shipping a job to executors: a plan without meta suppliers, and pickle checks.

Meta suppliers belong to the coordinator (they need not be picklable, and `from_rdd` holds an
RDD); executors get the plan's suppliers only. Everything a task needs is checked for pickling
at submit, so a supplier that cannot travel is an error that names its vertex, before any task runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG, Vertex
from jetspark.core.edge import Edge
from jetspark.core.errors import DagValidationError
from jetspark.core.suppliers import MemberSuppliers, ProcessorMetaSupplier
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners.spark.records import dumps


def slim_plan(plan: ExecutionPlan) -> ExecutionPlan:
    """A copy of `plan` to ship to executors: the same edges and suppliers, no meta suppliers
    (they belong to the coordinator and need not be picklable)."""
    dag = DAG()
    copies: dict[str, Vertex] = {}
    for vertex in plan.dag.topological_order():
        copies[vertex.name] = dag.vertex(Vertex(vertex.name, _DriverOnly(), vertex.local_parallelism))
    edge_copies: dict[int, Edge] = {}
    for edge in plan.dag.edges:
        assert edge.destination is not None
        copy = Edge.__new__(Edge)
        copy.__dict__.update(edge.__dict__)
        copy.source = copies[edge.source.name]
        copy.destination = copies[edge.destination.name]
        dag.edge(copy)
        edge_copies[id(edge)] = copy
    vertices = {
        name: attrs.evolve(
            vp,
            vertex=copies[name],
            inbound=[edge_copies[id(e)] for e in vp.inbound],
            outbound=[edge_copies[id(e)] for e in vp.outbound],
        )
        for name, vp in plan.vertices.items()
    }
    return attrs.evolve(plan, dag=dag, vertices=vertices)


class _DriverOnly(ProcessorMetaSupplier):
    """Stands in for a meta supplier on executors, where none is ever called."""

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        raise AssertionError("a ProcessorMetaSupplier runs only on the driver, not in a Spark task")


#: Largest pickled supplier of one vertex: every task unpickles every supplier of the plan.
MAX_SUPPLIER_BYTES = 16 << 20


def check_picklable(
    plan: ExecutionPlan, config: JobConfig, max_supplier_bytes: int = MAX_SUPPLIER_BYTES
) -> None:
    """Raise DagValidationError naming the vertex or edge whose supplier/function cannot be pickled,
    or whose suppliers are too large to ship to every task (data held in a supplier)."""
    for name, vp in plan.vertices.items():
        try:
            size = len(dumps(vp.suppliers))
        except Exception as error:
            raise DagValidationError(
                f"vertex {name!r}: its ProcessorSupplier cannot be pickled to ship it to Spark executors "
                f"({type(error).__name__}: {error}); suppliers and everything they hold must be picklable "
                "with cloudpickle"
            ) from error
        if size > max_supplier_bytes:
            raise DagValidationError(
                f"vertex {name!r}: its suppliers pickle to {size / 2**20:.1f} MiB, more than "
                f"{max_supplier_bytes / 2**20:.0f} MiB, and every Spark task would receive and unpickle all of "
                "it (a source over a large in-memory collection, such as from_iterable(big_list)); read large "
                "inputs with jetspark.runners.spark.from_rdd(sc.parallelize(items, n)) or from_dataframe(), "
                "or generate them on the executors"
            )
    for edge in plan.dag.edges:
        try:
            dumps((edge.key_fn, edge.partitioner))
        except Exception as error:
            raise DagValidationError(
                f"edge {edge.name}: its key function or partitioner cannot be pickled "
                f"({type(error).__name__}: {error})"
            ) from error
    try:
        dumps(config)
    except Exception as error:
        raise DagValidationError(
            f"the JobConfig cannot be pickled ({type(error).__name__}: {error})"
        ) from error

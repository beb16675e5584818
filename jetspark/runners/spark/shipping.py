"""Driver side of shipping a job to executors: pickle checks before any task runs.

Meta suppliers belong to the coordinator (they need not be picklable, and `from_rdd` holds an
RDD); the `ExecutionPlan` that executors get holds only suppliers and edge definitions. Everything
a task needs is checked for pickling at submit, so a supplier that cannot travel is an error that
names its vertex, before any task runs.
"""

from __future__ import annotations

from jetspark.core.config import JobConfig
from jetspark.core.errors import DagValidationError
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners.spark.records import dumps

#: Largest pickled supplier of one vertex: every task unpickles every supplier of the plan.
MAX_SUPPLIER_BYTES = 16 << 20


def check_picklable(
    plan: ExecutionPlan, config: JobConfig, max_supplier_bytes: int = MAX_SUPPLIER_BYTES
) -> None:
    """Raise DagValidationError naming the vertex whose suppliers cannot be pickled, or are too
    large to ship to every task (data held in a supplier). Edges' key functions and partitioners
    were checked before Spark started (`runners.preflight`), from the same DAG."""
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
    try:
        dumps(config)
    except Exception as error:
        raise DagValidationError(
            f"the JobConfig cannot be pickled ({type(error).__name__}: {error})"
        ) from error

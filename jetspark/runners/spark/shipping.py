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
from jetspark.runners.preflight import MAX_SUPPLIER_BYTES, supplier_too_large
from jetspark.runners.spark.records import dumps


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
            raise supplier_too_large(name, size, max_supplier_bytes)
    try:
        dumps(config)
    except Exception as error:
        raise DagValidationError(
            f"the JobConfig cannot be pickled ({type(error).__name__}: {error})"
        ) from error

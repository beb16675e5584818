"""Sources over Spark data: a vertex whose items are the rows of an RDD or a DataFrame.

`from_rdd(rdd)` makes a meta supplier for a source vertex. The RDD stays on the driver (meta
suppliers never travel); the Spark runner reads it as the input of the vertex's stage: partition
p of the RDD goes to member `p % member_count`, whose processors of the vertex share its rows
(each processor takes the next chunk when it has room). When the RDD has exactly member count
partitions and the stage has no other input, member m reads partition m in place, with no shuffle.
These sources run on the Spark runner only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jetspark.core.context import ProcessorContext
from jetspark.core.errors import JetsparkError
from jetspark.core.outbox import Outbox
from jetspark.core.processor import Processor
from jetspark.core.suppliers import MemberSuppliers, ProcessorMetaSupplier, ProcessorSupplier
from jetspark.core.watermark import Watermark
from jetspark.runners.spark.shuffle_in import SourceInput
from jetspark.runners.spark.task import SPARK_INPUT_ATTRIBUTE


class _SparkInputP(Processor):
    """Emits its share of the member's rows, as many per call as the outbox has room for."""

    def __init__(self) -> None:
        self._input: SourceInput | None = None

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        inputs = context.attributes.get(SPARK_INPUT_ATTRIBUTE) or {}
        if context.vertex_name not in inputs:
            raise JetsparkError(
                f"vertex {context.vertex_name!r}: from_rdd()/from_dataframe() sources run only on the "
                "Spark runner (jetspark.runners.spark.SparkRunner)"
            )
        self._input = inputs[context.vertex_name]
        self._outbox = outbox

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete(self) -> bool:
        assert self._input is not None
        outbox = self._outbox
        while True:
            room = outbox.room()
            if room == 0:
                return False
            chunk = self._input.next_chunk(room)
            if chunk is None:  # shuffled rows: none here yet, more to come
                return False
            if not chunk:
                return True
            outbox.offer_batch(chunk)


class _SparkInputSupplier(ProcessorSupplier):
    def get(self, count: int) -> list[Processor]:
        return [_SparkInputP() for _ in range(count)]


class RddSource(ProcessorMetaSupplier):
    """Meta supplier of a source vertex over `rdd`; the Spark runner recognises it by type."""

    def __init__(self, rdd: Any) -> None:
        self.rdd = rdd

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        supplier = _SparkInputSupplier()
        return {m: supplier for m in member_indexes}

    def __reduce__(self) -> Any:
        raise TypeError("an RDD source stays on the Spark driver; it is never pickled")


def from_rdd(rdd: Any) -> RddSource:
    """A source vertex emitting the items of `rdd` (a pyspark RDD), spread over the members."""
    if not hasattr(rdd, "mapPartitionsWithIndex") or not hasattr(rdd, "getNumPartitions"):
        raise TypeError(f"from_rdd() needs a pyspark RDD, got {type(rdd).__name__}")
    return RddSource(rdd)


def from_dataframe(df: Any) -> RddSource:
    """A source vertex emitting the rows (`pyspark.sql.Row`) of DataFrame `df`."""
    if not hasattr(df, "rdd"):
        raise TypeError(f"from_dataframe() needs a pyspark DataFrame, got {type(df).__name__}")
    return RddSource(df.rdd)

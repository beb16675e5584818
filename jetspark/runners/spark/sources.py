"""Sources over Spark data: a vertex whose items are the rows of an RDD or a DataFrame.

`from_rdd(rdd)` makes a meta supplier for a source vertex. The RDD stays on the driver (meta
suppliers never travel); the Spark runner reads it as the input of the vertex's stage: partition
p of the RDD goes to member `p % member_count`, whose processors of the vertex share its rows
(each processor takes the next chunk when it has room). When the RDD has exactly member count
partitions and the stage has no other input, member m reads partition m in place, with no shuffle.
These sources run on the Spark runner only.

Pruning (seed 000): a member that reads no partition of the RDD gets no processor of the vertex.
`from_rdd(rdd, keys=...)` over a pair RDD partitioned with `partitionBy` reads only the partitions
its keys hash to (the RDD's own partitioner decides, on the driver), emits only the pairs whose
key is one of `keys`, and reports the partitions it left out (`planning.pruning.PartitionPrunable`).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from jetspark.core.context import SPARK_INPUT_ATTRIBUTE, ProcessorContext
from jetspark.core.errors import JetsparkError
from jetspark.core.outbox import Outbox
from jetspark.core.processor import Processor
from jetspark.core.suppliers import (
    MemberSuppliers,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    VertexCapability,
)
from jetspark.core.watermark import Watermark
from jetspark.planning.pruning import PartitionPruning
from jetspark.runners.spark.partition_pruning import only_partitions
from jetspark.runners.spark.shuffle_in import SourceInput


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


def _key_in(keys: frozenset[Any], pair: Any) -> bool:
    return pair[0] in keys


class RddSource(ProcessorMetaSupplier):
    """Meta supplier of a source vertex over `rdd`; the Spark runner recognises it by type."""

    def __init__(self, rdd: Any, keys: Collection[Any] | None = None) -> None:
        self.rdd = rdd
        if keys is not None and (isinstance(keys, (str, bytes)) or not isinstance(keys, Iterable)):
            raise ValueError(
                f"from_rdd(keys=...): give a collection of keys, e.g. {{{keys!r}}}, not {type(keys).__name__} "
                f"{keys!r}" + (" (a str would be read as its characters)" if isinstance(keys, str) else "")
            )
        self.keys = None if keys is None else frozenset(keys)
        total = rdd.getNumPartitions()
        #: The partitions this source reads, in order.
        self.partitions: tuple[int, ...] = tuple(range(total))
        if self.keys is not None:
            partitioner = getattr(rdd, "partitioner", None)
            if partitioner is None:
                raise ValueError(
                    "from_rdd(keys=...): the RDD has no partitioner, so the partitions of the keys are "
                    "unknown; partition it with rdd.partitionBy(n, partition_func) first"
                )
            self.partitions = tuple(sorted({partitioner(key) for key in self.keys}))

    def capabilities(self) -> frozenset[VertexCapability]:
        return frozenset({VertexCapability.READS_RDD})

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        """A supplier for each member that reads a partition (partition p goes to p % members)."""
        supplier = _SparkInputSupplier()
        count = len(member_indexes)
        reading = {p % count for p in self.partitions}
        return {m: supplier if m in reading else None for m in member_indexes}

    def partition_pruning(self, vertex: str) -> PartitionPruning | None:
        total = self.rdd.getNumPartitions()
        if len(self.partitions) == total:
            return None
        keys = sorted(map(repr, self.keys or ()))
        shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
        return PartitionPruning(vertex, self.partitions, total, f"only keys {shown} are read")

    def rdd_to_read(self) -> Any:
        """The RDD the runner reads: `rdd`, or with keys, its partitions `partitions` alone (in
        order, so RDD partition i is `partitions[i]`) and their pairs with one of the keys."""
        if self.keys is None:
            return self.rdd
        return only_partitions(self.rdd, self.partitions).filter(functools.partial(_key_in, self.keys))

    def __reduce__(self) -> Any:
        raise TypeError("an RDD source stays on the Spark driver; it is never pickled")


class DataFrameSource(RddSource):
    """A `from_dataframe` source: read as its RDD in a batch job; under a processing guarantee,
    frozen into a Parquet copy when the job is submitted (`side_inputs`)."""

    def __init__(self, df: Any) -> None:
        super().__init__(df.rdd)
        self.df = df

    def capabilities(self) -> frozenset[VertexCapability]:
        return frozenset({VertexCapability.READS_RDD, VertexCapability.READS_DATAFRAME})


def from_rdd(rdd: Any, keys: Collection[Any] | None = None) -> RddSource:
    """A source vertex emitting the items of `rdd` (a pyspark RDD), spread over the members.

    With `keys`, `rdd` must be a pair RDD with a partitioner (`rdd.partitionBy(n, func)`): the
    source emits only the pairs whose key is in `keys` and reads only the partitions they are in
    (partition pruning; `JobHandle.plan_metrics()` counts what it left out). The partitioner's
    function runs on the driver for each key, so it must give the same answer there as on the
    executors (jetspark's `stable_hash` does; pyspark's default `portable_hash` of a str needs
    PYTHONHASHSEED set on the driver).

    With `spark` your SparkSession:

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.runners.spark import SparkRunner, from_rdd
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", from_rdd(spark.sparkContext.parallelize(range(6), 3)))
    >>> odd = dag.new_vertex("odd", P.filter(lambda n: n % 2))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(numbers, odd)).edge(Edge.between(odd, sink))
    >>> sorted(SparkRunner(spark).run(dag).result("sink"))
    [1, 3, 5]
    ```

    :param rdd: the pyspark RDD whose items the vertex emits.
    :param keys: emit only the pairs with one of these keys, reading only their partitions
        (`rdd` must then be a pair RDD with a partitioner).
    """
    if not hasattr(rdd, "mapPartitionsWithIndex") or not hasattr(rdd, "getNumPartitions"):
        raise TypeError(f"from_rdd() needs a pyspark RDD, got {type(rdd).__name__}")
    return RddSource(rdd, keys)


def from_dataframe(df: Any) -> DataFrameSource:
    """A source vertex emitting the rows (`pyspark.sql.Row`) of DataFrame `df` (or of a Spark
    table: `from_dataframe(spark.table("name"))`).

    In a job with a processing guarantee (on the Spark runner's epochs) it is a bounded side input,
    for example the build side of a `hash_join` that enriches a stream: the DataFrame is read once,
    when the job is first submitted, into a Parquet copy under the job's checkpoint directory, and
    the vertex reads that copy with row offsets in its snapshots, so a restored epoch, or the job
    submitted again after its driver died, emits every row exactly once and the same rows as
    before (see `runners.spark.side_inputs`). A batch job reads the DataFrame itself.

    With `spark` your SparkSession:

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.runners.spark import SparkRunner, from_dataframe
    >>> df = spark.createDataFrame([("tea", 3), ("cake", 5)], "item string, n int")
    >>> dag = DAG()
    >>> rows = dag.new_vertex("rows", from_dataframe(df))
    >>> names = dag.new_vertex("names", P.map(lambda row: f"{row.item}={row.n}"))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(rows, names)).edge(Edge.between(names, sink))
    >>> sorted(SparkRunner(spark).run(dag).result("sink"))
    ['cake=5', 'tea=3']
    ```

    :param df: the pyspark DataFrame whose rows the vertex emits.
    """
    if not hasattr(df, "rdd"):
        raise TypeError(f"from_dataframe() needs a pyspark DataFrame, got {type(df).__name__}")
    return DataFrameSource(df)

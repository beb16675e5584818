"""A sink that hands a vertex's output to Spark's DataFrame writers.

`write_dataframe(path, format="parquet")` is the supplier of a sink vertex. Its processors are
those of the `collect` sink (the items travel to the driver with the job's results);
when the Spark job has completed, the runner builds a DataFrame from them
(`spark.createDataFrame(items, schema)`) and, if `path` is given, writes it with
`df.write.format(format).mode(mode).options(**options).save(path)`. `SparkJob.dataframe(vertex)`
returns that DataFrame. Because the items pass through the driver, this suits outputs that fit in
the driver's memory (aggregates, samples, reports), not bulk data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jetspark.core.suppliers import MemberSuppliers, ProcessorMetaSupplier, VertexCapability
from jetspark.processors.sinks import collect


class DataFrameSink(ProcessorMetaSupplier):
    """Meta supplier of a `write_dataframe` sink; the Spark runner writes after the job completes."""

    def __init__(
        self, path: str | None, format: str, mode: str, schema: Any, options: dict[str, str]
    ) -> None:
        self.path = path
        self.format = format
        self.mode = mode
        self.schema = schema
        self.options = options

    def capabilities(self) -> frozenset[VertexCapability]:
        return frozenset({VertexCapability.WRITES_DATAFRAME})

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        supplier = collect()
        return {m: supplier for m in member_indexes}

    def write(self, spark: Any, items: list[Any]) -> Any:
        """Build the DataFrame of `items` and write it (if a path was given); return the DataFrame."""
        df = spark.createDataFrame(items, self.schema)
        if self.path is not None:
            df.write.format(self.format).mode(self.mode).options(**self.options).save(self.path)
        return df


def write_dataframe(
    path: str | None = None,
    format: str = "parquet",
    mode: str = "errorifexists",
    schema: Any = None,
    **options: str,
) -> DataFrameSink:
    """A sink vertex whose items (Rows, tuples or dicts) become a DataFrame written to `path`.

    `schema` is anything `spark.createDataFrame` takes (a StructType, a DDL string or a list of
    column names); None infers it. With `path=None` nothing is written and the DataFrame is only
    available from `SparkJob.dataframe(vertex)`.

    With `spark` your SparkSession:

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.runners.spark import SparkRunner, write_dataframe
    >>> dag = DAG()
    >>> words = dag.new_vertex("words", P.from_iterable("to be or not to be".split()))
    >>> counts = P.aggregate_by_key(dag, "counts", words, P.whole_item, P.counting())
    >>> out = dag.new_vertex("out", write_dataframe(schema="word string, n long"))
    >>> _ = dag.edge(Edge.between(counts, out))
    >>> job = SparkRunner(spark).run(dag)
    >>> [tuple(row) for row in job.dataframe("out").orderBy("word").collect()]
    [('be', 2), ('not', 1), ('or', 1), ('to', 2)]
    ```

    :param path: where Spark writes the DataFrame; None: not written, only available from
        `SparkJob.dataframe(vertex)`.
    :param format: the DataFrameWriter format ("parquet", "json", "csv", ...).
    :param mode: the DataFrameWriter save mode ("errorifexists", "overwrite", "append", "ignore").
    :param schema: the DataFrame's schema (a StructType, a DDL string or column names); None infers it.
    :param options: passed on to the DataFrameWriter (`compression="snappy"`, ...).
    """
    return DataFrameSink(path, format, mode, schema, dict(options))

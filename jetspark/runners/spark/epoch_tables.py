"""Each committed epoch's output appended to a table as a DataFrame, exactly once per epoch.

`write_epochs(path)` is a sink vertex of a job with a processing guarantee (Spark's `foreachBatch`
turned into a sink). Its processors are the `collect` sink's: the epoch's items reach the driver
with the epoch's reports. The driver (`EpochTables`, called by the epoch loop) then:

1. **stages** them before it commits the epoch: `spark.createDataFrame(items, schema)` written
   by Spark's writer to `<path>/_jetspark_staging/<job id>-e<epoch>` (Spark ignores `_` names when
   it reads `<path>`); a failure here aborts the epoch like any other;
2. commits the epoch's snapshot (moves `LATEST`);
3. **publishes**: moves each staged file into `<path>` as `part-<job id>-e<epoch>-<Spark's name>`.

Before every epoch (and on a submit after the driver died) it **settles**: staged epochs up to the
committed one are published (a driver that died between 2 and 3), staged or published files of
later epochs are deleted (an epoch that did not commit, or a completing epoch the job record does
not show as completed). So whatever fails, `<path>` holds the output of committed epochs only,
each once: a re-run epoch writes its files again under the same names, after its earlier files
were deleted. Every file name carries the job's id, so settling never touches another job's files
(a job started over has a new id).

The items pass through the driver, as those of `write_dataframe` do: this suits outputs of a size
the driver holds per epoch (aggregates, enriched events at moderate rates), not bulk data.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from jetspark.core.context import MetaSupplierContext, ProcessorContext
from jetspark.core.errors import JobFailedError
from jetspark.core.suppliers import (
    MemberSuppliers,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    VertexCapability,
)
from jetspark.filesystems import is_local
from jetspark.processors.sinks import _CollectP

if TYPE_CHECKING:  # its sink runs in tasks; planning stays on the driver
    from jetspark.planning.pipeline import PreparedDag

_log = logging.getLogger("jetspark.spark.epoch_tables")
STAGING = "_jetspark_staging"


class _EpochItemsP(_CollectP):
    """`collect`'s processor, refused outside the Spark runner's epochs (nothing would write)."""

    def init_processor(self, context: ProcessorContext) -> None:
        if not context.in_epochs:
            raise JobFailedError(
                f"vertex {context.vertex_name!r}: write_epochs runs only on the Spark runner, in a job "
                "with a processing guarantee (its epochs write the table)",
                vertex=context.vertex_name,
            )
        super().init_processor(context)


class EpochTableSink(ProcessorMetaSupplier):
    """Meta supplier of a `write_epochs` sink; the epoch loop writes the table (`EpochTables`)."""

    def __init__(self, path: str, format: str, schema: Any, options: dict[str, str]) -> None:
        self.path = path
        self.format = format
        self.schema = schema
        self.options = options

    def init(self, context: MetaSupplierContext) -> None:
        if not context.snapshotting_enabled:
            raise ValueError(
                f"vertex {context.vertex_name!r}: write_epochs writes each committed epoch, so the job needs "
                "a processing guarantee (EXACTLY_ONCE or AT_LEAST_ONCE) on the Spark runner; a batch job "
                "writes a DataFrame with write_dataframe"
            )

    def capabilities(self) -> frozenset[VertexCapability]:
        return frozenset({VertexCapability.WRITES_EPOCH_TABLES})

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        supplier = ProcessorSupplier.of(_EpochItemsP, does_work_without_input=False)
        return {m: supplier for m in member_indexes}


class _Table:
    """One sink's table location: its file system and the names this job writes there."""

    def __init__(self, vertex: str, sink: EpochTableSink, job_id: str) -> None:
        self.vertex = vertex
        self.sink = sink
        self.job_id = job_id
        import fsspec  # driver only: executors unpickle this module from the py-files zip, without fsspec

        self.fs, root = fsspec.core.url_to_fs(sink.path)
        self.root = root.rstrip("/")
        #: The path as Spark's writer takes it (a local path made explicit, whatever the default FS).
        self.spark_root = f"file://{self.root}" if is_local(self.fs) else sink.path.rstrip("/")
        self._published = re.compile(rf"^part-{re.escape(job_id)}-e(\d{{10}})-")
        self._staged = re.compile(rf"^{re.escape(job_id)}-e(\d{{10}})$")

    def staging(self, epoch: int) -> str:
        return f"{STAGING}/{self.job_id}-e{epoch:010d}"

    def stage(self, spark: Any, epoch: int, items: list[Any]) -> None:
        sink = self.sink
        df = spark.createDataFrame(items, sink.schema)
        target = f"{self.spark_root}/{self.staging(epoch)}"
        df.write.format(sink.format).mode("overwrite").options(**sink.options).save(target)

    def publish(self, epoch: int) -> None:
        """Move epoch `epoch`'s staged files into the table (those moved before stay moved)."""
        directory = f"{self.root}/{self.staging(epoch)}"
        if not self.fs.exists(directory):
            return
        for path in sorted(self.fs.ls(directory, detail=False)):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if not name.startswith(("_", ".")):
                self.fs.mv(path, f"{self.root}/part-{self.job_id}-e{epoch:010d}-{name}")
        self.fs.rm(directory, recursive=True)
        self._drop_empty_staging()

    def _drop_empty_staging(self) -> None:
        staging = f"{self.root}/{STAGING}"
        if self.fs.exists(staging) and not self.fs.ls(staging, detail=False):
            self.fs.rm(staging, recursive=True)

    def settle(self, committed: int) -> None:
        """Publish staged epochs up to `committed`; delete this job's files of later epochs."""
        staging = f"{self.root}/{STAGING}"
        if self.fs.exists(staging):
            for path in sorted(self.fs.ls(staging, detail=False)):
                match = self._staged.match(path.rstrip("/").rsplit("/", 1)[-1])
                if match is None:
                    continue
                epoch = int(match.group(1))
                if epoch <= committed:
                    _log.info("vertex %r: publishing committed epoch %d to %s", self.vertex, epoch, self.root)
                    self.publish(epoch)
                else:
                    self.fs.rm(path, recursive=True)
            self._drop_empty_staging()
        if self.fs.exists(self.root):
            for path in self.fs.ls(self.root, detail=False):
                match = self._published.match(path.rstrip("/").rsplit("/", 1)[-1])
                if match is not None and int(match.group(1)) > committed:
                    _log.info("vertex %r: deleting %s of an epoch that did not commit", self.vertex, path)
                    self.fs.rm(path)


class EpochTables:
    """The `write_epochs` sinks of one job, for its epoch loop (see the module docstring)."""

    def __init__(self, spark: Any, prepared: PreparedDag, job_id: str) -> None:
        self.spark = spark
        self.tables = [
            _Table(name, cast(EpochTableSink, prepared.meta_supplier(name)), job_id)
            for name in prepared.with_capability(VertexCapability.WRITES_EPOCH_TABLES)
        ]

    def settle(self, committed: int) -> None:
        for table in self.tables:
            table.settle(committed)

    def stage(self, epoch: int, results: dict[str, list[Any]]) -> None:
        """Write the epoch's items of each sink to its staging directory; they leave `results`
        (the job does not keep them as a collecting sink's)."""
        for table in self.tables:
            items = results.pop(table.vertex, [])
            if not items:
                continue
            try:
                table.stage(self.spark, epoch, items)
            except Exception as cause:
                raise JobFailedError(
                    f"vertex {table.vertex!r}: writing epoch {epoch}'s DataFrame to "
                    f"{table.root}/{table.staging(epoch)} failed: {cause}",
                    vertex=table.vertex,
                ) from cause

    def publish(self, epoch: int) -> None:
        for table in self.tables:
            table.publish(epoch)


def write_epochs(
    path: str,
    schema: Any = None,
    format: str = "parquet",
    **options: str,
) -> EpochTableSink:
    """A sink of a job with a processing guarantee (Spark runner): the items of each committed
    epoch (Rows, tuples or dicts) become a DataFrame appended to the table at `path`, exactly once
    per epoch, like Structured Streaming's `foreachBatch` with an idempotent write.

    Each epoch's DataFrame is written to a staging directory under `path` before the epoch
    commits and moved into `path` after, so an epoch that aborts and runs again, a driver that
    dies between the two, or a restored job leaves each committed epoch's rows in the table
    once; `spark.read.parquet(path)` reads the table. The items pass through the driver (see
    `runners.spark.epoch_tables`). `path` must be a local path (or a URL both Spark and
    fsspec read).

    With `spark` your SparkSession and `folder` a fresh directory:

    ```pycon
    >>> from jetspark import DAG, Edge, JobConfig, processors as P
    >>> from jetspark.core import ProcessingGuarantee
    >>> from jetspark.runners.spark import SparkRunner, write_epochs
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", P.generator_stream(count=100))
    >>> squares = dag.new_vertex("squares", P.map(lambda n: (n, n * n)))
    >>> table = dag.new_vertex("table", write_epochs(f"{folder}/squares", schema="n long, square long"))
    >>> _ = dag.edge(Edge.between(numbers, squares)).edge(Edge.between(squares, table))
    >>> config = JobConfig(name="squares", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
    ...                    checkpoint_root=f"{folder}/checkpoints", snapshot_interval_millis=200)
    >>> _ = SparkRunner(spark).run(dag, config)
    >>> df = spark.read.parquet(f"{folder}/squares")
    >>> df.count(), df.selectExpr("sum(square)").first()[0]
    (100, 328350)
    ```

    :param path: the table's directory (created when the first epoch with output commits).
    :param schema: the DataFrame's schema (a StructType, a DDL string or column names); None
        infers it from each epoch's items.
    :param format: the DataFrameWriter format ("parquet", "json", "csv", ...).
    :param options: passed on to the DataFrameWriter (`compression="snappy"`, ...).
    """
    if not isinstance(path, str) or not path:
        raise ValueError(f"write_epochs: path must be a non-empty string, got {path!r}")
    return EpochTableSink(path, format, schema, dict(options))

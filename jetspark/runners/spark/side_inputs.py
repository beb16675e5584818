"""A DataFrame as a bounded source of a job with a processing guarantee: read once, replayed exactly.

A DataFrame is a query, not data: run again, it may see a table that changed since, and its rows
come in no fixed order, so a source over it cannot resume from an offset. Under a guarantee, a
`from_dataframe` source is therefore frozen when the job is first submitted: the DataFrame is
written once, as Parquet, to `<checkpoint_root>/<job>/side-inputs/<job id>/<vertex>` (Spark's own
writer, so the copy is written by the executors, not the driver), and the vertex becomes jetspark's
Parquet file source over that copy (`processors.file_sources`), which deals row groups to the
processors and saves per row group the rows already emitted in every snapshot. So a restored epoch
goes on exactly where the committed snapshot left it, and a driver that died and is submitted again
finds the same copy (same job id) instead of reading the DataFrame a second time. The rows are
emitted as `pyspark.sql.Row`s, as the batch source's are.

The copy is deleted with the job's snapshots when the job completes or is cancelled
(`drop_side_inputs`). A job started from an exported snapshot of another job reads that job's copy,
which must then still exist.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from jetspark.core.suppliers import ProcessorMetaSupplier, ProcessorSupplier, VertexCapability
from jetspark.planning.pipeline import PreparedDag, replace_meta_suppliers
from jetspark.processors.file_sources import parquet_source
from jetspark.processors.sources import from_iterable
from jetspark.processors.split_readers import ParquetSplitReader
from jetspark.runners.spark.sources import DataFrameSource

if TYPE_CHECKING:
    from jetspark.checkpoint import CheckpointStore

_log = logging.getLogger("jetspark.spark.side_inputs")


class _RowReader(ParquetSplitReader):
    """Parquet rows as `pyspark.sql.Row`s, with the DataFrame's column order."""

    def batches(self, split: Any, position: int) -> Iterator[tuple[int, list[Any]]]:
        from pyspark.sql import Row

        for first, rows in super().batches(split, position):
            yield first, [Row(**row) for row in rows]


def freeze_side_inputs(prepared: PreparedDag, store: CheckpointStore, job_id: str) -> PreparedDag:
    """`prepared` with every `from_dataframe` source (`VertexCapability.READS_DATAFRAME`) replaced
    by a Parquet source over its frozen copy (written now, unless an earlier run of this job wrote
    it); `prepared` itself when it has none."""
    frozen: dict[str, ProcessorMetaSupplier] = {}
    for name in prepared.with_capability(VertexCapability.READS_DATAFRAME):
        source = cast(DataFrameSource, prepared.meta_supplier(name))
        if not store.is_local:
            raise ValueError(
                f"vertex {name!r}: under a processing guarantee a from_dataframe source is copied once "
                f"under JobConfig.checkpoint_root, which must then be a file system path both Spark and "
                f"the executors read (got protocol {store.fs.protocol!r})"
            )
        directory = store.side_input_dir(job_id, name)
        if not store.side_input_written(directory):  # a run that died while writing it left no marker
            _log.info("vertex %r: copying its DataFrame to %s (read once)", name, directory)
            source.df.write.mode("overwrite").parquet(f"file://{directory}")
        frozen[name] = ProcessorMetaSupplier.of(_frozen_source(directory, source.df.columns))
    return replace_meta_suppliers(prepared, frozen)


def _frozen_source(directory: str, columns: Sequence[str]) -> ProcessorSupplier:
    try:
        return parquet_source("from_dataframe", directory, functools.partial(_RowReader, list(columns)))
    except FileNotFoundError:  # an empty DataFrame may leave no data file
        return from_iterable([])


def drop_side_inputs(store: CheckpointStore) -> None:
    """Delete the job's DataFrame copies (the job completed: nothing restores from them)."""
    try:
        store.drop_side_inputs()
    except OSError:
        _log.exception("deleting the DataFrame copies of job %r failed", store.job)

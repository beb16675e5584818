"""Checks that need no Spark, made before a runner starts anything (a Spark session takes 10-90 s
to start; a mistake it would meet after that should be reported in well under a second).

`check_checkpoint_paths`: the checkpoint root and startpoints directory of a config are
directories this process can write (or can create). `check_before_spark`: that (for a DAG the
planning pipeline validated already, `planning.pipeline.prepare`), what a job with a processing guarantee needs on Spark (a checkpoint root and a valid job name),
and that every vertex's supplier and every edge's key function pickles, naming the vertex or edge.
Each raises `DagValidationError` with one line naming the field, path, vertex or edge.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import cloudpickle

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.errors import DagValidationError

_SPARK_RUNNER = "jetspark.runners.spark"
#: Largest pickled supplier of one vertex: every Spark task unpickles every supplier of the plan.
MAX_SUPPLIER_BYTES = 16 << 20


def supplier_too_large(vertex: str, size: int, limit: int = MAX_SUPPLIER_BYTES) -> DagValidationError:
    return DagValidationError(
        f"vertex {vertex!r}: its suppliers pickle to {size / 2**20:.1f} MiB, more than "
        f"{limit / 2**20:.0f} MiB, and every Spark task would receive and unpickle all of "
        "it (a source over a large in-memory collection, such as from_iterable(big_list)); read large "
        "inputs with jetspark.runners.spark.from_rdd(sc.parallelize(items, n)) or from_dataframe(), "
        "or generate them on the executors"
    )


def check_before_spark(dag: DAG, config: JobConfig) -> None:
    """Everything the Spark runner can check before it starts a session, of a validated `dag`
    (see the module docstring)."""
    if config.snapshots_enabled:
        _check_guarantee_needs(config)
    check_checkpoint_paths(config)
    _check_picklable(dag)


def check_shippable(dag: DAG, config: JobConfig) -> None:
    """`check_before_spark` without touching the file system (`jetspark dag --plan`): the
    guarantee's needs and that every supplier and key function pickles."""
    if config.snapshots_enabled:
        _check_guarantee_needs(config)
    _check_picklable(dag)


def _check_guarantee_needs(config: JobConfig) -> None:
    guarantee = config.processing_guarantee.value
    if config.checkpoint_root is None:
        raise DagValidationError(
            f"job {config.name or '(unnamed)'!r}: with processing guarantee {guarantee} the Spark runner keeps "
            "snapshots in a checkpoint directory; set JobConfig.checkpoint_root (a path or fsspec URL that "
            "every executor can reach)"
        )
    if config.name is None:
        raise DagValidationError(
            f"job with processing guarantee {guarantee}: set JobConfig.name; the job's snapshots are kept "
            "under its name, and it resumes from them when submitted again"
        )
    from jetspark.checkpoint.store import check_name  # here: executors import this module without fsspec

    try:
        check_name("job", config.name)
    except ValueError as error:
        raise DagValidationError(f"JobConfig.name: {error}") from None


def check_checkpoint_paths(config: JobConfig) -> None:
    """`JobConfig.checkpoint_root` and `startpoints_directory`, when local paths, are directories
    this process may write, or may create (their nearest existing parent is one)."""
    for field in ("checkpoint_root", "startpoints_directory"):
        value = getattr(config, field)
        local = _local_path(value)
        if local is not None:
            problem = _directory_problem(local)
            if problem is not None:
                raise DagValidationError(f"JobConfig.{field} {value!r}: {problem}")


def _local_path(value: str | None) -> Path | None:
    """The local path `value` names (a plain path or a file:// URL); None for other URLs."""
    if value is None:
        return None
    if value.startswith("file://"):
        return Path(value[len("file://") :])
    if "://" in value:
        return None  # another file system: only its own client can tell
    return Path(value).expanduser()


def _directory_problem(path: Path) -> str | None:
    if path.exists():
        if not path.is_dir():
            return "is a file, not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return "is a directory this user cannot write to"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot be created: {str(parent)!r} is a file, not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot be created: this user cannot write to {str(parent)!r}"
    try:  # access() says yes to root everywhere: /proc and read-only mounts answer only a mkdir
        os.rmdir(tempfile.mkdtemp(prefix=".jetspark-check-", dir=parent))
    except OSError as error:
        return f"cannot be created in {str(parent)!r}: {error.strerror or error}"
    return None


def _check_picklable(dag: DAG) -> None:
    """Every supplier and key function travels to Spark executors pickled: name what does not."""
    for vertex in dag:
        if type(vertex.meta_supplier).__module__.startswith(_SPARK_RUNNER):
            continue  # from_rdd / DataFrame sources and sinks hold Spark objects; the plan ships their parts
        try:
            size = len(cloudpickle.dumps(vertex.meta_supplier))
        except Exception as error:
            raise DagValidationError(
                f"vertex {vertex.name!r}: its ProcessorSupplier cannot be pickled to ship it to Spark executors "
                f"({type(error).__name__}: {error}); suppliers and everything they hold must be picklable "
                "with cloudpickle"
            ) from error
        if size > MAX_SUPPLIER_BYTES:  # refused before a Spark session takes its 10-90 s to start
            raise supplier_too_large(vertex.name, size)
    for edge in dag.edges:
        try:
            cloudpickle.dumps((edge.key_fn, edge.partitioner))
        except Exception as error:
            raise DagValidationError(
                f"edge {edge.name}: its key function or partitioner cannot be pickled "
                f"({type(error).__name__}: {error})"
            ) from error

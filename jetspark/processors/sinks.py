"""Sinks: `collect` (hands items to the runner, for tests and small results), `logger`, `print`, `noop`,
and the sinks that write where they run (on a Spark executor, on its own machine): `files` and
`batches` (any external system, such as a database, through a function of yours).

Sinks take whole inboxes at a time (one `drain_to` per call), accept watermarks without emitting
anything, and save no snapshot entries. None of them is transactional: after suspend/resume their
output is exact (the terminal snapshot's barrier always aligns), but after a restart from a periodic
snapshot the items they received after that snapshot reach them again (at-least-once).
"""

from __future__ import annotations

import builtins
import functools
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import IO, Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.context import RESULTS_ATTRIBUTE, STAGING_ATTRIBUTE, ProcessorContext
from jetspark.core.inbox import Inbox
from jetspark.core.suppliers import (
    MemberSuppliers,
    ProcessorMetaSupplier,
    ProcessorSupplier,
    VertexCapability,
)
from jetspark.core.watermark import Watermark
from jetspark.processors.staging import OutputStaging


class _SinkP(AbstractProcessor):
    """Base of the sinks: no outbound edge, so watermarks end here."""

    def try_process_watermark(self, watermark: Watermark) -> bool:
        """A sink has nothing downstream to forward a watermark to."""
        return True


class _CollectP(_SinkP):
    """Adds each inbox batch to the runner's result collector under the vertex name."""

    def init_processor(self, context: ProcessorContext) -> None:
        collector = context.attributes.get(RESULTS_ATTRIBUTE)
        if collector is None:
            raise RuntimeError(
                f"vertex {context.vertex_name!r}: collect() needs the runner's result collector in "
                f"ProcessorContext.attributes[{RESULTS_ATTRIBUTE!r}]; this runner provides none"
            )
        self._add = collector.add
        self._vertex = context.vertex_name

    def process(self, ordinal: int, inbox: Inbox) -> None:
        batch: list[Any] = []
        inbox.drain_to(batch)
        self._add(self._vertex, batch)


class _LoggerP(_SinkP):
    """Logs each item with the vertex's logger; while logging is not configured at all (no handler
    on the way to the root logger), writes it to standard error instead, so that under Python's
    defaults (WARNING and above, INFO dropped) the sink still shows its items. Once the user
    configures logging, their levels and handlers decide, and no line appears twice."""

    def __init__(self, level: int) -> None:
        self._level = level

    def process(self, ordinal: int, inbox: Inbox) -> None:
        logger = self.logger
        if not logger.hasHandlers():
            name = self.context.vertex_name
            lines = []
            while (item := inbox.poll()) is not None:
                lines.append(f"{name}: {item!r}\n")
            sys.stderr.write("".join(lines))
            return
        if not logger.isEnabledFor(self._level):
            inbox.drain_to([])
            return
        log = logger.log
        level = self._level
        while (item := inbox.poll()) is not None:
            log(level, "%r", item)

    def try_process_watermark(self, watermark: Watermark) -> bool:
        """Logged at DEBUG, as Jet's logger sink logs them at FINE (never on standard error)."""
        self.logger.debug("%r", watermark)
        return True


class _PrintP(_SinkP):
    """Prints each inbox batch, one `format_item(item)` per line, and flushes."""

    def __init__(self, format_item: Callable[[Any], str], prefix: bool) -> None:
        self._format = format_item
        self._prefix = prefix

    def process(self, ordinal: int, inbox: Inbox) -> None:
        batch: list[Any] = []
        inbox.drain_to(batch)
        fmt = self._format
        head = f"{self.context.vertex_name}#{self.context.global_processor_index}: " if self._prefix else ""
        builtins.print("".join(f"{head}{fmt(item)}\n" for item in batch), end="", file=sys.stdout, flush=True)


class _NoopP(_SinkP):
    """Drops everything."""

    def __init__(self) -> None:
        self._scratch: list[Any] = []

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.drain_to(self._scratch)
        self._scratch.clear()


class _FilesP(_SinkP):
    """Writes `format(item)` lines to a file of its own; non-cooperative, as file I/O blocks.

    Where the runner stages output (`processors.staging`), the file is written under the staging
    name and published when the job succeeds. Otherwise (a job with a processing guarantee on the
    local runner) it is written in place and opened on first use, not in `init_processor`: only
    then is it known whether the processor was restored from a snapshot (`finish_snapshot_restore`
    is called on every processor of a restored job). A restored processor appends to what the job
    wrote before the snapshot; a fresh one replaces the file.
    """

    def __init__(self, directory: str, format_item: Callable[[Any], str]) -> None:
        self._directory = directory
        self._format = format_item
        self._file: IO[str] | None = None
        self._restored = False

    def is_cooperative(self) -> bool:
        return False

    def init_processor(self, context: ProcessorContext) -> None:
        self._name = f"{context.vertex_name}-{context.global_processor_index:05d}.txt"
        self._staging: OutputStaging | None = context.attributes.get(STAGING_ATTRIBUTE)
        if self._staging is None:
            os.makedirs(self._directory, exist_ok=True)

    def finish_snapshot_restore(self) -> bool:
        self._restored = True
        return True

    def _opened(self) -> IO[str]:
        if self._file is None:
            if self._staging is not None:
                path, mode = self._staging.staged_path(self._directory, self._name), "w"
            else:
                path, mode = os.path.join(self._directory, self._name), "a" if self._restored else "w"
            self._file = open(path, mode, encoding="utf-8")  # noqa: SIM115 (closed in close())
        return self._file

    def process(self, ordinal: int, inbox: Inbox) -> None:
        file = self._opened()
        batch: list[Any] = []
        inbox.drain_to(batch)
        fmt = self._format
        file.write("".join(fmt(item) + "\n" for item in batch))

    def save_to_snapshot(self) -> bool:
        """Flush, so that every line the snapshot accounts for is in the file (not in a buffer)."""
        self._opened().flush()
        return True

    def complete(self) -> bool:
        self._opened().flush()
        return True

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class FilesSink(ProcessorMetaSupplier):
    """Meta supplier of a `files` sink: runners read `directory` and `overwrite` at submit."""

    def __init__(self, directory: str, format_item: Callable[[Any], str], overwrite: bool) -> None:
        self.directory = directory
        self.overwrite = overwrite
        self.supplier = ProcessorSupplier.of(functools.partial(_FilesP, directory, format_item))

    def capabilities(self) -> frozenset[VertexCapability]:
        return frozenset({VertexCapability.WRITES_FILES})

    def get(self, member_indexes: Sequence[int]) -> MemberSuppliers:
        return {member: self.supplier for member in member_indexes}

    def __repr__(self) -> str:
        return f"files({self.directory!r}, overwrite={self.overwrite})"


class _BatchesP(_SinkP):
    """Calls the user's `write(batch, context)` once per inbox batch; non-cooperative (it may block)."""

    def __init__(self, write: Callable[[list[Any], ProcessorContext], object]) -> None:
        self._write = write

    def is_cooperative(self) -> bool:
        return False

    def process(self, ordinal: int, inbox: Inbox) -> None:
        batch: list[Any] = []
        inbox.drain_to(batch)
        self._write(batch, self.context)


def files(directory: str, format_item: Callable[[Any], str] = str, overwrite: bool = False) -> FilesSink:
    """Write each item as a line `format_item(item)` to `<directory>/<vertex>-<global index:05d>.txt`
    (vertex `out`'s processor 0 writes `out-00000.txt`).

    Each processor writes its own file where it runs (on Spark, on an executor: the directory must
    be on a file system that the driver and every executor share, as for Spark's own file output).
    The output is committed as Hadoop's file output committer does: every task attempt writes
    under `<directory>/_temporary/`, and only when the job succeeds are the files of the attempts
    Spark accepted renamed into place, followed by an empty `_SUCCESS`. Task retries, lost
    workers and speculative copies leave exactly one copy of every line; a failed or cancelled job
    leaves no output and no `_SUCCESS`.

    A directory that already holds output is refused when the job is submitted, unless
    `overwrite=True`: then the earlier output is replaced when the job succeeds (never before).
    Files that a `files` sink did not write are never deleted: such a directory is refused even
    with `overwrite`.

    Jobs with a processing guarantee on the local runner write in place instead (the
    exactly-once file sink is `transactional_files`): a restored processor appends to its file, so after
    `suspend()`/`resume()` the files hold every item exactly once, and after a restart from a
    periodic snapshot the items written after that snapshot are written again (at-least-once).
    A snapshot flushes the file first (to the operating system; no fsync).

    ```pycon
    >>> import os, tempfile
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> out = os.path.join(tempfile.mkdtemp(), "out")
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", P.from_iterable([1, 2, 3]))
    >>> _ = dag.edge(Edge.between(numbers, dag.new_vertex("out", P.files(out, lambda n: f"n={n}"))))
    >>> job = run_dag(dag)
    >>> sorted(os.listdir(out))
    ['_SUCCESS', 'out-00000.txt']
    >>> print(open(os.path.join(out, "out-00000.txt")).read(), end="")
    n=1
    n=2
    n=3
    ```

    :param directory: where the files go (created if missing).
    :param format_item: makes an item's line (`str` by default).
    :param overwrite: replace the output of an earlier job in `directory` when this one succeeds.
    """
    if not callable(format_item):
        raise TypeError(f"files(): format_item must be callable, got {format_item!r}")
    return FilesSink(os.fspath(directory), format_item, overwrite)


def batches(write: Callable[[list[Any], ProcessorContext], object]) -> ProcessorSupplier:
    """Call `write(batch, context)` with each batch of items, where the processor runs.

    For external systems such as a database: `context` names the job, vertex and processor index,
    so `write` can open one connection per processor (cache it on first use). Runs on a thread of
    its own, so `write` may block. Not transactional.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> def write(batch, context):
    ...     print(context.vertex_name, context.global_processor_index, sorted(batch))
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", P.from_iterable([2, 1, 3]))
    >>> _ = dag.edge(Edge.between(numbers, dag.new_vertex("db", P.batches(write))))
    >>> job = run_dag(dag)
    db 0 [1, 2, 3]
    ```

    :param write: called with each batch (a list of items) and the processor's context.
    """
    if not callable(write):
        raise TypeError(f"batches(): write must be callable, got {write!r}")
    return ProcessorSupplier.of(functools.partial(_BatchesP, write))


def collect() -> ProcessorSupplier:
    """Hand every item to the runner; the job handle's `result(vertex_name)` returns them.

    Each `process` call adds its whole batch at once. Not transactional (see the module docstring).

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", P.from_iterable([3, 1, 2]))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(numbers, sink))
    >>> sorted(run_dag(dag).result("sink"))
    [1, 2, 3]
    ```
    """
    return ProcessorSupplier.of(_CollectP, does_work_without_input=False)


def logger(level: int = logging.INFO) -> ProcessorSupplier:
    """Log each item (`%r`) at `level` with the logger `jetspark.vertex.<vertex name>`, and each
    watermark at DEBUG.

    While logging is not configured (no handler on the way to the root logger, Python's default),
    each item is written to standard error as `<vertex>: <item>` instead, whatever `level`.

    ```pycon
    >>> import logging, sys
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> log, to_stdout = logging.getLogger("jetspark.vertex.log"), logging.StreamHandler(sys.stdout)
    >>> log.addHandler(to_stdout); log.setLevel(logging.INFO)
    >>> dag = DAG()
    >>> words = dag.new_vertex("words", P.from_iterable(["hello"]))
    >>> _ = dag.edge(Edge.between(words, dag.new_vertex("log", P.logger())))
    >>> job = run_dag(dag)
    'hello'
    >>> log.removeHandler(to_stdout)
    ```

    :param level: the logging level of the records (`logging.INFO` by default).
    """
    return ProcessorSupplier.of(functools.partial(_LoggerP, level), does_work_without_input=False)


def print(format_item: Callable[[Any], str] = str, prefix: bool = False) -> ProcessorSupplier:
    """Print each item as a line `format_item(item)` on standard output, where the processor runs.

    With `prefix`, each line starts with `<vertex>#<global processor index>: `. On the local
    runner and on an embedded `local[*]` Spark that is your terminal; on a cluster it is each
    executor's standard output (its log in Spark's UI): use `collect` to see items on the driver.

    One processor each (`local_parallelism=1`) keeps the lines in the order of the items:

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", P.from_iterable([1, 2, 3]), local_parallelism=1)
    >>> printer = P.print(lambda n: f"{n} squared is {n * n}", prefix=True)
    >>> show = dag.new_vertex("show", printer, local_parallelism=1)
    >>> _ = dag.edge(Edge.between(numbers, show))
    >>> job = run_dag(dag)
    show#0: 1 squared is 1
    show#0: 2 squared is 4
    show#0: 3 squared is 9
    ```

    :param format_item: makes an item's line (`str` by default).
    :param prefix: whether each line starts with `<vertex>#<global processor index>: `.
    """
    if not callable(format_item):
        raise TypeError(f"print(): format_item must be callable, got {format_item!r}")
    return ProcessorSupplier.of(
        functools.partial(_PrintP, format_item, prefix), does_work_without_input=False
    )


def noop() -> ProcessorSupplier:
    """Drop every item (for benchmarks and for DAGs whose output is a side effect).

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", P.from_iterable(range(1000)))
    >>> drop = dag.new_vertex("drop", P.noop())
    >>> _ = dag.edge(Edge.between(numbers, drop))
    >>> run_dag(dag).metrics()["drop"]["received"]
    1000
    ```
    """
    return ProcessorSupplier.of(_NoopP, does_work_without_input=False)

"""Exactly-once sinks: the two-phase commit of Jet's transactional sinks, and a file sink built on it.

`TransactionalSinkP` holds the protocol; a subclass says how to write to, prepare, commit and roll
back one transaction of its external system. A transaction's id is `<job id>-<vertex>-<global
processor index>-<run>-<sequence>`: a restarted processor finds what any earlier run left behind by
the prefix `<job id>-<vertex>`, and `<run>` (the epoch's run on Spark, else the execution) tells a
run apart from another run of the same epoch, so that a task of an aborted run that still prepares
a transaction after the epoch ran again and committed cannot have it taken for the committed one.

- Items go into the open transaction `seq`.
- `save_to_snapshot` saves `seq` (a broadcast entry, so a restore with another parallelism still
  sees every processor's); `snapshot_commit_prepare` prepares `seq` and opens `seq + 1`. A saved
  `seq` therefore means: every transaction up to `seq` belongs to the snapshot.
- `snapshot_commit_finish(True)` commits the prepared transactions; after `False` they wait for the
  next successful snapshot (a later snapshot's `seq` covers them too).
- After a restart, `restore_from_snapshot` commits the restored processors' prepared transactions up
  to their saved `seq` and rolls back the newer ones, and rolls back every other pending
  transaction of the processor indexes it restores (those of runs no snapshot names: a run that
  died or was aborted, a run of higher parallelism that died before its first commit). A new run
  starts its `seq` above every `seq` the snapshot holds for the vertex, so a processor index that
  comes back after the job ran on fewer members never reuses a sequence number (the file sinks
  name committed files by index and sequence). The job id is durable (kept in the checkpoint store from the job's first
  submit), so this reaches what any earlier run of the job left. Committing is idempotent: a transaction already committed is
  no longer pending, and is skipped.
- **On the coordinator** (Spark in epochs, where a restore in the next epoch would commit only
  after that epoch's span): a subclass whose `pending` and `commit` work from any process
  overrides `open_on_coordinator`; the driver then builds one instance of the sink from its
  supplier (`ProcessorSupplier.of(TheClass)` or of a `functools.partial` of it), and right after
  each snapshot is committed it commits the same transactions the restore would: for each saved
  `(prefix, seq)`, the pending ones with that prefix up to `seq` (`TransactionCommitter`). The
  restore still runs and finds them committed; if the coordinator's commit fails, the restore
  commits them as before. The built-in `postgres`, `transactional_files` and the format file
  sinks do this.
- `complete()` never commits while the runner takes snapshots: a commit there would be covered by
  no snapshot, and a restart from the last one would replay the same items into the next run's
  transactions (PostgreSQL: every such row twice). It returns False while anything is
  uncommitted, so that a snapshot takes the open transaction and its phase 2 commits it: in
  epochs (`ProcessorContext.in_epochs`) the epoch's terminal snapshot, whose commit the driver
  covers too; on the local runner the next snapshot, asked for at once
  (`SNAPSHOT_REQUEST_ATTRIBUTE`) rather than after the interval. Without snapshots (no
  processing guarantee, or a runner that takes none) `complete()` commits the rest, and the open
  transaction is committed whenever it holds `max_transaction_items` items.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
from collections.abc import Callable, Iterable
from typing import IO, Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.context import RUN_ATTRIBUTE, SNAPSHOT_REQUEST_ATTRIBUTE, ProcessorContext
from jetspark.core.inbox import Inbox
from jetspark.core.runs import is_newer_run, is_ordered
from jetspark.core.suppliers import ProcessorSupplier, SnapshotCommitter
from jetspark.core.watermark import BroadcastKey, Watermark

#: Items an open transaction collects before it is committed, in a job without snapshots.
DEFAULT_MAX_TRANSACTION_ITEMS = 100_000


def transaction_id(prefix: str, seq: int) -> str:
    return f"{prefix}-{seq:010d}"


def transaction_seq(txn: str) -> int:
    return int(txn.rsplit("-", 1)[1])


def transaction_index(txn: str) -> int:
    """The global processor index of transaction `<job id>-<vertex>-<index>-<run>-<seq>` (or
    `<job id>-<vertex>-<index>-<seq>`, written before ids named the run): neither the job id nor
    the vertex part holds a `-`."""
    return int(txn.split("-", 3)[2])


def transaction_prefix(txn: str) -> str:
    """`<job id>-<vertex>-<index>-<run>`: the processor and run that wrote the transaction."""
    return txn.rsplit("-", 1)[0]


def committed_stem(txn: str) -> str:
    """`part-<job id>-<processor:05d>-<seq:010d>`: the name a file sink gives a committed
    transaction's file (the durable job id first: a run started over writes beside an earlier
    run's files, never over them)."""
    return f"part-{txn.split('-', 1)[0]}-{transaction_index(txn):05d}-{transaction_seq(txn):010d}"


def run_token(context: ProcessorContext) -> str:
    """What tells this run of the processors apart: the run id (`RUN_ATTRIBUTE`) when it is an
    ordered one (`jetspark.core.runs`: a Spark epoch's run), which lets a restore tell a newer
    run's transactions from older ones; else 12 hex digits of the hash of the run or execution
    id: short (PostgreSQL's transaction ids end at 200 bytes) and distinct for ids that share a
    long beginning (the test kit's `<job>-<n>`)."""
    run = str(context.attributes.get(RUN_ATTRIBUTE) or context.execution_id)
    if is_ordered(run):
        return run
    return hashlib.blake2b(run.encode(), digest_size=6).hexdigest()


def transaction_run(txn: str) -> str:
    """The run token of transaction `<job id>-<vertex>-<index>-<run>-<seq>`."""
    return transaction_prefix(txn).rsplit("-", 1)[1]


#: The vertex part of a transaction id: its name with `-` and other signs replaced, plus a hash
#: of the name when that changed it or it is long, so that two vertices ("a.b", "a_b") never share
#: a prefix (each would roll back the other's transactions) and an id stays short.
_VERTEX_PART_CHARS = 48


def vertex_part(vertex: str) -> str:
    """The vertex's part of its transactions' ids (see `_VERTEX_PART_CHARS`)."""
    plain = re.sub(r"[^A-Za-z0-9_]", "_", vertex)
    if plain == vertex and len(plain) <= _VERTEX_PART_CHARS:
        return plain
    digest = hashlib.blake2b(vertex.encode(), digest_size=4).hexdigest()
    return f"{plain[:_VERTEX_PART_CHARS]}_{digest}"


class TransactionalSinkP(AbstractProcessor):
    """Base of exactly-once sinks; see the module docstring. Subclasses implement the hooks
    `write`, `prepare`, `commit`, `rollback` and `pending`."""

    def __init__(self, max_transaction_items: int = DEFAULT_MAX_TRANSACTION_ITEMS) -> None:
        super().__init__()
        self.max_transaction_items = max_transaction_items
        self.prefix = ""
        self.seq = 0
        self._open_items = 0
        self._prepared: list[int] = []
        self._restored: dict[int, tuple[str, int]] = {}
        #: The highest `seq` any processor of the vertex saved in the restored snapshot.
        self._highest_saved = -1
        self._recovered = False

    # ---- the hooks --------------------------------------------------------------------------

    def write(self, txn: str, items: list[Any]) -> None:
        raise NotImplementedError

    def prepare(self, txn: str) -> None:
        """Make the transaction's writes durable but invisible."""
        raise NotImplementedError

    def commit(self, txn: str) -> None:
        """Make a prepared transaction visible. Called only for a transaction `pending` lists, or
        one this processor prepared."""
        raise NotImplementedError

    def rollback(self, txn: str) -> None:
        raise NotImplementedError

    def pending(self, prefix: str) -> list[str]:
        """Transactions `<prefix>-<seq>` written or prepared but not committed."""
        raise NotImplementedError

    def open_on_coordinator(self, job_id: str, vertex: str) -> bool:
        """Make `pending`, `commit`, `rollback` and `close` work on this instance, built on the coordinator
        (no `init_processor`, no context) for job `job_id`'s `vertex`, and return True; or return
        False (the default): the sink commits only from its processors. Return False if the
        coordinator cannot reach the system at all; raise if it could but failed (it is asked
        again later)."""
        return False

    def snapshot_committer(self, job_id: str, vertex: str) -> SnapshotCommitter | None:
        """A `TransactionCommitter` over this instance, if `open_on_coordinator` says it can."""
        if not self.open_on_coordinator(job_id, vertex):
            self.close()
            return None
        return TransactionCommitter(self, f"{job_id}-{vertex_part(vertex)}")

    # ---- the protocol -----------------------------------------------------------------------

    def init_processor(self, context: ProcessorContext) -> None:
        self.prefix = self.prefix_of(context.global_processor_index)

    def prefix_of(self, index: int) -> str:
        return f"{self._vertex_prefix()}-{index}-{run_token(self.context)}"

    def _vertex_prefix(self) -> str:
        """`<job id>-<vertex>`: every transaction of this vertex in any run of the job."""
        context = self.context
        return f"{context.job_id}-{vertex_part(context.vertex_name)}"

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._recover()
        items: list[Any] = []
        inbox.drain_to(items)
        self.write(transaction_id(self.prefix, self.seq), items)
        self._open_items += len(items)
        if not self.context.snapshotting_enabled and self._open_items >= self.max_transaction_items:
            self._commit_open()

    def save_to_snapshot(self) -> bool:
        self._recover()
        return self.try_emit_to_snapshot(
            BroadcastKey(("txn", self.context.global_processor_index)), (self.prefix, self.seq)
        )

    def snapshot_commit_prepare(self) -> bool:
        if self._open_items:
            self.prepare(transaction_id(self.prefix, self.seq))
            self._prepared.append(self.seq)
        self._open_items = 0
        self.seq += 1
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success:
            for seq in self._prepared:
                self.commit(transaction_id(self.prefix, seq))
            self._prepared.clear()
        return True

    def complete(self) -> bool:
        self._recover()
        if self.context.in_epochs:
            return not (self._open_items or self._prepared)
        request_snapshot = self.context.attributes.get(SNAPSHOT_REQUEST_ATTRIBUTE)
        if request_snapshot is not None:
            if self._open_items or self._prepared:
                request_snapshot()
                return False
            return True
        self._commit_open()
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        for key, (prefix, seq) in inbox:
            index = key.key[1]
            self._highest_saved = max(self._highest_saved, seq)
            if index % self.context.total_parallelism == self.context.global_processor_index:
                self._restored[index] = (prefix, seq)
        inbox.drain(lambda _entry: None)

    def finish_snapshot_restore(self) -> bool:
        self._recover()
        return True

    def _recover(self) -> None:
        """Once, before anything else: settle what earlier runs left (see the module docstring)."""
        if self._recovered:
            return
        self._recovered = True
        own = self.context.global_processor_index
        if own not in self._restored:  # a fresh start, or a processor the snapshot did not have
            self._restored[own] = (self.prefix, -1)
        for prefix, seq in self._restored.values():
            for txn in sorted(self.pending(prefix), key=transaction_seq):
                if transaction_seq(txn) <= seq:
                    self.commit(txn)
                else:
                    self.rollback(txn)
        self._roll_back_orphans()
        self.seq = max(self._highest_saved, *(seq for _, seq in self._restored.values())) + 1
        self._restored.clear()

    def _roll_back_orphans(self) -> None:
        """Roll back what runs that no restored snapshot names left for the indexes this
        processor restores (each index goes to one processor, `index % total`, as a restore
        routes them): a run that was aborted or died, or a run of higher parallelism that died
        before its first commit. The named runs' transactions were settled by `seq`. A newer
        run's are left alone: this processor belongs to a late task of an aborted run, and the
        newer run's snapshot may be committed with its transactions still to be committed (the
        next run's restore rolls back whatever this run itself leaves)."""
        total = self.context.total_parallelism
        own = self.context.global_processor_index
        own_run = run_token(self.context)
        named = {prefix for prefix, _ in self._restored.values()}
        for txn in self.pending(self._vertex_prefix()):
            if transaction_index(txn) % total != own or transaction_prefix(txn) in named:
                continue
            if is_newer_run(transaction_run(txn), own_run):
                continue
            self.rollback(txn)

    def _commit_open(self) -> None:
        self.snapshot_commit_prepare()
        self.snapshot_commit_finish(True)


class TransactionCommitter(SnapshotCommitter):
    """Commits on the coordinator what a sink's restore commits: for each `(prefix, seq)` the
    snapshot names, the pending transactions with that prefix up to `seq` (never one after it:
    those the restore rolls back). Committing is idempotent (a committed transaction is no longer
    pending), so the restore that follows finds nothing left to do."""

    def __init__(self, sink: TransactionalSinkP, vertex_prefix: str = "") -> None:
        self.sink = sink
        #: `<job id>-<vertex>`: every transaction of the vertex in any run of the job.
        self.vertex_prefix = vertex_prefix

    def commit(self, entries: Iterable[tuple[Any, Any]]) -> int:
        saved = {
            value[0]: value[1]
            for key, value in entries
            if isinstance(key, BroadcastKey) and isinstance(key.key, tuple) and key.key[:1] == ("txn",)
        }
        committed = 0
        for prefix, seq in sorted(saved.items()):
            for txn in sorted(self.sink.pending(prefix), key=transaction_seq):
                if transaction_seq(txn) <= seq:
                    self.sink.commit(txn)
                    committed += 1
        return committed

    def discard_pending(self) -> int:
        if not self.vertex_prefix:
            return 0
        pending = self.sink.pending(self.vertex_prefix)
        for txn in pending:
            self.sink.rollback(txn)
        return len(pending)

    def close(self) -> None:
        self.sink.close()


class _TransactionalFilesP(TransactionalSinkP):
    """One file per transaction: written as `.<txn>.tmp`, committed by renaming it to
    `part-<job id>-<processor>-<seq>`; a transaction that wrote nothing leaves no file."""

    def __init__(self, directory: str, format_item: Callable[[Any], str], max_transaction_items: int) -> None:
        super().__init__(max_transaction_items)
        self.directory = directory
        self.format_item = format_item
        self._file: IO[str] | None = None
        self._file_txn = ""

    def is_cooperative(self) -> bool:
        return False  # file system calls may block

    def init_processor(self, context: ProcessorContext) -> None:
        super().init_processor(context)
        os.makedirs(self.directory, exist_ok=True)

    def open_on_coordinator(self, job_id: str, vertex: str) -> bool:
        """The driver renames the files when it sees the directory (a shared file system)."""
        return os.path.isdir(self.directory)

    def _temp(self, txn: str) -> str:
        return os.path.join(self.directory, f".{txn}.tmp")

    def _final(self, txn: str) -> str:
        return os.path.join(self.directory, committed_stem(txn))

    def write(self, txn: str, items: list[Any]) -> None:
        if self._file is None or self._file_txn != txn:
            self._close_file()
            self._file = open(self._temp(txn), "a", encoding="utf-8")  # noqa: SIM115 (closed at prepare)
            self._file_txn = txn
        fmt = self.format_item
        self._file.write("".join(f"{fmt(item)}\n" for item in items))

    def prepare(self, txn: str) -> None:
        self._close_file()

    def commit(self, txn: str) -> None:
        if self._file_txn == txn:
            self._close_file()
        # a missing file was committed before (a restore commits what phase 2 may have committed)
        with contextlib.suppress(FileNotFoundError):
            os.replace(self._temp(txn), self._final(txn))

    def rollback(self, txn: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(self._temp(txn))

    def pending(self, prefix: str) -> list[str]:
        head = f".{prefix}-"
        return [
            name[1:-4]
            for name in os.listdir(self.directory)
            if name.startswith(head) and name.endswith(".tmp")
        ]

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self._file_txn = ""

    def close(self) -> None:
        self._close_file()


def transactional_files(
    directory: str,
    format_item: Callable[[Any], str] = str,
    max_transaction_items: int = DEFAULT_MAX_TRANSACTION_ITEMS,
) -> ProcessorSupplier:
    """An exactly-once file sink: `format_item(item)` per line, one file per processor and
    transaction (`part-<job id>-<processor>-<seq>`), visible once the snapshot that covers it is committed.

    With EXACTLY_ONCE each line appears once after any failure and restart; readers should ignore
    names starting with a dot (transactions not committed yet). The directory must be reachable
    from every Spark executor (a shared file system) and written by one job only.

    ```pycon
    >>> import tempfile
    >>> from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee, processors as P
    >>> from jetspark.processors.transactional import read_lines
    >>> from jetspark.testing import run_dag
    >>> out = tempfile.mkdtemp()
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", P.from_iterable(range(5)))
    >>> _ = dag.edge(Edge.between(numbers, dag.new_vertex("out", P.transactional_files(out))))
    >>> job = run_dag(dag, JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE))
    >>> sorted(read_lines(out))
    ['0', '1', '2', '3', '4']
    ```

    :param directory: where the `part-*` files go.
    :param format_item: makes an item's line (`str` by default).
    :param max_transaction_items: a transaction holding this many items is closed and a new one
        begun (its file is still committed only with the next snapshot).
    """
    return ProcessorSupplier.of(
        functools.partial(_TransactionalFilesP, directory, format_item, max_transaction_items)
    )


def read_lines(directory: str) -> list[str]:
    """Every committed line under `directory` (the `part-*` files), for tests and small outputs."""
    lines: list[str] = []
    for name in sorted(os.listdir(directory)):
        if name.startswith("part-"):
            with open(os.path.join(directory, name), encoding="utf-8") as file:
                lines.extend(file.read().splitlines())
    return lines

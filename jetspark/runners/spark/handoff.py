"""Worker-to-worker handoff: a member's task runs in the Python worker that holds its processors.

`state_cache` keeps a member's processors in the Python worker that ran its epoch, but PySpark
sends a task to any idle worker of the executor: the member's next task lands in the holder only
by chance (about half the time on `local[2]`), and every other epoch restores the whole state from
the store. So the holder serves what it keeps: once it keeps processors it starts (once per
process) a daemon thread listening on a Unix socket (`handoff_registry`: a directory private to
the user) and registers as the holder of (job, stage, member). A task of that member that lands in
another worker of the host connects and *relays*: the holder's server thread runs
`task.run_stage_task` with the task's arguments, taking the kept processors from its own cache
with the same checks as ever (`EpochTask.take_kept`: snapshot id, the committed file's name and
SHA-256), and keeps them again after success. The worker Spark chose only moves records, on one
socket:

- the holder asks for input (`NEXT`); the relaying side reads the next records from Spark's
  iterator and sends them (`INPUT`, a few at a time; the end: `INPUT_END`);
- the holder sends the records the task yields, a batch of about a megabyte at a time (`OUT`);
  the relaying side yields each to Spark;
- the holder ends with `DONE` (the relaying side answers `ACK`) or `FAIL` (the task's error
  message, which carries the encoded failure of `failures`, and its traceback): the relaying side
  raises it as its own, so the driver sees the same error.

Data records carry their entries already pickled, so a hop costs a pickle of each record, not of
each item. Attempt number and attempt id come from the relaying task (`TaskContext` is one per
process in PySpark; the holder may be running a task of its own meanwhile).

When the handoff happens, and when not:
- only in a job in epochs, for a stage with vertices whose processors can be kept
  (`state_cache.eligible_vertices`), with a committed snapshot to restore from, when the epoch's
  span is under `MAX_SPAN` (PySpark kills an executor's idle workers once no task started for a
  minute, and a holder serving relays looks idle to Spark), and with `spark.python.worker.reuse`
  on (otherwise a worker serves one task and exits: nothing is kept);
- when the registry names a live worker other than this one, holding processors of the snapshot
  the epoch restores, and it accepts (it holds them at that snapshot id). Anything else before
  the run starts (no entry, a dead pid, a refused connection, a declined handshake) runs the task
  where it landed, restoring from the store as before;
- a failure after the run started fails the task (the epoch aborts and restarts from the last
  committed snapshot, as for any task failure). The holder closes the processors of a run that
  did not end with `ACK` and keeps nothing of it; it stops a run as soon as the relaying side's
  socket closes (Spark killed the task or its worker), at the engine's next round.

`JETSPARK_STATE_HANDOFF=off` in the executors' environment turns the handoff off
(`spark.executorEnv.JETSPARK_STATE_HANDOFF`; on `local[*]` the driver's environment).

A worker that keeps processors advertises them (and runs the server) whether relays happen or
not: the registry is also how the job's end reaches it (`forget_job`), so that it closes them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import socket
import struct
import threading
import traceback
from collections.abc import Collection, Generator, Iterable, Iterator
from typing import Any, cast

import attrs

from jetspark.core.errors import JobFailedError
from jetspark.runners.spark import handoff_registry, state_cache
from jetspark.runners.spark.failures import TaskFailure, encode_failure

_log = logging.getLogger("jetspark.spark.handoff")

#: Longest epoch span (seconds) with which tasks are relayed (see the module docstring).
MAX_SPAN = 30.0
#: Environment variable that turns the handoff off ("off", "0", "false").
SWITCH = "JETSPARK_STATE_HANDOFF"
#: Input records sent per `NEXT`, and the bytes after which a batch ends early.
INPUT_BATCH = 64
INPUT_BATCH_BYTES = 1 << 20
#: Bytes of output records the holder sends in one message (`_OutputBatch`).
OUTPUT_BATCH_BYTES = 1 << 20
#: Seconds the relaying side waits for the holder's answer to its request.
HANDSHAKE_SECONDS = 10.0

HELLO, ACCEPT, DECLINE, OUT, NEXT, INPUT, INPUT_END, DONE, FAIL, ACK, FORGET = range(1, 12)
_HEADER = struct.Struct("!BQ")


class RelayedTraceback(Exception):
    """The traceback of a task's failure in the worker its run was relayed to (the cause of the
    failure the relaying task raises, so Spark's message shows where it happened)."""


@attrs.frozen
class Request:
    """What a relaying task sends: `run_stage_task`'s arguments, and what the holder checks."""

    spec_bytes: bytes
    stage_index: int
    direct_source: str | None
    task: int
    epoch_bytes: bytes
    task_members: tuple[tuple[int, ...], ...] | None
    #: Spark's task attempt id and attempt number of the relaying task.
    attempt: tuple[int, int]
    job_id: str
    member: int
    vertices: tuple[str, ...]
    restore_id: int
    epoch: int


def enabled() -> bool:
    """Whether this worker may relay or serve: PySpark reuses it, and the switch is not off."""
    if os.environ.get(SWITCH, "").strip().lower() in ("off", "0", "false", "no"):
        return False
    return os.environ.get("SPARK_REUSE_WORKER", "") not in ("", "0")


def worth_it(span: float, restore_dir: str | None, commit_only: bool, eligible: Collection[str]) -> bool:
    """Whether a task with these settings may relay."""
    return bool(eligible) and restore_dir is not None and not commit_only and may_serve(span)


def may_serve(span: float) -> bool:
    """Whether a worker that kept processors of a job with this epoch span serves them."""
    return span < MAX_SPAN and enabled()


# ---- the relaying side -------------------------------------------------------------------------


def open_relay(request: Request, stage: int) -> Relay | None:
    """A relay of this task to the worker that holds its member's processors, accepted by it; None
    when there is none to relay to (the task then runs here)."""
    holder = handoff_registry.lookup(request.job_id, stage, request.member)
    if holder is None or holder.pid == os.getpid() or not handoff_registry.alive(holder.pid):
        return None
    if holder.snapshot_id != request.restore_id:
        _tell_to_forget(holder, request)
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(HANDSHAKE_SECONDS)
        sock.connect(holder.socket)
        channel = _Channel(sock)
        channel.send(HELLO, pickle.dumps(request, pickle.HIGHEST_PROTOCOL))
        kind, _ = channel.read()
        sock.settimeout(None)
    except (OSError, EOFError) as problem:
        sock.close()
        _log.debug(
            "member %d: holder pid %d cannot be reached (%s); running here",
            request.member,
            holder.pid,
            problem,
        )
        return None
    if kind != ACCEPT:
        sock.close()
        return None
    return Relay(channel, holder.pid, stage, request.member)


def _tell_to_forget(holder: handoff_registry.Holder, request: Request) -> None:
    """Tell a live holder whose processors of this member are of another snapshot (an aborted
    or superseded run's) to drop them and its registry entry: this task runs the member here,
    so they can never match again. Best effort: a holder that does not hear keeps them until its
    next task of the job, or 10 idle minutes."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.settimeout(HANDSHAKE_SECONDS)
            sock.connect(holder.socket)
            _Channel(sock).send(FORGET, pickle.dumps(request, pickle.HIGHEST_PROTOCOL))
        except OSError:
            pass


def forget_job(job_id: str) -> int:
    """At a job's end (completed, cancelled, suspended, failed), tell every worker of this host
    that the registry names as holding processors of the job to close them and withdraw its
    entries, so their state does not stay in memory until the workers' next task. Returns how many
    were told. Holders on other hosts are not reachable from here: they drop what they keep when
    their next task of any job finds it idle for `state_cache.IDLE_SECONDS`."""
    told = 0
    for path in handoff_registry.entries(job_id):
        stage_member = handoff_registry.stage_and_member(path, job_id)
        if stage_member is None:
            continue
        stage, member = stage_member
        holder = handoff_registry.lookup(job_id, stage, member)
        if holder is None or not handoff_registry.alive(holder.pid):
            continue
        request = Request(b"", stage, None, member, b"", None, (-1, -1), job_id, member, (), -1, -1)
        _tell_to_forget(holder, request)
        told += 1
    return told


class Relay:
    """The relaying task's side of one accepted relay (see the module docstring)."""

    def __init__(self, channel: _Channel, pid: int, stage: int, member: int) -> None:
        self.channel = channel
        self.pid = pid
        self.stage = stage
        self.member = member
        self.input_ended = False

    def run(self, records: Iterable[Any]) -> Iterator[Any]:
        """Yield what the holder's run yields, feeding it `records` as it asks; raise its failure."""
        channel = self.channel
        source = iter(records)
        try:
            while True:
                try:
                    kind, payload = channel.read()
                except (OSError, EOFError) as lost:
                    raise self._lost(lost) from lost
                if kind == OUT:
                    for dumped in pickle.loads(payload):
                        yield pickle.loads(dumped)
                elif kind == NEXT:
                    self._send_input(source)
                elif kind == DONE:
                    with contextlib.suppress(OSError):
                        channel.send(ACK, b"")
                    return
                elif kind == FAIL:
                    message, text = pickle.loads(payload)
                    failure = TaskFailure(message)
                    failure.local_traceback = text  # type: ignore[attr-defined]
                    raise failure from RelayedTraceback(text)
                else:
                    raise self._lost(ValueError(f"unexpected message {kind}"))
        finally:
            channel.close()

    def _send_input(self, source: Iterator[Any]) -> None:
        """Answer one `NEXT`: a batch of input records, or the end of the input (one message)."""
        batch: list[bytes] = []
        size = 0
        while not self.input_ended and len(batch) < INPUT_BATCH and size < INPUT_BATCH_BYTES:
            try:
                record = next(source)
            except StopIteration:
                self.input_ended = True
                break
            dumped = pickle.dumps(record, pickle.HIGHEST_PROTOCOL)
            batch.append(dumped)
            size += len(dumped)
        try:
            if batch:
                self.channel.send(INPUT, pickle.dumps(batch, pickle.HIGHEST_PROTOCOL))
            else:
                self.channel.send(INPUT_END, b"")
        except OSError as lost:
            raise self._lost(lost) from lost

    def _lost(self, cause: BaseException) -> TaskFailure:
        error = JobFailedError(
            f"stage {self.stage} member {self.member}: the Python worker (pid {self.pid}) that holds this "
            f"member's processors stopped mid-epoch ({type(cause).__name__}: {cause}; killed, or its executor "
            "went away); the epoch restarts from the last committed snapshot"
        )
        return encode_failure(error, None, None)


# ---- the holder's side -------------------------------------------------------------------------

_SERVER_LOCK = threading.Lock()
_server: _Server | None = None


def serve() -> str | None:
    """The socket path of this worker's handoff server, started now if it is not running; None
    when it cannot run (no private directory, no Unix sockets)."""
    global _server
    with _SERVER_LOCK:
        if _server is None:
            path = handoff_registry.socket_path()
            if path is None or not hasattr(socket, "AF_UNIX"):
                return None
            handoff_registry.sweep()
            try:
                _server = _Server(path)
            except OSError as problem:
                _log.warning("the state handoff server cannot listen on %s: %s", path, problem)
                return None
            if _stop_if_idle not in state_cache.WHEN_EMPTY:
                state_cache.WHEN_EMPTY.append(_stop_if_idle)
        return _server.path


def serving() -> bool:
    """Whether this worker's handoff server runs (tests)."""
    return _server is not None


def advertise(job_id: str, stage: int, member: int, snapshot_id: int) -> None:
    """Register this worker as the holder of (job, stage, member) at `snapshot_id`."""
    path = serve()
    if path is not None:
        holder = handoff_registry.Holder(os.getpid(), path, snapshot_id)
        handoff_registry.advertise(job_id, stage, member, holder)


def _stop_if_idle() -> None:
    """Stop the server when this worker keeps nothing and runs no relayed task."""
    global _server
    with _SERVER_LOCK:
        if _server is not None and _server.active == 0 and state_cache.size() == 0:
            _server.stop()
            _server = None


class _Server:
    """A listening socket and the daemon thread that accepts on it; a thread per relay."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.active = 0
        self.stopped = False
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(path)
            listener.listen(8)
        except OSError:
            listener.close()
            raise
        self.listener = listener
        self.thread = threading.Thread(target=self._accept, name="jetspark-state-handoff", daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # stopped
            with _SERVER_LOCK:
                if self.stopped:
                    conn.close()
                    return
                self.active += 1
            threading.Thread(
                target=self._handle, args=(conn,), name="jetspark-state-relay", daemon=True
            ).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            _serve_one(conn)
        except Exception:
            _log.exception("a relayed stage task failed outside the task")
        finally:
            with contextlib.suppress(OSError):
                conn.close()
            with _SERVER_LOCK:
                self.active -= 1
            _stop_if_idle()

    def stop(self) -> None:
        """Called with `_SERVER_LOCK` held."""
        self.stopped = True
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        self.listener.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def _serve_one(conn: socket.socket) -> None:
    channel = _Channel(conn)
    kind, payload = channel.read()
    if kind not in (HELLO, FORGET):
        return
    request: Request = pickle.loads(payload)
    stage = request.stage_index
    if kind == FORGET:
        state_cache.discard(request.job_id, stage, request.member, None)
        state_cache.released(request.job_id, stage, request.member)
        return
    if not state_cache.holds(request.job_id, request.vertices, request.member, request.restore_id):
        state_cache.released(request.job_id, stage, request.member)  # the entry names it wrongly
        channel.send(DECLINE, b"")
        return
    channel.send(ACCEPT, b"")
    peer = _peer_pid(conn)
    handoff_registry.note_relay(request.job_id, stage, request.member, os.getpid(), peer, request.epoch)
    stop = threading.Event()
    done = threading.Event()
    watcher = _watch(conn, stop, done)
    try:
        if not _run(channel, request, stop):
            # the relaying side went away: nothing of this run may stay (`finish_keeping` kept it)
            state_cache.discard(request.job_id, stage, request.member, request.epoch)
    finally:
        done.set()
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)
        if watcher is not None:
            watcher.join()
        handoff_registry.end_relay(request.job_id, stage, request.member)


def _run(channel: _Channel, request: Request, stop: threading.Event) -> bool:
    """Run the relayed task, sending what it yields; False when the relaying side is gone."""
    from jetspark.runners.spark.task import run_stage_task

    output = _OutputBatch(channel)
    run = cast(
        Generator[Any, None, None],
        run_stage_task(
            request.spec_bytes,
            request.stage_index,
            request.direct_source,
            request.task,
            _inputs(channel, output),
            request.epoch_bytes,
            request.task_members,
            attempt=request.attempt,
            stop=stop,
            relayed=True,
        ),
    )
    while True:
        try:
            record = next(run)
        except StopIteration:
            break
        except BaseException as failure:  # the task's own failure (encoded), or its input lost
            text = getattr(failure, "local_traceback", None) or "".join(traceback.format_exception(failure))
            with contextlib.suppress(OSError):
                channel.send(FAIL, pickle.dumps((str(failure), text), pickle.HIGHEST_PROTOCOL))
            return True  # the run closed its processors itself
        try:
            output.add(record)
        except OSError:
            run.close()  # GeneratorExit in the task: it closes its processors, keeps nothing
            return True
    try:
        output.send()
        channel.send(DONE, b"")
        kind, _ = channel.read()
    except (OSError, EOFError):
        return False
    return kind == ACK


class _OutputBatch:
    """The relayed run's output records, sent a batch (`OUT`) of about `OUTPUT_BATCH_BYTES` at a
    time. The relaying side's main thread moves them on to Spark, and in a worker that also runs
    a relayed task of its own (two tasks landed crosswise) it takes the GIL from that task's
    thread for every message: one message per record made each of them wait (two crossed relays
    took 1.4-1.7x the time of both runs where kept, 1.1x with batches:
    `benchmarks/relay_crossing.py`). Spark reads a
    task's output only for the next stage, so holding some back until the batch fills, the run
    asks for more input or ends delays nothing."""

    def __init__(self, channel: _Channel) -> None:
        self.channel = channel
        self.records: list[bytes] = []
        self.size = 0

    def add(self, record: Any) -> None:
        dumped = pickle.dumps(record, pickle.HIGHEST_PROTOCOL)
        self.records.append(dumped)
        self.size += len(dumped)
        if self.size >= OUTPUT_BATCH_BYTES:
            self.send()

    def send(self) -> None:
        """Send what is held (nothing when nothing is)."""
        if self.records:
            self.channel.send(OUT, pickle.dumps(self.records, pickle.HIGHEST_PROTOCOL))
            self.records = []
            self.size = 0


def _inputs(channel: _Channel, output: _OutputBatch) -> Iterator[Any]:
    """The relayed task's input records, asked for from the relaying side as the task reads
    (the output held back goes first: all the run made before it needed more input)."""
    while True:
        output.send()
        channel.send(NEXT, b"")
        kind, payload = channel.read()
        if kind == INPUT_END:
            return
        if kind != INPUT:
            raise ConnectionError(f"the relaying task sent message {kind} instead of input")
        for dumped in pickle.loads(payload):
            yield pickle.loads(dumped)


def _watch(conn: socket.socket, stop: threading.Event, done: threading.Event) -> threading.Thread | None:
    """A thread that sets `stop` when the relaying side's socket closes (Linux: POLLRDHUP), so a
    run whose task Spark killed ends at the engine's next round, not at its next message."""
    rdhup = getattr(select, "POLLRDHUP", None)
    if rdhup is None or not hasattr(select, "poll"):
        return None
    poller = select.poll()
    poller.register(conn.fileno(), rdhup | select.POLLHUP | select.POLLERR)

    def watch() -> None:
        while not done.is_set():
            if poller.poll(None):
                if not done.is_set():
                    stop.set()
                return

    thread = threading.Thread(target=watch, name="jetspark-relay-watch", daemon=True)
    thread.start()
    return thread


def _peer_pid(conn: socket.socket) -> int:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return -1
    try:
        pid, _, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
        return int(pid)
    except OSError:
        return -1


class _Channel:
    """Framed messages on a stream socket: a kind byte, a length, the bytes. Sends from several
    threads (the task's output and its input requests) do not interleave."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")
        self._send_lock = threading.Lock()

    def send(self, kind: int, payload: bytes) -> None:
        header = _HEADER.pack(kind, len(payload))
        with self._send_lock:
            if len(payload) < 65536:  # one system call; a large payload is not copied
                self.sock.sendall(header + payload)
            else:
                self.sock.sendall(header)
                self.sock.sendall(payload)

    def read(self) -> tuple[int, bytes]:
        header = self.reader.read(_HEADER.size)
        if len(header) < _HEADER.size:
            raise EOFError("the other side closed the connection")
        kind, size = _HEADER.unpack(header)
        payload = self.reader.read(size) if size else b""
        if len(payload) < size:
            raise EOFError("the other side closed the connection mid-message")
        return kind, payload

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.reader.close()
        with contextlib.suppress(OSError):
            self.sock.close()

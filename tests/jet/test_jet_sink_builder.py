"""Jet's `SinkBuilderTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: a sink made
of user functions writes every item.

Jet's `SinkBuilder.sinkBuilder(name, createFn).receiveFn(...).flushFn(...).destroyFn(...)` is
`processors.batches(write)`: `write(batch, context)` is called with each batch where the
processor runs, and holds what Jet's `createFn` makes (a file, a socket writer) per processor,
made on first use and kept by the processor's global index. Jet's `receiveFn` is a loop over
the batch; Jet's `flushFn` (called after each inbox batch) is a flush at the end of `write`. Jet's
source list is `from_iterable(range(itemCount))`; the local runner has 2 members with local
parallelism 2, as Jet's `PipelineTestSupport` cluster. Each test is named after the Jet case it
ports.

Differences:
- `socketSink`: `batches` has no counterpart of Jet's `destroyFn` (nothing is called when the
  processor closes), so the writers stay open when the job ends; the test closes them itself
  once the server has counted every line. Jet's `assertTrueEventually` on the count is a wait on
  a condition the server's reader threads notify.

Skipped: none.
"""

from __future__ import annotations

import socket
import threading
import uuid
from pathlib import Path
from typing import IO, Any

from jetspark import DAG, Edge, JobConfig
from jetspark import processors as P
from jetspark.core.context import ProcessorContext
from jetspark.runners.local import LocalRunner

MEMBER_COUNT = 2
ITEM_COUNT = 1024
TIMEOUT = 60


def execute(sink: Any) -> None:
    """Jet's `p.readFrom(Sources.list(srcName)).writeTo(sink)` and `execute()`."""
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(ITEM_COUNT)))
    dag.edge(Edge.between(source, dag.new_vertex("sink", sink)).distributed())
    LocalRunner(MEMBER_COUNT).run(dag, JobConfig(default_local_parallelism=2), timeout=TIMEOUT)


def test_SinkBuilderTest__fileSink(tmp_path: Path) -> None:
    lock = threading.Lock()
    directories: list[Path] = []  # Jet's IList `listName`
    files: dict[int, IO[str]] = {}

    def create(context: ProcessorContext) -> IO[str]:
        directory = tmp_path / uuid.uuid4().hex
        directory.mkdir()
        file = directory / uuid.uuid4().hex
        file.touch()
        with lock:
            directories.append(directory)
        return file.open("a", encoding="utf-8")

    def write(batch: list[Any], context: ProcessorContext) -> None:
        index = context.global_processor_index
        if index not in files:
            files[index] = create(context)
        file = files[index]
        for item in batch:  # Jet's receiveFn: appendToFile(sink, item.toString())
            file.write(f"{item}\n")
        file.flush()

    try:
        execute(P.batches(write))
    finally:
        for file in files.values():
            file.close()
    count = sum(
        len(path.read_text().splitlines()) for directory in directories for path in directory.iterdir()
    )
    assert count == ITEM_COUNT
    lines = sorted(
        int(line) for d in directories for path in d.iterdir() for line in path.read_text().splitlines()
    )
    assert lines == list(range(ITEM_COUNT))


class LineCountingServer:
    """Jet's `ServerSocket` with a reader thread per connection, counting lines."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.counted = threading.Condition()
        self.counter = 0
        self.threads: list[threading.Thread] = []
        accepting = threading.Thread(target=self._accept, daemon=True)
        accepting.start()
        self.threads.append(accepting)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:  # closed
                return
            reader = threading.Thread(target=self._read, args=(connection,), daemon=True)
            reader.start()
            self.threads.append(reader)

    def _read(self, connection: socket.socket) -> None:
        with connection, connection.makefile("r", encoding="utf-8") as lines:
            for _ in lines:
                with self.counted:
                    self.counter += 1
                    self.counted.notify_all()

    def wait_for(self, count: int) -> None:
        with self.counted:
            assert self.counted.wait_for(lambda: self.counter >= count, TIMEOUT), (
                f"counted {self.counter} lines, expected {count}"
            )

    def close(self) -> None:
        self.server.close()


def test_SinkBuilderTest__socketSink() -> None:
    server = LineCountingServer()
    writers: dict[int, IO[str]] = {}
    connections: list[socket.socket] = []
    lock = threading.Lock()

    def get_socket_writer(local_port: int) -> IO[str]:
        connection = socket.create_connection(("127.0.0.1", local_port))
        with lock:
            connections.append(connection)
        return connection.makefile("w", encoding="utf-8")

    def write(batch: list[Any], context: ProcessorContext) -> None:
        index = context.global_processor_index
        if index not in writers:
            writers[index] = get_socket_writer(server.port)
        writer = writers[index]
        for item in batch:  # Jet's receiveFn: w.println(x)
            writer.write(f"{item}\n")
        writer.flush()  # Jet's flushFn

    try:
        execute(P.batches(write))
        server.wait_for(ITEM_COUNT)
        assert server.counter == ITEM_COUNT
    finally:
        for writer in writers.values():  # Jet's destroyFn (see the module docstring)
            writer.close()
        for connection in connections:
            connection.close()
        server.close()

"""The Python worker's housekeeping around a stage task (`runners.spark.task_entry`): a worker that
keeps processors ends each task with its objects frozen (PySpark's collection after the task then
skips them), after collecting what the task left, and is left thawed for a full walk when it keeps
nothing, when the state cache closed processors, and every `FULL_WALK_EVERY` tasks; the worker's
TCP socket to the JVM, found in PySpark's frames, acknowledges promptly and sends without delay.
Real sockets, no Spark (the Spark side: tests/spark/test_worker_housekeeping.py)."""

from __future__ import annotations

import gc
import os
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from jetspark.runners.spark import state_cache, task_entry, worker_gc, worker_socket


@pytest.fixture(autouse=True)
def nothing_frozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()
    if worker_socket._jvm_socket is not None:  # the duplicate of a test's socket
        worker_socket._jvm_socket.close()
    worker_socket._jvm_socket = worker_socket._jvm_identity = worker_socket._not_tcp = None


class Node:
    """An object in a reference cycle with itself; notes when it is collected."""

    collected: list[str] = []

    def __init__(self, name: str) -> None:
        self.name = name
        self.other: Any = self

    def __del__(self) -> None:
        Node.collected.append(self.name)


@pytest.fixture()
def collected() -> Iterator[list[str]]:
    Node.collected = []
    yield Node.collected
    Node.collected = []


def settled(times: int = 1, closed: int = 0) -> list[bool]:
    return [worker_gc.settle(keeping=True, closed=closed) for _ in range(times)]


def test_a_worker_that_keeps_processors_ends_a_task_frozen_one_that_keeps_nothing_thawed() -> None:
    worker_gc.settle(keeping=True, closed=worker_gc._closed_seen)
    assert gc.get_freeze_count() > 0
    assert worker_gc.settle(keeping=False, closed=worker_gc._closed_seen) is False
    assert gc.get_freeze_count() == 0


def test_what_the_task_left_in_cycles_is_collected_before_the_freeze(collected: list[str]) -> None:
    gc.disable()  # only settle's own collection may find it
    try:
        Node("young")
        assert settled(closed=worker_gc._closed_seen) == [True]
        assert collected == ["young"]
    finally:
        gc.enable()


def test_old_cyclic_garbage_waits_for_the_full_walk_every_so_many_tasks(collected: list[str]) -> None:
    closed = worker_gc._closed_seen
    worker_gc.settle(keeping=False, closed=closed)  # a full walk now: the count starts afresh
    node = Node("old")
    assert settled(closed=closed) == [True]  # frozen with the kept state
    del node
    for _ in range(worker_gc.FULL_WALK_EVERY - 2):
        assert settled(closed=closed) == [True]
        gc.collect()  # PySpark's collection after the task: the frozen garbage is not walked
    assert collected == []
    assert settled(closed=closed) == [False]  # the FULL_WALK_EVERY-th: left thawed
    gc.collect()
    assert collected == ["old"]


def test_processors_closed_by_the_state_cache_are_collected_after_the_task(collected: list[str]) -> None:
    closed = worker_gc._closed_seen
    worker_gc.settle(keeping=False, closed=closed)
    node = Node("closed processor")
    assert settled(closed=closed) == [True]
    del node
    assert settled(closed=closed + 1) == [False]  # the cache closed processors: thawed
    gc.collect()
    assert collected == ["closed processor"]
    assert settled(closed=closed + 1) == [True]  # and frozen again after the next task


def keeping(monkeypatch: pytest.MonkeyPatch, kept: int, closed: int = 0) -> None:
    monkeypatch.setattr(state_cache, "size", lambda: kept)
    monkeypatch.setattr(state_cache, "closed_count", lambda: closed)


def stage_task(seen: list[int]) -> Callable[[int, Iterable[Any]], Iterator[Any]]:
    def task(index: int, records: Iterable[Any]) -> Iterator[Any]:
        seen.append(gc.get_freeze_count())
        for record in records:
            yield index, record

    return task


def test_a_task_of_a_worker_that_keeps_processors_runs_with_the_old_objects_frozen_and_ends_frozen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keeping(monkeypatch, 1, closed=worker_gc._closed_seen)
    worker_gc._since_full_walk = 0
    gc.freeze()  # what the task before left
    seen: list[int] = []
    out = list(task_entry.spark_task(stage_task(seen), 3, ["a", "b"]))
    assert out == [(3, "a"), (3, "b")]
    assert seen[0] > 0  # the old objects stayed frozen while it ran
    assert gc.get_freeze_count() > 0


def test_a_task_of_a_worker_that_keeps_nothing_leaves_nothing_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    keeping(monkeypatch, 0)
    gc.freeze()
    assert list(task_entry.spark_task(stage_task([]), 0, [1])) == [(0, 1)]
    assert gc.get_freeze_count() == 0


def test_a_failed_or_closed_task_does_not_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    keeping(monkeypatch, 1, closed=worker_gc._closed_seen)
    settles: list[bool] = []
    monkeypatch.setattr(worker_gc, "settle", lambda **kwargs: settles.append(True))

    def failing(index: int, records: Iterable[Any]) -> Iterator[Any]:
        yield 1
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        list(task_entry.spark_task(failing, 0, []))
    running = task_entry.spark_task(stage_task([]), 0, [1, 2])
    assert next(running) == (0, 1)
    running.close()  # PySpark stopped reading (the task was killed)
    assert settles == []
    assert list(task_entry.spark_task(stage_task([]), 0, [1])) == [(0, 1)]
    assert settles == [True]


def in_pyspark_worker(outfile: Any, call: Callable[[], Any]) -> Any:
    """`call()` from a frame of a module named like PySpark's worker, whose `outfile` is given."""
    namespace: dict[str, Any] = {"__name__": worker_socket._WORKER_MODULE}
    exec("def main(infile, outfile, call):\n    return call()\n", namespace)
    return namespace["main"](None, outfile, call)


def test_the_socket_to_the_jvm_is_found_in_the_worker_frames_and_set_to_ack_and_send_at_once() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        jvm = socket.create_connection(server.getsockname())
        worker, _ = server.accept()
        with jvm, worker, worker.makefile("wb") as outfile:
            assert worker.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
            assert in_pyspark_worker(outfile, worker_socket.ack_promptly) is True
            assert worker.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
            found = in_pyspark_worker(outfile, worker_socket.jvm_socket)
            assert found is not None and found.getpeername() == worker.getpeername()
            assert in_pyspark_worker(outfile, worker_socket.jvm_socket) is found  # one per worker


def test_outside_a_pyspark_worker_or_on_a_unix_socket_nothing_is_touched() -> None:
    assert worker_socket.ack_promptly() is False
    left, right = socket.socketpair()
    with left, right, left.makefile("wb") as outfile:
        assert in_pyspark_worker(outfile, worker_socket.ack_promptly) is False
        assert worker_socket._not_tcp == (left.fileno(), os.fstat(left.fileno()).st_ino)  # not again
        assert in_pyspark_worker(outfile, worker_socket.ack_promptly) is False
    assert in_pyspark_worker(object(), worker_socket.ack_promptly) is False  # no descriptor


def test_a_descriptor_number_reused_for_another_socket_is_found_afresh() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        first_jvm = socket.create_connection(server.getsockname())
        first, _ = server.accept()
        second_jvm = socket.create_connection(server.getsockname())
        second, _ = server.accept()
        with first_jvm, first, second_jvm, second, first.makefile("wb") as outfile:
            found = in_pyspark_worker(outfile, worker_socket.jvm_socket)
            assert found is not None and found.getpeername() == first.getpeername()
            os.dup2(second.fileno(), first.fileno())  # the same number, another socket behind it
            found = in_pyspark_worker(outfile, worker_socket.jvm_socket)
            assert found is not None and found.getpeername() == second.getpeername()

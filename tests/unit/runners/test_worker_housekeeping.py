"""The Python worker's housekeeping around a stage task (`runners.spark.task_entry`): objects are
frozen after a task of a worker that keeps processors (PySpark's collection after each task then
skips them) and thawed when the next task starts; the worker's TCP socket to the JVM, found in
PySpark's frames, acknowledges promptly and sends without delay. Real sockets, no Spark (the
Spark side: tests/spark/test_worker_housekeeping.py)."""

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


def test_settle_freezes_only_a_worker_that_keeps_processors() -> None:
    worker_gc.settle(keeping=False)
    assert gc.get_freeze_count() == 0
    worker_gc.settle(keeping=True)
    frozen = gc.get_freeze_count()
    assert frozen > 0
    # a frozen object is skipped by a collection: garbage in a cycle among them stays
    worker_gc.thaw()
    assert gc.get_freeze_count() == 0


def test_frozen_cyclic_garbage_is_collected_once_thawed() -> None:
    collected: list[str] = []

    class Node:
        def __init__(self) -> None:
            self.other: Any = self

        def __del__(self) -> None:
            collected.append("node")

    node = Node()
    worker_gc.settle(keeping=True)
    del node
    gc.collect()
    assert collected == []  # frozen: PySpark's collection after the task skips it
    worker_gc.thaw()
    gc.collect()
    assert collected == ["node"]


def test_the_task_s_young_cyclic_garbage_is_collected_before_the_freeze() -> None:
    collected: list[str] = []

    class Node:
        def __init__(self) -> None:
            self.other: Any = self

        def __del__(self) -> None:
            collected.append("node")

    gc.disable()  # only settle's own collection may find it
    try:
        Node()
        worker_gc.settle(keeping=True)
        assert collected == ["node"]
    finally:
        gc.enable()


def keeping(monkeypatch: pytest.MonkeyPatch, kept: int) -> None:
    monkeypatch.setattr(state_cache, "size", lambda: kept)


def stage_task(seen: list[int]) -> Callable[[int, Iterable[Any]], Iterator[Any]]:
    def task(index: int, records: Iterable[Any]) -> Iterator[Any]:
        seen.append(gc.get_freeze_count())
        for record in records:
            yield index, record

    return task


def test_a_task_starts_thawed_and_ends_frozen_when_its_worker_keeps_processors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keeping(monkeypatch, 1)
    gc.freeze()  # what the task before left
    seen: list[int] = []
    out = list(task_entry.spark_task(stage_task(seen), 3, ["a", "b"]))
    assert out == [(3, "a"), (3, "b")]
    assert seen == [0]  # thawed while it ran
    assert gc.get_freeze_count() > 0


def test_a_task_of_a_worker_that_keeps_nothing_leaves_nothing_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    keeping(monkeypatch, 0)
    assert list(task_entry.spark_task(stage_task([]), 0, [1])) == [(0, 1)]
    assert gc.get_freeze_count() == 0


def test_a_failed_task_leaves_nothing_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    keeping(monkeypatch, 1)

    def failing(index: int, records: Iterable[Any]) -> Iterator[Any]:
        yield 1
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        list(task_entry.spark_task(failing, 0, []))
    assert gc.get_freeze_count() == 0


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


def test_outside_a_pyspark_worker_or_on_a_unix_socket_nothing_is_touched() -> None:
    assert worker_socket.ack_promptly() is False
    left, right = socket.socketpair()
    with left, right, left.makefile("wb") as outfile:
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

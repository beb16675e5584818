"""The state handoff without Spark (`runners.spark.handoff`, `handoff_registry`): a holder in a
forked process serves a stand-in for `run_stage_task`; this process relays to it as a task would.
Every wait is on a file or a message, never a sleep."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jetspark.runners.spark import handoff, handoff_registry, state_cache
from jetspark.runners.spark.failures import TaskFailure, decode_failure
from tests.waiting import wait_until

JOB, STAGE, VERTEX = "job-h", 1, "counts"


@pytest.fixture(autouse=True)
def private_tempdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test its own registry directory (the forked holder inherits it; short: a socket's
    path has at most 108 bytes) and a reused worker."""
    short = Path(tempfile.mkdtemp(prefix="jh", dir="/tmp"))
    monkeypatch.setattr(handoff_registry, "tempfile", SimpleNamespace(gettempdir=lambda: str(short)))
    monkeypatch.setenv("SPARK_REUSE_WORKER", "1")
    monkeypatch.delenv(handoff.SWITCH, raising=False)
    state_cache.clear()
    yield short
    state_cache.clear()
    shutil.rmtree(short, ignore_errors=True)


def request(member: int = 0, restore_id: int = 5) -> handoff.Request:
    return handoff.Request(
        b"spec",
        STAGE,
        None,
        member,
        b"epoch",
        None,
        (77, 0),
        JOB,
        member,
        (VERTEX,),
        restore_id,
        restore_id + 1,
    )


class Processor:
    """What the holder keeps (only `close` is called on it here)."""

    def __init__(self, closed: str) -> None:
        self.closed = closed

    def close(self) -> None:
        Path(self.closed).touch()


def fake_run(marks: str) -> Any:
    """A stand-in for `run_stage_task` (the holder's server thread calls it): it yields each input
    record doubled; input "boom" raises as a task does (an encoded failure); input "hold" waits
    until `stop` is set (the relaying side left) or `<marks>/release` exists; at its end it keeps a
    processor at the request's epoch, as `finish_keeping` does."""

    def run(*args: Any, attempt: Any, stop: threading.Event, relayed: bool, **_: Any) -> Iterator[Any]:
        from jetspark.core.errors import JobFailedError
        from jetspark.runners.spark.failures import encode_failure

        assert relayed and attempt == (77, 0)
        Path(marks, "attempt").write_text(repr(attempt))
        for record in args[4]:
            if record == "boom":
                error = JobFailedError("vertex 'counts' failed: ValueError: boom", vertex=VERTEX)
                error.__cause__ = ValueError("boom")
                raise encode_failure(error, None, None)
            if record == "hold":
                Path(marks, "holding").touch()
                wait_until(lambda: stop.is_set() or Path(marks, "release").exists(), "stop or release")
                if stop.is_set():
                    Path(marks, "stopped").touch()
                    raise JobFailedError("the relaying task went away")
            yield record * 2
        kept = state_cache.Kept([Processor(f"{marks}/closed6")], 6, ("f", "s"), 2, 271, STAGE)
        state_cache.put(JOB, VERTEX, 0, kept)
        handoff.advertise(JOB, STAGE, 0, 6)

    return run


def holder_main(marks: str, ready: Any) -> None:
    """The forked holder: keeps member 0's processor at snapshot 5, serves, and waits."""
    from jetspark.runners.spark import task

    task.run_stage_task = fake_run(marks)  # type: ignore[assignment]
    state_cache.put(
        JOB, VERTEX, 0, state_cache.Kept([Processor(f"{marks}/closed5")], 5, ("f", "s"), 2, 271, STAGE)
    )
    handoff.advertise(JOB, STAGE, 0, 5)
    ready.send(os.getpid())
    threading.Event().wait()


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    marks = tmp_path / "marks"
    marks.mkdir()
    context = multiprocessing.get_context("fork")
    mine, theirs = context.Pipe()
    process = context.Process(target=holder_main, args=(str(marks), theirs), daemon=True)
    process.start()
    pid = mine.recv()
    yield pid, marks
    if process.is_alive():
        os.kill(pid, signal.SIGKILL)
    process.join()


def test_a_relayed_run_takes_input_as_asked_and_yields_the_holders_output(holder: tuple[int, Path]) -> None:
    pid, marks = holder
    relay = handoff.open_relay(request(), STAGE)
    assert relay is not None and relay.pid == pid
    inputs = [f"r{i}" for i in range(200)]  # more than one input batch
    assert list(relay.run(iter(inputs))) == [r * 2 for r in inputs]
    assert (marks / "attempt").read_text() == "(77, 0)", "the relaying task's attempt, not the holder's"
    wait_until(
        lambda: (handoff_registry.lookup(JOB, STAGE, 0) or request()).snapshot_id == 6, "re-advertised"
    )
    holder_entry = handoff_registry.lookup(JOB, STAGE, 0)
    assert holder_entry is not None and holder_entry.pid == pid


def test_a_failure_in_the_holder_is_raised_by_the_relaying_task_with_its_encoded_error(
    holder: tuple[int, Path],
) -> None:
    relay = handoff.open_relay(request(), STAGE)
    assert relay is not None
    with pytest.raises(TaskFailure) as raised:
        list(relay.run(iter(["a", "boom"])))
    decoded = decode_failure(raised.value)
    assert decoded is not None and decoded.vertex == VERTEX
    assert "ValueError: boom" in str(decoded) and "boom" in str(decoded.__cause__)
    assert isinstance(raised.value.__cause__, handoff.RelayedTraceback)


def test_the_holders_output_crosses_in_batches_in_order_what_is_held_going_before_each_request(
    holder: tuple[int, Path],
) -> None:
    """One message per output record made a worker that also runs a relayed task of its own give
    up the GIL for each (`benchmarks/relay_crossing.py`): the holder sends them in batches, and
    what it holds goes out before it asks for more input."""
    relay = handoff.open_relay(request(), STAGE)
    assert relay is not None
    channel = relay.channel
    assert channel.read()[0] == handoff.NEXT
    inputs = [f"r{i}" for i in range(100)]
    channel.send(handoff.INPUT, pickle.dumps([pickle.dumps(r) for r in inputs]))
    kind, payload = channel.read()
    assert kind == handoff.OUT, "the output of the first input, before the next request"
    assert [pickle.loads(d) for d in pickle.loads(payload)] == [r * 2 for r in inputs], (
        "one message, in order"
    )
    assert channel.read()[0] == handoff.NEXT
    channel.send(handoff.INPUT_END, b"")
    assert channel.read()[0] == handoff.DONE, "nothing held: no empty batch"
    channel.send(handoff.ACK, b"")
    channel.close()


def test_a_holder_killed_mid_relay_fails_the_relaying_task_naming_it(holder: tuple[int, Path]) -> None:
    pid, marks = holder
    relay = handoff.open_relay(request(), STAGE)
    assert relay is not None
    out = relay.run(iter(["a", "hold", "b"]))

    def kill_when_holding() -> None:
        wait_until((marks / "holding").exists, "the holder to hold")
        os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_when_holding)
    killer.start()
    try:
        with pytest.raises(
            TaskFailure, match=rf"the Python worker \(pid {pid}\) that holds this member's processors stopped"
        ):
            list(out)  # "aa" was still held back by the holder: it never arrives
    finally:
        killer.join()


def test_the_holder_stops_a_run_whose_relaying_side_went_away(holder: tuple[int, Path]) -> None:
    _, marks = holder
    relay = handoff.open_relay(request(), STAGE)
    assert relay is not None
    failed: list[BaseException] = []

    def relaying_task() -> None:
        try:
            list(relay.run(iter(["a", "hold"])))
        except TaskFailure as failure:
            failed.append(failure)

    task = threading.Thread(target=relaying_task)
    task.start()
    wait_until((marks / "holding").exists, "the holder to hold")
    relay.channel.sock.shutdown(socket.SHUT_RDWR)  # Spark stopped the task: its socket closes
    wait_until((marks / "stopped").exists, "the holder's run to see the relaying side gone")
    task.join()
    assert failed, "the relaying side's read ends with its socket"


def test_a_run_that_ended_without_the_relaying_sides_ack_is_not_kept(holder: tuple[int, Path]) -> None:
    """The holder kept the processors at the run's end (as `finish_keeping` does), but the relaying
    side never acknowledged: Spark may not have its output, so the holder drops them."""
    _, marks = holder
    relay = handoff.open_relay(request(), STAGE)
    assert relay is not None
    channel = relay.channel
    kind, _ = channel.read()  # NEXT
    assert kind == handoff.NEXT
    channel.send(handoff.INPUT_END, b"")
    assert channel.read()[0] == handoff.DONE
    channel.close()  # no ACK
    wait_until(lambda: handoff_registry.lookup(JOB, STAGE, 0) is None, "the registry entry withdrawn")
    wait_until((marks / "closed6").exists, "the unacknowledged run's processors closed")


def test_no_relay_to_this_worker_or_to_a_dead_pid(holder: tuple[int, Path]) -> None:
    pid, _ = holder
    assert handoff.open_relay(request(member=1), STAGE) is None, "no entry for member 1"
    entry = handoff_registry.lookup(JOB, STAGE, 0)
    assert entry is not None
    handoff_registry.advertise(JOB, STAGE, 0, handoff_registry.Holder(os.getpid(), entry.socket, 5))
    assert handoff.open_relay(request(), STAGE) is None, "this worker is the holder: it runs the task"
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not handoff_registry.alive(pid), "the holder to die")
    handoff_registry.advertise(JOB, STAGE, 0, handoff_registry.Holder(pid, entry.socket, 5))
    assert handoff.open_relay(request(), STAGE) is None, "a dead holder: the task runs here"


def test_a_holder_at_another_snapshot_is_told_to_drop_what_it_keeps(holder: tuple[int, Path]) -> None:
    """The registry names a live holder whose processors took snapshot 5, the epoch restores 6
    (a run of the member elsewhere since): the task runs here and the holder drops them."""
    _, marks = holder
    assert handoff.open_relay(request(restore_id=6), STAGE) is None
    wait_until((marks / "closed5").exists, "the holder to close what it kept")
    wait_until(lambda: handoff_registry.lookup(JOB, STAGE, 0) is None, "the holder's entry withdrawn")


def test_a_holder_that_declines_withdraws_the_entry_that_named_it(holder: tuple[int, Path]) -> None:
    pid, _ = holder
    entry = handoff_registry.lookup(JOB, STAGE, 0)
    assert entry is not None
    handoff_registry.advertise(JOB, STAGE, 1, handoff_registry.Holder(pid, entry.socket, 5))
    assert handoff.open_relay(request(member=1), STAGE) is None, "it keeps nothing of member 1"
    assert handoff_registry.lookup(JOB, STAGE, 1) is None
    assert handoff_registry.lookup(JOB, STAGE, 0) == entry, "what it keeps is still offered"


def test_the_switch_and_a_worker_that_is_not_reused_turn_the_handoff_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert handoff.worth_it(1.0, "dir", False, {VERTEX})
    assert not handoff.worth_it(handoff.MAX_SPAN, "dir", False, {VERTEX}), "a span Spark's idle kill may cut"
    assert not handoff.worth_it(1.0, None, False, {VERTEX}) and not handoff.worth_it(1.0, "dir", False, set())
    monkeypatch.setenv(handoff.SWITCH, "off")
    assert not handoff.worth_it(1.0, "dir", False, {VERTEX})
    monkeypatch.delenv(handoff.SWITCH)
    monkeypatch.setenv("SPARK_REUSE_WORKER", "")
    assert not handoff.worth_it(1.0, "dir", False, {VERTEX})


def test_the_server_stops_and_its_socket_goes_when_the_worker_keeps_nothing() -> None:
    state_cache.put(JOB, VERTEX, 0, state_cache.Kept([], 5, None, 2, 271, STAGE))
    handoff.advertise(JOB, STAGE, 0, 5)
    entry = handoff_registry.lookup(JOB, STAGE, 0)
    assert entry is not None and handoff.serving() and os.path.exists(entry.socket)
    state_cache.evict_older(JOB, 6)
    assert not handoff.serving() and not os.path.exists(entry.socket)
    assert handoff_registry.entries(JOB) == []


def test_the_sweep_removes_what_dead_workers_left_and_a_shared_directory_is_not_used(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    root = handoff_registry.directory()
    assert root is not None
    (root / f"w{pid}-abc.sock").touch()
    handoff_registry.advertise(JOB, STAGE, 0, handoff_registry.Holder(pid, "x", 5))
    handoff_registry.advertise(JOB, STAGE, 1, handoff_registry.Holder(os.getpid(), "y", 5))
    handoff_registry.sweep()
    assert [p.name for p in handoff_registry.entries(JOB)] == [f"{JOB}-s{STAGE}-m1.holder"]
    assert not (root / f"w{pid}-abc.sock").exists()
    root.chmod(0o755)
    assert handoff_registry.directory() is None, "a directory others can read is not used"
    root.chmod(0o700)


def test_records_cross_as_pickles() -> None:
    """What crosses the socket: a record pickles and comes back equal (named tuples included)."""
    from jetspark.runners.spark.records import DataRecord

    record = DataRecord(1, 0, (0, 0), (1, 0), 3, b"payload", 0)
    assert pickle.loads(pickle.dumps(record, pickle.HIGHEST_PROTOCOL)) == record


def test_at_a_jobs_end_the_driver_tells_the_holders_of_this_host_to_drop_what_they_keep(
    holder: tuple[int, Path],
) -> None:
    _, marks = holder
    handoff_registry.advertise("other-job", STAGE, 0, handoff_registry.Holder(os.getpid(), "nowhere", 5))
    assert handoff.forget_job(JOB) == 1
    wait_until((marks / "closed5").exists, "the holder to close what it kept")
    wait_until(lambda: handoff_registry.entries(JOB) == [], "the holder's entry withdrawn")
    assert handoff.forget_job(JOB) == 0, "nothing left to tell"
    assert [p.name for p in handoff_registry.entries("other-job")] == [f"other-job-s{STAGE}-m0.holder"]


def test_an_entry_names_its_stage_and_member() -> None:
    root = Path("/r")
    assert handoff_registry.stage_and_member(root / "job.1-s2-m13.holder", "job.1") == (2, 13)
    assert handoff_registry.stage_and_member(root / "job.1-s2-m13.relay", "job.1") is None
    assert handoff_registry.stage_and_member(root / "job.10-s2-m13.holder", "job.1") is None

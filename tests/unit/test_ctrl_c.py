"""Ctrl-C while the main thread waits for a job. `wait_for`: a SIGINT the kernel delivered to another
thread still interrupts the main thread's wait. `plain_ctrl_c`: while `run` waits, SIGINT only
raises KeyboardInterrupt (PySpark's handler, which cancels every Spark job first, is set aside);
anyone else's handler is left alone."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jetspark.ctrl_c import plain_ctrl_c, wait_for
from tests.waiting import wait_until


def pysparks_handler(signum: int, frame: Any) -> None:  # stands for SparkContext's
    raise AssertionError("PySpark's handler ran")


pysparks_handler.__module__ = "pyspark.core.context"


def users_handler(signum: int, frame: Any) -> None:
    raise LookupError("the user's handler ran")


@pytest.fixture
def restored() -> Iterator[None]:
    before = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, before)


def test_pysparks_handler_is_replaced_within_the_block_and_put_back_after(restored: None) -> None:
    signal.signal(signal.SIGINT, pysparks_handler)
    with plain_ctrl_c():
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)  # Python runs the handler before the next line
    assert signal.getsignal(signal.SIGINT) is pysparks_handler


def test_pysparks_handler_is_put_back_when_the_block_raises(restored: None) -> None:
    signal.signal(signal.SIGINT, pysparks_handler)
    with pytest.raises(KeyboardInterrupt), plain_ctrl_c():
        raise KeyboardInterrupt
    assert signal.getsignal(signal.SIGINT) is pysparks_handler


@pytest.mark.parametrize("handler", [users_handler, signal.SIG_IGN, signal.default_int_handler])
def test_any_other_handler_stays_in_place(restored: None, handler: Any) -> None:
    signal.signal(signal.SIGINT, handler)
    with plain_ctrl_c():
        assert signal.getsignal(signal.SIGINT) is handler
    assert signal.getsignal(signal.SIGINT) is handler


def test_a_handler_set_within_the_block_is_kept(restored: None) -> None:
    signal.signal(signal.SIGINT, pysparks_handler)
    with plain_ctrl_c():
        signal.signal(signal.SIGINT, users_handler)
    assert signal.getsignal(signal.SIGINT) is users_handler


def blocked_in_wait(thread: threading.Thread) -> bool:
    """Whether `thread` sleeps in the kernel (Linux: /proc) inside `Condition.wait`: in the lock."""
    frame = sys._current_frames().get(thread.ident or 0)
    if frame is None or frame.f_code.co_name != "wait":
        return False
    stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] == "S"


def test_a_sigint_delivered_to_another_thread_interrupts_the_main_threads_wait(restored: None) -> None:
    """The kernel may hand a process's SIGINT to any thread; a bare `Event.wait()` in the main
    thread would then never return (seen: `jetspark run` deaf to Ctrl-C while an epoch ran)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    never = threading.Event()

    def to_this_thread() -> None:  # once the main thread waits in the lock (else it would see it anyway)
        wait_until(lambda: blocked_in_wait(threading.main_thread()), timeout=60)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        threading.Thread(target=to_this_thread).start()
        wait_for(never)


def test_wait_for_says_whether_the_event_was_set() -> None:
    done = threading.Event()
    assert wait_for(done, 0.01) is False
    assert wait_for(done, 0) is False
    done.set()
    assert wait_for(done) is True and wait_for(done, 0) is True


def test_off_the_main_thread_wait_for_is_a_plain_wait() -> None:
    done, seen = threading.Event(), []
    thread = threading.Thread(target=lambda: seen.append(wait_for(done, 0.01)))
    thread.start()
    thread.join()
    assert seen == [False]


def test_wait_for_sets_pysparks_handler_aside_while_it_waits(restored: None) -> None:
    signal.signal(signal.SIGINT, pysparks_handler)
    seen: list[Any] = []
    done = threading.Event()

    def look() -> None:
        wait_until(lambda: blocked_in_wait(threading.main_thread()), timeout=60)
        seen.append(signal.getsignal(signal.SIGINT))
        done.set()

    threading.Thread(target=look).start()
    assert wait_for(done)
    assert seen == [signal.default_int_handler]
    assert signal.getsignal(signal.SIGINT) is pysparks_handler

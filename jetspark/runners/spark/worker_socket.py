"""Keep TCP's delayed acknowledgements from stalling a task's input for 40 ms.

PySpark's JVM talks to a Python worker over a loopback TCP socket (unless
`spark.python.unix.domain.socket.enabled`). At a task's start the JVM sends the task, then its
input; when the input is small (a quiet epoch: a few records and the barriers), the input waits in
the JVM's socket (Nagle's algorithm) until the worker acknowledges the task's bytes, and Linux
delays that acknowledgement by up to 40 ms, since the worker has nothing to send back. Every stage
that reads a shuffle paid about 40 ms per epoch for it.

`ack_promptly()`, called as the task's function starts (after PySpark has read the task), turns
Nagle's algorithm off for what the worker sends (`TCP_NODELAY`) and, on Linux, sets `TCP_QUICKACK`:
an acknowledgement already due goes out at once (when the worker has read everything that came)
and the socket leaves delayed-ACK mode for now (not for good: the kernel may go back to it once
the worker sends much, which a stage that reads its whole input first does at its end). It finds
the socket in the PySpark worker's stack (the `outfile` of a frame of `pyspark.worker`). Where it
cannot, it does nothing: a Unix domain socket, a worker started without PySpark's daemon (the
module then runs as `__main__`, as on Windows), another `spark.python.worker.module`, a PySpark
whose frames differ (`tests/spark/test_worker_housekeeping.py` fails then).
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from types import FrameType

#: PySpark's worker module, whose frames hold the file objects of the JVM's socket.
_WORKER_MODULE = "pyspark.worker"
#: Linux's TCP_QUICKACK (Python's `socket` module names it on Linux only; elsewhere only Nagle's
#: algorithm is turned off).
_TCP_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)

#: The JVM socket of this worker process (a duplicate of its descriptor) once found, and the
#: descriptor and inode it was found by (a reused number with another socket behind it is not it).
_jvm_socket: socket.socket | None = None
_jvm_identity: tuple[int, int] | None = None
#: The descriptor and inode of a socket found not to be TCP (a Unix domain socket): not looked at again.
_not_tcp: tuple[int, int] | None = None


def ack_promptly() -> bool:
    """Acknowledge what the JVM sent and leave delayed-ACK mode (see the module); True when the
    socket was found. Call it from the task's function (it looks for PySpark's frames below it)."""
    sock = jvm_socket(sys._getframe(1))
    if sock is None:
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if _TCP_QUICKACK is not None:
            sock.setsockopt(socket.IPPROTO_TCP, _TCP_QUICKACK, 1)
    except OSError:
        return False
    return True


def jvm_socket(frame: FrameType | None = None) -> socket.socket | None:
    """This worker's TCP socket to the JVM (a duplicate descriptor, kept for the worker's life),
    found in the PySpark frames below `frame` (by default, the caller's); None when there is none."""
    global _jvm_socket, _jvm_identity, _not_tcp
    identity = _outfile_socket(sys._getframe(1) if frame is None else frame)
    if identity is None:
        return None
    if identity == _jvm_identity and _jvm_socket is not None:
        return _jvm_socket
    if identity == _not_tcp:
        return None
    duplicate = os.dup(identity[0])
    try:
        sock = socket.socket(fileno=duplicate)  # family and type are read from the descriptor
    except OSError:
        os.close(duplicate)
        return None
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        sock.close()
        _not_tcp = identity
        return None
    if _jvm_socket is not None:
        _jvm_socket.close()
    _jvm_socket, _jvm_identity = sock, identity
    return sock


def _outfile_socket(frame: FrameType | None) -> tuple[int, int] | None:
    """The descriptor and inode of the socket behind the `outfile` a PySpark worker frame up the
    stack writes to, or None."""
    while frame is not None:
        if frame.f_globals.get("__name__") == _WORKER_MODULE:
            fileno = getattr(frame.f_locals.get("outfile"), "fileno", None)
            if fileno is not None:
                try:
                    fd = fileno()
                    status = os.fstat(fd)
                except (OSError, ValueError, TypeError):
                    return None
                return (fd, status.st_ino) if stat.S_ISSOCK(status.st_mode) else None
        frame = frame.f_back
    return None

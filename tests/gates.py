"""Gates: sources that a test holds at a point of the stream and releases, instead of racing a rate.

A test that must catch a job mid-stream (to suspend, cancel, kill or fail it, or to see snapshots
taken before some item) cannot rely on a rate outlasting its own steps: on a loaded machine the
test's thread may not run again before the stream ends. So the source stops at a sequence number
the test chose and waits there, cooperatively, until the test moves or opens the gate:

    gate = Gate(tmp_path / "gate", hold_at=1000)
    dag.new_vertex("source", gated_stream(gate, count=3000))
    job = runner.submit(dag, config)
    wait_until(lambda: emitted(job) >= 1000)   # certain: every item below 1000 goes out
    job.suspend()                              # certain: nothing at or past 1000 went out
    gate.open()
    job.resume().join(60)

The gate is a small file, so processors in other processes (Spark's Python workers, a driver
started as a subprocess) read it too; it pickles as its path. The limit counts sequence numbers,
not items per processor, so it holds the same point whatever the parallelism and across restores
and epochs: a restored source resumes at its saved position and still stops at the limit.

`gated_stream` is `generator_stream` (`jetspark.processors.sources`), with the same slices,
snapshots and optional rate, and one more rule: a sequence number at or past the gate's limit is
not emitted while the limit stands. A held processor's `complete()` returns False without
emitting, so snapshots, barriers and suspension go on as usual while it waits.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.errors import JobTimeoutError
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.processors.sources import SizedSourceSupplier, _GeneratorP, _identity, _Slice

#: How often a held processor reads the gate's file again (seconds).
POLL_SECONDS = 0.002
_OPEN = "open"


class Gate:
    """A limit on the sequence numbers that gated sources may emit, held in the file `path`.

    `hold_at(n)`: numbers `n` and above wait; `open()`: no limit. Either may be called at any time,
    from any process; the sources see the change within `POLL_SECONDS` of their next call.
    """

    def __init__(self, path: str | os.PathLike[str], hold_at: int | None = 0) -> None:
        self.path = os.fspath(path)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        if hold_at is None:
            self.open()
        else:
            self.hold_at(hold_at)

    @classmethod
    def at(cls, path: str | os.PathLike[str]) -> Gate:
        """The gate whose file is `path`, as it stands (made by another process, say)."""
        gate = cls.__new__(cls)
        gate.path = os.fspath(path)
        return gate

    def hold_at(self, limit: int) -> None:
        """Let the sources emit the sequence numbers below `limit`, and hold them there."""
        if limit < 0:
            raise ValueError(f"a gate's limit must be >= 0, got {limit}")
        self._write(str(limit))

    def open(self) -> None:
        """Let the sources run to their end."""
        self._write(_OPEN)

    def limit(self) -> int | None:
        """The current limit; None when the gate is open."""
        with open(self.path, encoding="ascii") as file:
            text = file.read().strip()
        return None if text == _OPEN else int(text)

    def _write(self, text: str) -> None:
        temporary = f"{self.path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="ascii") as file:
            file.write(text)
        os.replace(temporary, self.path)  # atomic: a reader sees the old limit or the new one

    def __repr__(self) -> str:
        return f"Gate({self.path!r})"


class _GatedGeneratorP(_GeneratorP):
    """A `generator_stream` processor that does not emit sequence numbers at or past the limit."""

    factory = "gated_stream"

    def __init__(self, gate: Gate, *generator_args: Any) -> None:
        super().__init__(*generator_args)
        self._gate = gate
        self._limit: int | None = 0
        self._read_at = float("-inf")

    def _next_slice(self, allowed: int | None) -> _Slice | None:
        piece = super()._next_slice(allowed)
        # the slice with the lowest next number: when it is held, every other slice is held too
        if piece is not None and self._limit is not None and piece.next_position >= self._limit:
            now = time.monotonic()
            if now - self._read_at >= POLL_SECONDS:
                self._read_at = now
                self._limit = self._gate.limit()
            if self._limit is not None and piece.next_position >= self._limit:
                return None
        return piece


def gated_stream(
    gate: Gate,
    count: int | None = None,
    items_per_second: float | None = None,
    fn: Callable[[int], Any] = _identity,
    timestamp_fn: Callable[[Any], int] | None = None,
) -> ProcessorSupplier:
    """`generator_stream(count, items_per_second, fn, timestamp_fn)` held at `gate`'s limit."""
    if count is not None and count < 0:
        raise ValueError(f"gated_stream: count must be >= 0 or None, got {count}")
    factory = functools.partial(_GatedGeneratorP, gate, count, items_per_second, fn, timestamp_fn, None)
    return ProcessorSupplier.of(factory) if count is None else SizedSourceSupplier(factory, count)


class _GatedPassP(AbstractProcessor):
    """Passes items on, at most the gate's limit of them per processor while the limit stands."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate
        self._passed = 0
        self._limit: int | None = 0
        self._read_at = float("-inf")

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if self._limit is not None and self._passed >= self._limit:
            now = time.monotonic()
            if now - self._read_at < POLL_SECONDS:
                return False
            self._read_at = now
            self._limit = self._gate.limit()
            if self._limit is not None and self._passed >= self._limit:
                return False
        if not self.try_emit(item):
            return False
        self._passed += 1
        return True


def gated_pass(gate: Gate) -> ProcessorSupplier:
    """A pass-through step whose processors each pass at most `gate`'s limit of items (counted from
    the processor's start) while the limit stands: back-pressure that the test controls, to stop
    the vertices upstream mid-stream. A snapshot's barrier queues behind the held items, so no
    snapshot completes while the step holds."""
    return ProcessorSupplier.of(functools.partial(_GatedPassP, gate))


def ask_to_suspend(job: Any) -> None:
    """Ask a local job to suspend without waiting for it: for a job held at a `gated_pass`, whose
    terminal snapshot cannot complete until the gate opens. Wait for `job.status` afterwards."""
    with contextlib.suppress(JobTimeoutError):  # asked for: the suspension goes on
        job.suspend(timeout=0)

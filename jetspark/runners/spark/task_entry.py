"""The function Spark calls for a stage task: jetspark's stage task with the Python worker's
housekeeping around it (`worker_socket`: prompt TCP acknowledgements of the task's input;
`worker_gc`: a worker's kept state frozen between full walks, not walked after every task)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jetspark.runners.spark import state_cache, worker_gc, worker_socket


def spark_task(
    task: Callable[[int, Iterable[Any]], Iterable[Any]], index: int, records: Iterable[Any]
) -> Iterator[Any]:
    """Run `task(index, records)` (a `run_stage_task` partial), yielding what it yields."""
    worker_socket.ack_promptly()
    yield from task(index, records)
    worker_gc.settle(keeping=state_cache.size() > 0, closed=state_cache.closed_count())

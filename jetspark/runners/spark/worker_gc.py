"""Keep PySpark's collection after each task from walking a worker's kept state.

A reused PySpark worker runs a full `gc.collect()` after every task. A worker that keeps a member's
processors between epochs (`state_cache`) holds their state, often millions of objects, and that
collection walks them all after each task that ran there: 30-80 ms per task with half a million
keys per worker (measured on `local[2]`), during which the worker cannot take its next task, on a
core the other tasks need.

So when a task ends and its worker keeps processors, `settle` collects the young generations
(the task's own cyclic garbage, mostly still young: a walk of a few thousand objects at most) and
then moves every object the worker tracks into the permanent generation (`gc.freeze`), which a
collection skips, so PySpark's call finds almost nothing to walk. When the worker's next task
starts, `thaw` moves them back (`gc.unfreeze`); both calls only relink lists. Nothing stays frozen
while a task of this worker runs, so Python's automatic collections find older cyclic garbage as
in any Python program; only the extra full walk after each task is gone. Without the young
collection, a worker's memory grew by about 7 MB over 1,000 short epochs (the task's garbage
waited, frozen, for the next automatic full collection); with it, it stays flat
(`benchmarks/epoch_memory.py`). A worker that keeps nothing is left as PySpark has it.
"""

from __future__ import annotations

import gc


def thaw() -> None:
    """A task starts: what the last task froze becomes collectable again."""
    gc.unfreeze()


def settle(keeping: bool) -> None:
    """A task ended; `keeping`: its worker keeps processors (collect the young generations, then
    freeze everything; see the module)."""
    if keeping:
        gc.collect(1)
        gc.freeze()

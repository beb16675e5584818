"""Keep PySpark's collection after each task, and Python's own full collections, from walking a
worker's kept state over and over.

A reused PySpark worker runs a full `gc.collect()` after every task. A worker that keeps a member's
processors between epochs (`state_cache`) holds their state, often millions of objects, and that
collection walked them all after each task that ran there: 30-80 ms per task with half a million
keys per worker (measured on `local[2]`), during which the worker could not take its next task,
on a core the other tasks need.

So a worker that keeps processors keeps its old objects in Python's permanent generation, which
no collection walks: when one of its tasks ends, `settle` collects what is not frozen (what this
task made and left: its cyclic garbage goes, what survives is new state) and freezes the rest
(`gc.freeze()`). PySpark's collection then finds almost nothing to walk, and so do the automatic
collections of the next tasks. Frozen objects are still freed by reference counting; only cyclic
garbage among them waits. It waits for the next *full walk*: `settle` leaves the worker thawed
(`gc.unfreeze()`, and PySpark's collection after that task walks everything once) when the
worker keeps nothing any more, when the state cache closed processors since the last task
(those are old objects, often in cycles), and in any case after `FULL_WALK_EVERY` tasks. Both
calls only relink lists. Memory stays flat over 1,000 epochs (`benchmarks/epoch_memory.py`).

A task that fails or is cancelled does not settle (PySpark ends its worker). A relayed run in the
holder's server thread (`handoff`) runs like any code in the process: what it leaves is frozen at
the end of the holder's next own task. `gc.unfreeze()` also undoes a freeze of the user's own.
"""

from __future__ import annotations

import gc

#: A worker keeping processors is left thawed after every this many of its tasks at the most, so
#: that PySpark's collection after the task walks everything once.
FULL_WALK_EVERY = 64

_since_full_walk = 0
_closed_seen = 0


def settle(keeping: bool, closed: int) -> bool:
    """A task ended well. `keeping`: its worker keeps processors; `closed`: how many the state
    cache has closed in this worker so far. True when the worker's objects are now frozen (see
    the module), False when it is left thawed for a full walk."""
    global _since_full_walk, _closed_seen
    _since_full_walk += 1
    if not keeping or closed != _closed_seen or _since_full_walk >= FULL_WALK_EVERY:
        _closed_seen = closed
        _since_full_walk = 0
        gc.unfreeze()
        return False
    gc.collect()  # walks only what is not frozen: what this task made and left
    gc.freeze()
    return True

"""Pausing the cyclic garbage collector while a snapshot's save or restore builds millions of
objects that outlive the step.

Decoding a snapshot's entries allocates a few tuples and bytes per entry, none in a cycle; a full
save builds a value or two per key and its entry. The collector counts every allocation, so a
1 M-entry restore runs hundreds of young collections and several full ones over a heap that only
grows: a third of the restore's CPU, a quarter of a built-in window's full save (measured with
`benchmarks/snapshot_entries.py`). Paused, the survivors are looked at once, when it resumes.
Used around one bounded step each: the restore's read and unpickling, a `save_to_snapshot` call.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic collection inside the block; resumed after it (even if it raises), unless it
    was off before. Another thread that allocates meanwhile only has its collection deferred."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

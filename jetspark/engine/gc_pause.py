"""Pausing the cyclic garbage collector while a restore builds millions of acyclic objects.

Decoding a snapshot's entries allocates a few tuples and bytes per entry, none in a cycle. The
collector counts every allocation, so a 1 M-entry restore runs hundreds of young collections and
several full ones over a heap that only grows: a third of the restore's CPU (measured with
`benchmarks/snapshot_entries.py`). Paused, the objects are looked at once, when it resumes.
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

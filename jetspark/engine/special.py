"""Items that travel through queues beside the data: barriers and the end of a stream.

Queues hold either data chunks (plain lists) or one of these objects, or a `Watermark`; the
consumer tells them apart with `type(entry) is list`, so data never pays for a type check.
"""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True)
class SnapshotBarrier:
    """Marks the point in a stream where snapshot `snapshot_id` is taken.

    A terminal barrier (suspend) ends the execution after the snapshot; it always aligns.
    """

    snapshot_id: int
    is_terminal: bool = False
    is_export_only: bool = False


class _Done:
    """The end of a producer's stream. A single instance, `DONE`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DONE"

    def __reduce__(self) -> str:
        return "DONE"


DONE = _Done()

"""What kind of file system an fsspec file system object is, without importing fsspec.

The checks here run on Spark executors too, whose py-files zip has no fsspec: this module imports
nothing, and reads only the object's `protocol` (a string, or a tuple of the names it answers to).
"""

from __future__ import annotations

from typing import Any

#: The protocols of fsspec's `LocalFileSystem`: the machine's own disk.
LOCAL_PROTOCOLS = frozenset({"file", "local"})


def protocols(fs: Any) -> tuple[str, ...]:
    """The names `fs` answers to (fsspec gives one string or a tuple of them)."""
    protocol = fs.protocol
    return tuple(protocol) if isinstance(protocol, (tuple, list)) else (protocol,)


def is_local(fs: Any) -> bool:
    """`fs` is the local disk: paths are the operating system's, so `os`, `fcntl`, `fsync` and
    Spark's `file://` URLs reach the same files."""
    return bool(LOCAL_PROTOCOLS.intersection(protocols(fs)))

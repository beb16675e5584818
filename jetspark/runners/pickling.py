"""cloudpickle that keeps the user's file name and source lines in the code it ships.

Functions of a job file (`__main__`, or a module registered to travel by value) are pickled by
value. cloudpickle 3.1.3 and later replace every such code object's `co_filename` with
`"<dynamic-code>"` (for byte-identical payloads), so a traceback from an executor said
`File "<dynamic-code>", line 17, in check` and showed no source line. This pickler puts the real
file name back and carries the file's lines along, registered in `linecache` where the code is
unpickled, so an executor's traceback shows the user's file, line and source line even on a
machine that does not have the file. Code pickled by reference (installed packages) is untouched.
"""

from __future__ import annotations

import io
import linecache
import os
import types
from collections import ChainMap
from collections.abc import Callable
from typing import Any

import cloudpickle

#: Source files larger than this travel without their lines (the file name and line number do).
MAX_SOURCE_BYTES = 1 << 20

_cloudpickle_code_reduce: Callable[[types.CodeType], tuple[Any, tuple[Any, ...]]] = (
    cloudpickle.Pickler.dispatch_table[types.CodeType]
)


def _source_lines(filename: str) -> list[str] | None:
    """The file's lines as `linecache` holds them (one list object per file, so a pickle memoizes
    it once however many functions come from the file), or None when there is nothing to ship."""
    if filename.startswith("<"):  # generated code that registered its source (processors._codegen)
        entry = linecache.cache.get(filename)
        lines = entry[2] if entry is not None and len(entry) == 4 else []
    elif os.path.isfile(filename):
        lines = linecache.getlines(filename)
    else:
        return None
    if not lines or sum(map(len, lines)) > MAX_SOURCE_BYTES:
        return None
    return lines


def restore_code(
    constructor: Callable[..., types.CodeType],
    args: tuple[Any, ...],
    filename: str,
    lines: list[str] | None,
) -> types.CodeType:
    """Unpickle a code object under its original file name; register the file's lines with
    `linecache` when this machine has no such file, so tracebacks show the source line."""
    code = constructor(*args)
    if code.co_filename != filename:
        code = code.replace(co_filename=filename)
    if lines is not None and filename not in linecache.cache and not os.path.exists(filename):
        # an entry whose mtime is None is never dropped by linecache.checkcache()
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    return code


def _reduce_code(code: types.CodeType) -> tuple[Any, tuple[Any, ...]]:
    constructor, args = _cloudpickle_code_reduce(code)
    return restore_code, (constructor, args, code.co_filename, _source_lines(code.co_filename))


class SourceKeepingPickler(cloudpickle.Pickler):  # type: ignore[misc]
    """cloudpickle's pickler with code objects that keep their file name and source lines."""

    dispatch_table = ChainMap({types.CodeType: _reduce_code}, cloudpickle.Pickler.dispatch_table)


def dumps_keeping_source(value: Any, protocol: int = 5) -> bytes:
    """`cloudpickle.dumps`, except that shipped code keeps its file name and source lines."""
    buffer = io.BytesIO()
    SourceKeepingPickler(buffer, protocol=protocol).dump(value)
    return buffer.getvalue()

"""When Python runs as the `jetspark` command: a Ctrl-C while the command's modules load (before
`jetspark.cli.main.main` catches it; about a second, pyspark and fsspec included) ends with one
line, as it does later, instead of a traceback through the import machinery. Imported first by
the package root, so that it covers nearly all of the loading; it imports nothing of jetspark."""

from __future__ import annotations

import os
import sys
from types import TracebackType


def _interrupted_quietly(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        print("jetspark: interrupted", file=sys.stderr)
    else:
        sys.__excepthook__(kind, error, tb)


if sys.argv and os.path.basename(sys.argv[0]) in ("jetspark", "jetspark.exe"):
    sys.excepthook = _interrupted_quietly

"""mutmut's hook module (found on PYTHONPATH, which tools/mutation.py sets): with
`MUTATION_LINES=start-end` in the environment, only the lines in that range (1-based, inclusive)
are mutated; the others count as skipped. Used to split a long module into parts."""

from __future__ import annotations

import os
from typing import Any


def pre_mutation(context: Any) -> None:
    lines = os.environ.get("MUTATION_LINES")
    if not lines:
        return
    start, end = (int(part) for part in lines.split("-"))
    if not start <= context.current_line_index + 1 <= end:
        context.skip = True

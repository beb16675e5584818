"""Which of a processor's methods an error came from, read off the error's traceback.

A job's error names the vertex and the processor; without the method, `KeyError: 'customer_id'`
from `complete_edge` reads the same as one from `process`. The engine does not track which method
it is calling (that would cost on every call); the traceback already says, and reading it costs
only when a job fails.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any

from jetspark.core.errors import ProcessorContractError
from jetspark.core.processor import Processor

#: jetspark's own directory: methods written there are the engine's or the built-ins'.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: The methods of jetspark's own processors worth naming: the contract's (their helpers' names
#: would mean nothing to a user).
CONTRACT_METHODS = frozenset(name for name in vars(Processor) if name[:1].islower())


def raising_method(error: BaseException, processor: Any) -> str | None:
    """The name of the method of `processor` the error was raised in (or below), or None if no
    frame of the traceback is one of its methods.

    The outermost of its methods written outside jetspark wins (`try_process_item` of a user's
    `AbstractProcessor`, not the `process` of jetspark's base class that called it); for jetspark's
    own processors, the outermost of their contract methods (the one the engine called)."""
    outermost: str | None = None
    traceback: TracebackType | None = error.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        code = frame.f_code
        if code.co_varnames[:1] == ("self",) and frame.f_locals.get("self") is processor:
            if not os.path.abspath(code.co_filename).startswith(_PACKAGE_DIR):
                return code.co_name
            if outermost is None and code.co_name in CONTRACT_METHODS:
                outermost = code.co_name
        traceback = traceback.tb_next
    return outermost


def failed_in(error: BaseException, processor: Any) -> str:
    """`" in <method>()"` for a job's error line, or "" when no method is known or the error is
    the engine's own about a method it names (`Count.try_process_item() returned None ...`)."""
    if isinstance(error, ProcessorContractError) and f"{type(processor).__name__}." in str(error):
        return ""
    method = raising_method(error, processor)
    return "" if method is None else f" in {method}()"

"""Compiles a chain of map/filter/flat_map steps into one Python function.

Python's per-call cost dominates the hot path (a call costs about as much as the work of a simple
step), so a chain is not run as a list of functions: its steps are inlined as statements into one
generated function, around an innermost statement chosen by the caller (offer the item, yield it,
accumulate it). An item then costs the user's own calls and nothing more.

The source is built from fixed templates in which only step indexes vary; the user's functions and
any other values are passed in as the function's globals, never as text.
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias

StepKind: TypeAlias = Literal["map", "filter", "flat_map"]
Step: TypeAlias = tuple[StepKind, Callable[[Any], Any]]
KINDS = ("map", "filter", "flat_map")


def compile_chain(
    steps: Iterable[Step],
    header: Sequence[str],
    innermost: Sequence[str],
    footer: Sequence[str] = (),
    namespace: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """Define the function `header` starts (`def name(...):` plus any loop lines, the steps
    going one level deeper than its last line), with the steps applied to the variable `item`
    and `innermost` run for each item that comes out of them; `footer` lines close the function.

    Steps: map -> `item = f(item)`, dropped when None; filter -> kept when `f(item)` is true;
    flat_map -> every non-None item of `f(item)`.
    """
    scope: dict[str, Any] = dict(namespace or {})
    lines = list(header)
    depth = _indent(header[-1]) // 4 + 1
    step_names = []
    for index, (kind, fn) in enumerate(steps):
        name = f"_step{index}"
        step_names.append(getattr(fn, "__name__", type(fn).__name__))
        scope[name] = fn
        pad = "    " * depth
        if kind == "map":
            lines += [f"{pad}item = {name}(item)", f"{pad}if item is not None:"]
            depth += 1
        elif kind == "filter":
            lines.append(f"{pad}if {name}(item):")
            depth += 1
        else:
            lines += [f"{pad}for item in {name}(item):", f"{pad}    if item is not None:"]
            depth += 2
    pad = "    " * depth
    lines += [pad + line for line in innermost]
    lines += list(footer)
    function_name = header[0].split()[1].split("(")[0]
    source = "\n".join(lines) + "\n"
    exec(compile(source, _register_source(function_name, ", ".join(step_names), source), "exec"), scope)
    compiled: Callable[..., Any] = scope[function_name]
    return compiled


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def checked_steps(steps: Iterable[Step], owner: str) -> tuple[Step, ...]:
    """The steps as a tuple, each checked to be a `(kind, callable)` pair; errors name `owner`."""
    checked = tuple(steps)
    for index, step in enumerate(checked):
        if not (isinstance(step, tuple) and len(step) == 2):
            raise ValueError(f"{owner}: step {index} must be a (kind, fn) tuple, got {step!r}")
        kind, fn = step
        if kind not in KINDS:
            raise ValueError(f"{owner}: step {index} has kind {kind!r}; expected one of {KINDS}")
        if not callable(fn):
            raise TypeError(f"{owner}: step {index} ({kind}) needs a callable, got {fn!r}")
    return checked


def _register_source(function_name: str, steps: str, source: str) -> str:
    """A file name for generated code that says what it runs, with its source in `linecache`, so a
    traceback through it shows the generated line (`item = _step0(item)`) instead of nothing."""
    digest = hashlib.blake2s(source.encode(), digest_size=4).hexdigest()
    filename = f"<jetspark generated {function_name}({steps}) {digest}>"
    # an entry whose mtime is None is never dropped by linecache.checkcache()
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return filename

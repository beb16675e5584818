"""Processor methods whose names are one typo away from a method the engine calls.

A processor that defines `compelte()` for `complete()` runs without error: the engine calls the
inherited `complete()`, which does nothing, and the result the user meant to emit is lost without
a word. Names are compared with the methods of `Processor` and `AbstractProcessor`, once per
class, when its first processors are made.
"""

from __future__ import annotations

import difflib
import logging
import os
import sys

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.processor import Processor

_log = logging.getLogger("jetspark.planning")
#: jetspark's own directory: its classes are not checked (their helpers are not typos).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: The names the engine (or `AbstractProcessor`) calls or offers, which a user overrides.
ENGINE_NAMES = frozenset(
    name for cls in (Processor, AbstractProcessor) for name in vars(cls) if name[:1].islower()
)
_checked: set[type] = set()


def misspelled(cls: type) -> list[tuple[str, str]]:
    """(name, meant) for each public method of `cls`, defined outside jetspark, whose name is
    not one the engine knows but is close to one (`compelte` -> `complete`)."""
    found = []
    for klass in cls.__mro__:
        module_file = getattr(sys.modules.get(klass.__module__), "__file__", None) or ""
        if klass in (Processor, AbstractProcessor, object) or os.path.abspath(module_file).startswith(
            _PACKAGE_DIR
        ):
            continue
        for name, value in vars(klass).items():
            if name[:1] == "_" or name in ENGINE_NAMES or not callable(value):
                continue
            meant = _typo_of(name)
            if meant is not None:
                found.append((name, meant))
    return found


def _typo_of(name: str) -> str | None:
    """The engine's name `name` is a typo of (letters swapped, one missing or added), or None. A
    name that extends one (`processed`, `complete_all`) or is cut from one is a helper, not a typo."""
    for meant in difflib.get_close_matches(name, ENGINE_NAMES, n=3, cutoff=0.85):
        if abs(len(meant) - len(name)) <= 1 and not (name.startswith(meant) or meant.startswith(name)):
            return meant
    return None


def warn_of_misspelled_methods(vertex: str, processor: object) -> None:
    """Warn once per class of a method name that looks like a misspelled engine method."""
    cls = type(processor)
    if cls in _checked:
        return
    _checked.add(cls)
    for name, meant in misspelled(cls):
        _log.warning(
            "vertex %r: %s.%s() looks like a misspelling of %s(), which the engine calls; %s() is "
            "never called by it",
            vertex,
            cls.__name__,
            name,
            meant,
            name,
        )

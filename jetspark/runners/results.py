"""Where collecting sinks put their items so that the job handle can return them."""

from __future__ import annotations

import threading
from typing import Any

from jetspark.core.context import RESULTS_ATTRIBUTE

__all__ = ["RESULTS_ATTRIBUTE", "ResultCollector"]


class ResultCollector:
    """Thread-safe lists of items per vertex."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, list[Any]] = {}

    def add(self, vertex: str, items: list[Any]) -> None:
        with self._lock:
            self._items.setdefault(vertex, []).extend(items)

    def items(self, vertex: str) -> list[Any]:
        with self._lock:
            return list(self._items.get(vertex, ()))

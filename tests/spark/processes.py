"""Helpers for tests that start a Spark driver in a subprocess."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def with_root_on_path(env: dict[str, str]) -> dict[str, str]:
    """`env` with the repository root first on PYTHONPATH: drivers and executors import this
    checkout's jetspark, whatever is installed."""
    path = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path}

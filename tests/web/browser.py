"""What the browser tests share: how Debian's chromium is started, and waiting on a page."""

from __future__ import annotations

import os
from typing import Any

CHROMIUM = os.environ.get("JETSPARK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def wait_for_state(page: Any, state: str, timeout: float = 120) -> None:
    """Wait until the job page shows the job in `state` (the page refreshes itself; while it
    loads again, after a button's form post, the element may be missing for a moment)."""
    page.wait_for_function(
        f"() => document.querySelector('[data-field=\"state\"]')?.textContent === '{state}'",
        timeout=timeout * 1000,
    )


def wait_for_figure(page: Any, vertex: str, field: str, value: str, timeout: float = 120) -> None:
    """Wait until the job page's vertices table shows `value` as `field` of `vertex`."""
    page.wait_for_function(
        f'() => document.querySelector(\'tr[data-vertex="{vertex}"] [data-field="{field}"]\')'
        f"?.textContent === '{value}'",
        timeout=timeout * 1000,
    )

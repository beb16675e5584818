"""A real headless Chromium (Debian's `chromium` package, never a browser Playwright downloads)
driven by Playwright's Python API, shared by the tests of this folder, and a web UI server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from jetspark.web import WebServer
from tests.web.browser import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install chromium (as .ci/run does)"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    yield opened
    context.close()


@pytest.fixture
def server() -> Iterator[WebServer]:
    """A web UI on a free loopback port that sees every job made during the test."""
    running = WebServer("127.0.0.1", 0)
    yield running
    running.stop()

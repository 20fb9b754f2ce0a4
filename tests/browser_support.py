"""The browser the viewer's tests drive: Debian's Chromium through Playwright.

Playwright's own browser download does not work here, so the tests use
``/usr/bin/chromium`` (or ``$AGENTLOG_CHROMIUM``); ``make test`` installs it
with apt-get when it can. Without one the tests are skipped, loudly, with
the reason. Import this after ``pytest.importorskip("playwright.sync_api")``.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

__all__ = ["ARGS", "CHROMIUM", "NO_CHROMIUM", "browser", "chromium", "needs_chromium", "page", "until", "watched_page"]

CHROMIUM = os.environ.get("AGENTLOG_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NO_CHROMIUM = (
    f"SKIPPED LOUDLY: no Chromium at {CHROMIUM}; install Debian's "
    "'chromium' package (make test does it as root) or set AGENTLOG_CHROMIUM"
)
needs_chromium = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=NO_CHROMIUM)


@contextmanager
def chromium(sync_api: Any) -> Iterator[Any]:
    """A launched headless Chromium (skips the test without one)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(NO_CHROMIUM)
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def watched_page(
    browser: Any, *, width: int, height: int, bypass_csp: bool = False, dialogs: bool = False
) -> Iterator[tuple[Any, list[str]]]:
    """A page in a fresh context, and the list its errors are collected in
    (uncaught exceptions, console errors and, with ``dialogs``, any dialog);
    the caller asserts on the list."""
    context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=bypass_csp)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    if dialogs:
        opened.on("dialog", lambda dialog: errors.append(f"dialog: {dialog.message}"))
    try:
        yield opened, errors
    finally:
        context.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for a test module (import it, with ``page``, as fixtures)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with chromium(sync_api) as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A 1300x900 page whose logged errors fail the test."""
    with watched_page(browser, width=1300, height=900) as (opened, errors):
        yield opened
    assert errors == [], f"the page logged errors: {errors}"


def until(check: Any, timeout: float = 8.0) -> Any:
    """``check()`` until it is truthy (returned) or ``timeout`` seconds pass
    (then its last value): a page answers in its own time."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)

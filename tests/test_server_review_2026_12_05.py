"""Findings of a review of `agentlog serve` (HTTP API, SSE stream, web
viewer) on 2026-12-05, each a regression test now: waiting searches no
longer take every worker thread; the viewer follows the HEAD a stream's
``ready`` carries and an event whose own ``head`` is earlier; a session's
typing text does not show on the next one. They drive real clients: a
real uvicorn server on loopback, httpx, and Debian's Chromium through
Playwright. Races are made deterministic by holding the viewer's stream
request in the browser (Playwright routing) while another writer commits."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the 'server' extra is not installed")
httpx = pytest.importorskip("httpx")

from agentlog import Store  # noqa: E402
from agentlog.server import create_app  # noqa: E402
from browser_support import ARGS, CHROMIUM, needs_chromium  # noqa: E402
from server_support import live_server, serve_app  # noqa: E402

API = "/api/v1"

pytestmark = pytest.mark.timeout(120)


# --- helpers ---------------------------------------------------------------------------------


@contextmanager
def browser_page() -> Iterator[tuple[Any, list[str]]]:
    """A Chromium page (CSP bypassed only so that Playwright may evaluate
    expressions) and the list its errors are collected in."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 900}, bypass_csp=True)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            yield page, errors
        finally:
            browser.close()


def wait_live(page: Any) -> None:
    page.wait_for_function("() => document.getElementById('live-state').textContent === 'on'", timeout=15000)


def conversation_ids(page: Any) -> list[str]:
    return list(page.evaluate("Array.from(document.querySelectorAll('#conversation li[data-id]'), n => n.dataset.id)"))


def open_with_stream_held(page: Any, base: str, sid: str, while_held: Any) -> None:
    """Open session ``sid`` in the viewer; its tree and path are read, and
    its stream request is held until ``while_held()`` has run (a writer
    commits in that moment), then let through."""
    held: list[Any] = []
    released = False

    def hold(route: Any) -> None:
        if released:
            route.fallback()
        else:
            held.append(route)

    page.route("**/stream?*", hold)
    page.goto(f"{base}/#/s/{sid}")
    deadline = time.monotonic() + 15
    while not held:
        assert time.monotonic() < deadline, "the viewer never asked for its stream"
        page.wait_for_timeout(10)
    while_held()
    released = True
    for route in held:
        route.continue_()
    wait_live(page)


# --- 1. viewer: an event HEAD moved back from is drawn as part of the active path ------------


@needs_chromium
def test_viewer_does_not_draw_an_event_head_already_left_as_the_active_path(tmp_path: Any) -> None:
    """BUG (viewer.js ``onSettled``): a settled event whose parent is the last
    event drawn is appended to "Active path (HEAD)" without looking at the
    ``head`` it carries. When an agent appends an event and then moves HEAD
    back (a checkout: undo / regenerate) and the stream reads both commits
    together (one feed read, or a replay on (re)connect), the event arrives
    with ``head`` = its parent. The viewer then shows, under "Active path
    (HEAD)", an event that is NOT on HEAD's path (HEAD badge on the parent,
    the undone event below it), until some later event forces a redraw.
    docs/server.md itself says the ``head`` of a settled event may be later
    than the event.

    Expected: the conversation shows exactly the server's ``/path`` (it ends
    at HEAD); an event whose ``head`` is not itself (nor a descendant drawn
    with it) triggers a redraw of the active path rather than an append."""
    store = Store(tmp_path / "home")
    with store.create(name="undo") as s:
        sid = s.id
        s.append("message", {"content": "question"}, role="user")
        answer = s.append("message", {"content": "answer"}, role="assistant")
    undone: dict[str, str] = {}

    def agent_appends_then_undoes() -> None:
        with store.open(sid) as s:
            undone["id"] = s.append("message", {"content": "UNDONE follow-up"}, role="user").id
            s.checkout(answer.id)

    with live_server(store) as base, browser_page() as (page, errors):
        open_with_stream_held(page, base, sid, agent_appends_then_undoes)
        # The stream delivered the undone event: the tree counts it, HEAD stays on the answer.
        page.wait_for_function("() => document.getElementById('event-count').textContent === '3'", timeout=10000)
        page.wait_for_timeout(1000)  # any redraw the viewer schedules has had time to land
        head_path = [e["id"] for e in httpx.get(f"{base}{API}/sessions/{sid}/path").json()["events"]]
        assert page.inner_text("#head-id") == answer.id[-8:]
        assert undone["id"] not in head_path
        assert page.inner_text("#path-title").lower().startswith("active path")
        assert conversation_ids(page) == head_path, (
            "the 'Active path (HEAD)' shows an event HEAD was moved back from: "
            f"drawn {conversation_ids(page)}, HEAD's path {head_path}"
        )
        assert errors == []


# --- 2. viewer: live text of one session shows on another ------------------------------------


@needs_chromium
def test_viewer_live_delta_text_does_not_follow_into_another_session(tmp_path: Any) -> None:
    """BUG (viewer.js ``showSession`` / ``onDelta``): the "typing…" box of
    streamed deltas (``view.deltaText`` and ``#live-delta``) is cleared only
    when a settled assistant message extends the path drawn. Opening another
    session (a link, the list, the back button) stops the first session's
    stream but keeps its text: session A's half-written reply is shown on
    session B's page, and B's own deltas are appended after A's text.

    Expected: opening a session (and going back to the list) clears the live
    box; a session's page shows only its own deltas."""
    store = Store(tmp_path / "home")
    with store.create(name="agent A") as s:
        a = s.id
        s.append("message", {"content": "A's question"}, role="user")
    with store.create(name="quiet B") as s:
        b = s.id
        s.append("message", {"content": "B's question"}, role="user")
    with live_server(store) as base, browser_page() as (page, errors):
        page.goto(f"{base}/#/s/{a}")
        wait_live(page)
        r = httpx.post(f"{base}{API}/sessions/{a}/live", json={"items": [{"text": "PRIVATE-TO-A typing"}]})
        assert r.status_code == 202 and r.json()["delivered"] >= 1
        page.wait_for_function(
            "() => document.getElementById('live-delta').textContent.includes('PRIVATE-TO-A')", timeout=10000
        )
        page.goto(f"{base}/#/s/{b}")
        page.wait_for_function("() => document.getElementById('session-title').textContent === 'quiet B'")
        wait_live(page)
        r = httpx.post(f"{base}{API}/sessions/{b}/live", json={"items": [{"text": "B-typing"}]})
        assert r.status_code == 202 and r.json()["delivered"] >= 1
        page.wait_for_function(
            "() => document.getElementById('live-delta').textContent.includes('B-typing')", timeout=10000
        )
        shown = page.inner_text("#live-delta")
        assert "PRIVATE-TO-A" not in shown, f"session B's page shows session A's live text: {shown!r}"
        assert errors == []


# --- 3. viewer: HEAD moved by a checkout before the stream (re)connects is never shown --------


@needs_chromium
def test_viewer_takes_head_from_the_streams_ready_message(tmp_path: Any) -> None:
    """BUG (viewer.js ``startStream``): the viewer has no listener for the
    stream's first message, ``ready``, which carries ``{head, ...}``. A
    checkout (HEAD moved, no new event) that lands while the EventSource is
    not connected (between reading the path and subscribing, or while the
    browser reconnects after a network blip, a server restart or a
    ``dropped``) is replayed as nothing: the replay has only settled events,
    and a ``head`` message is sent only for a checkout the live feed sees.
    The page keeps showing the old HEAD and its path indefinitely (until the
    next event), with "Live: on".

    Expected: on ``ready`` the viewer compares ``head`` with what it shows
    and, if it differs, redraws HEAD's path (as it does for a ``head``
    message)."""
    store = Store(tmp_path / "home")
    with store.create(name="checkout while away") as s:
        sid = s.id
        first = s.append("message", {"content": "first question"}, role="user")
        s.append("message", {"content": "first answer"}, role="assistant")
        s.append("message", {"content": "second question"}, role="user")

    def agent_moves_head_back() -> None:
        with store.open(sid) as s:
            s.checkout(first.id)

    with live_server(store) as base, browser_page() as (page, errors):
        open_with_stream_held(page, base, sid, agent_moves_head_back)
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline and page.inner_text("#head-id") != first.id[-8:]:
            page.wait_for_timeout(100)
        assert httpx.get(f"{base}{API}/sessions/{sid}").json()["head"] == first.id
        assert page.inner_text("#head-id") == first.id[-8:], (
            "the viewer (Live: on) still shows the old HEAD after the stream's ready message said "
            f"{first.id}: shown {page.inner_text('#head-id')}"
        )
        assert conversation_ids(page) == [first.id]
        assert errors == []


# --- 4. server: searches waiting for the index starve every other route ----------------------


def test_searches_waiting_for_the_index_do_not_starve_the_other_routes(tmp_path: Any) -> None:
    """BUG (server/routes_find.py ``search`` -> service.py ``catch_up_search``):
    a search waits for the search-index catch-up (the start-up warm-up, which
    docs/server.md measures at minutes for a large store, or another
    search's catch-up) by blocking on ``Service._indexing`` INSIDE a worker
    of anyio's default thread pool (40 tokens) - the same pool every route
    that touches the store uses (``Service.run/read/write``). Forty searches
    in flight (the viewer sends one per pause in typing; a few tabs or an
    API client retrying) take every worker, and then listing sessions,
    reading a session, opening a stream and every write hang until the
    warm-up ends. Measured on a real `agentlog serve` of a home with 80,000
    events: with 45 searches sent at start-up, GET /api/v1/sessions took
    12.1 s (0.15 s without them).

    Reproduced deterministically here by holding the index lock the way a
    long warm-up holds it. Expected: a search waiting for the index does not
    occupy a worker the other routes need (wait asynchronously, or run
    searches under their own CapacityLimiter); GET /api/v1/sessions answers
    at once."""
    store = Store(tmp_path / "home")
    with store.create(name="one", working_dir="/tmp/p") as s:
        s.append("message", {"content": "hello world"}, role="user")
    app = create_app(store)
    service = app.state.service
    with serve_app(app) as base:
        # Let the real warm-up of this tiny store finish, then hold its lock
        # as a long warm-up (a large store) would.
        assert httpx.get(f"{base}{API}/search", params={"q": "hello"}, timeout=30).status_code == 200
        assert service._indexing.acquire(timeout=30)
        released = False
        threads: list[threading.Thread] = []
        try:

            def search(i: int) -> None:
                try:
                    httpx.get(f"{base}{API}/search", params={"q": f"word{i}"}, timeout=60)
                except httpx.HTTPError:
                    pass

            threads = [threading.Thread(target=search, args=(i,), daemon=True) for i in range(45)]
            for t in threads:
                t.start()
            time.sleep(1.0)  # the searches are in, each waiting in a worker
            started = time.monotonic()
            try:
                listing = httpx.get(f"{base}{API}/sessions", timeout=5)
                took = time.monotonic() - started
                status = listing.status_code
            except httpx.TimeoutException:
                took, status = time.monotonic() - started, None
            service._indexing.release()
            released = True
            assert status == 200 and took < 2.0, (
                f"GET /api/v1/sessions answered {status} after {took:.1f} s while searches waited for the index"
            )
        finally:
            if not released:
                service._indexing.release()
            for t in threads:
                t.join(30)

"""Regressions of a review of the viewer's search, virtualised drawing and
live updates (and of the server's token cookie).

The races are made deterministic by holding the viewer's requests in the
browser (Playwright's routing): an answer read before a write is handed to
the page only after the write's event has reached it by the stream.
Browser tests run in Debian's Chromium and are skipped loudly without it,
as in ``test_server_browser.py``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser_support import until  # noqa: E402
from server_support import live_server  # noqa: E402

httpx = pytest.importorskip("httpx")

from agentlog import Store  # noqa: E402
from agentlog.server import create_app  # noqa: E402

API = "/api/v1"

pytestmark = pytest.mark.timeout(60)


# --- the token cookie among other localhost cookies ----------------------------------------


def test_the_token_cookie_is_found_beside_a_cookie_simplecookie_rejects() -> None:
    """Cookies are per host, not per port: every other server on localhost
    adds its own, and one with a JSON value made the whole header unreadable
    (401 for the viewer, whose cookie was right there)."""
    app = create_app(Store.memory(), token="tok")

    async def go() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            statuses = []
            for header in (
                'prefs={"theme": "dark"}; agentlog_token=tok',
                "agentlog_token=tok; session=a b",
                'prefs={"theme": "dark"}; agentlog_token=wrong',
            ):
                response = await client.get(f"{API}/health", headers={"Cookie": header})
                statuses.append(response.status_code)
            return statuses

    assert asyncio.run(go()) == [200, 200, 401]


# --- the browser -----------------------------------------------------------------------------

# browser_support's browser and page fixtures (a page whose logged errors fail the test).
pytest_plugins = ["browser_support"]


class Holder:
    """Holds the page's requests whose URL matches ``pattern``: with
    ``prefetch`` the server answers at once (an answer read now, handed over
    later), else the request waits to be sent at all."""

    def __init__(self, page: Any, pattern: Any, prefetch: bool) -> None:
        self.page = page
        self.pattern = pattern
        self.prefetch = prefetch
        self.held: list[tuple[Any, Any]] = []
        self.released = False
        page.route(pattern, self._hold)

    def _hold(self, route: Any) -> None:
        if self.released:
            route.fallback()
        else:
            self.held.append((route, route.fetch() if self.prefetch else None))

    def wait(self, count: int = 1, again: Any = None) -> None:
        """Until ``count`` requests are held; ``again`` (what asked for the
        request) is done again every 3 s meanwhile: on a loaded CI machine a
        key press once went unanswered for the whole 10 s."""
        deadline = time.monotonic() + 10
        retry = time.monotonic() + 3
        while len(self.held) < count:
            assert time.monotonic() < deadline, f"no request to {self.pattern} was held"
            if again is not None and time.monotonic() > retry:
                again()
                retry = time.monotonic() + 3
            self.page.wait_for_timeout(10)

    def release(self) -> None:
        """Let every held request through (the stale answer, or the request
        itself), and stop holding."""
        self.released = True
        while self.held:
            route, response = self.held.pop(0)
            if response is not None:
                route.fulfill(response=response)
            else:
                route.continue_()
        self.page.unroute(self.pattern)


def conversation_ids(page: Any) -> list[str]:
    return list(page.evaluate("Array.from(document.querySelectorAll('#conversation li[data-id]'), n => n.dataset.id)"))


def path_ids(client: Any, sid: str) -> list[str]:
    return [e["id"] for e in client.get(f"{API}/sessions/{sid}/path").json()["events"]]


def post(client: Any, sid: str, content: str, kind: str = "message", role: str | None = "user") -> str:
    body: dict[str, Any] = {"kind": kind, "record": {"content": content}}
    if role:
        body["role"] = role
    response = client.post(f"{API}/sessions/{sid}/events", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["event"]["id"])


def test_records_the_viewer_does_not_expect_are_drawn_and_do_not_stop_live_updates(page: Any) -> None:
    """A label whose target is not a string threw out of the drawing (the
    session did not open: "id.slice is not a function"); live, it stopped
    every later event from being drawn. A usage with strings turned the
    totals into "05 / 0[object Object]" and threw on the cost."""
    store = Store.memory()
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sid = client.post(f"{API}/sessions", json={"name": "odd records"}).json()["session"]["id"]
        odd = [
            {"kind": "label", "record": {"name": {"x": 1}, "target": 5}},
            {"kind": "compaction", "record": {"summary": {"a": "<b>x</b>"}, "first_kept_event_id": 7}},
            {"kind": "message", "role": "user", "record": {"content": "<img src=x onerror=alert(1)>"}},
        ]
        for body in odd:
            assert client.post(f"{API}/sessions/{sid}/events", json=body).status_code == 201
        page.goto(f"{url}/#/s/{sid}")
        page.wait_for_selector("#live-state.on")
        assert conversation_ids(page) == path_ids(client, sid)
        assert page.inner_text("#status") == ""

        odd_usage = {"input_tokens": "5", "output_tokens": {"a": 1}, "cost_usd": "0.5"}
        hostile_usage = {"content": "costly", "usage": odd_usage}
        response = client.post(
            f"{API}/sessions/{sid}/events", json={"kind": "message", "role": "assistant", "record": hostile_usage}
        )
        assert response.status_code == 201
        assert client.post(f"{API}/sessions/{sid}/events", json=odd[0]).status_code == 201
        last = post(client, sid, "after the odd ones")
        page.wait_for_selector(f"#conversation li[data-id='{last}']")
        assert conversation_ids(page) == path_ids(client, sid)
        assert page.inner_text("#tokens") == "0 / 0"
        assert page.inner_text("#cost") == "$0.0000"
        assert page.inner_text("#event-count") == "6"
        assert page.locator("#conversation img, #conversation b").count() == 0
        page.goto("about:blank")


def test_h_while_an_event_settles_still_draws_it(page: Any) -> None:
    """Back to HEAD (``h``) from a branch: an event that settled while the
    path was read was neither appended (a branch was shown) nor in the path
    (read before it): it was missing until the next event."""
    store = Store.memory()
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sid = client.post(f"{API}/sessions", json={"name": "h race"}).json()["session"]["id"]
        ids = [post(client, sid, f"m{i}") for i in range(8)]
        page.goto(f"{url}/#/s/{sid}")
        page.wait_for_selector("#live-state.on")
        page.click(f"#tree li.node[data-id='{ids[3]}']")
        page.wait_for_selector("#viewing-note:not([hidden])")

        holder = Holder(page, "**/path*", prefetch=True)
        page.keyboard.press("h")
        holder.wait(again=lambda: page.keyboard.press("h"))  # HEAD's path, read before the write below
        fresh = post(client, sid, "settled while the path was on its way")
        assert until(lambda: page.inner_text("#event-count") == "9")
        holder.release()
        assert until(lambda: conversation_ids(page) == path_ids(client, sid)), conversation_ids(page)
        assert fresh in conversation_ids(page)
        assert page.inner_text("#head-id") == fresh[-8:]
        page.goto("about:blank")


def test_a_session_opened_while_it_grows_misses_no_event(page: Any) -> None:
    """The tree and HEAD's path are read together; when an event landed in
    between, the path lacked it and the stream (going on after the tree's
    last event) never sent it."""
    store = Store.memory()
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sid = client.post(f"{API}/sessions", json={"name": "growing"}).json()["session"]["id"]
        for i in range(5):
            post(client, sid, f"m{i}")
        paths = Holder(page, "**/path*", prefetch=True)
        trees = Holder(page, "**/entries*", prefetch=False)
        page.goto(f"{url}/#/s/{sid}")
        paths.wait()
        trees.wait()
        fresh = post(client, sid, "landed between the path and the tree")
        trees.release()  # read now: it has the new event
        paths.release()  # read before: it has not
        page.wait_for_selector("#live-state.on")
        assert until(lambda: fresh in conversation_ids(page)), conversation_ids(page)
        assert conversation_ids(page) == path_ids(client, sid)
        page.goto("about:blank")


def test_a_tree_reload_keeps_the_events_that_settled_while_it_was_read(page: Any) -> None:
    """A label (or compaction) reloads the tree; events that settled while
    it was read vanished from it (and every event after them, whose parent
    was missing), and HEAD went back."""
    store = Store.memory()
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sid = client.post(f"{API}/sessions", json={"name": "reload"}).json()["session"]["id"]
        for i in range(5):
            post(client, sid, f"m{i}")
        page.goto(f"{url}/#/s/{sid}")
        page.wait_for_selector("#live-state.on")
        trees = Holder(page, "**/entries*", prefetch=True)
        response = client.post(f"{API}/sessions/{sid}/events", json={"kind": "label", "record": {"name": "here"}})
        assert response.status_code == 201
        trees.wait()  # the reload, read now
        fresh = [post(client, sid, f"after the label {i}") for i in range(2)]
        assert until(lambda: page.inner_text("#event-count") == "8")
        trees.release()
        page.wait_for_timeout(300)  # the stale tree is applied
        assert page.inner_text("#event-count") == "8"
        assert page.inner_text("#head-id") == fresh[-1][-8:]
        rows = page.evaluate("view.rows.map((row) => row.id)")
        assert rows[-2:] == fresh
        assert conversation_ids(page) == path_ids(client, sid)
        page.goto("about:blank")


def titles(page: Any) -> list[str]:
    return list(page.evaluate("Array.from(document.querySelectorAll('#sessions tbody tr a'), a => a.textContent)"))


def test_the_list_of_an_older_query_does_not_join_the_newer_one(page: Any) -> None:
    """The session list (the box's ``q``) had no guard against answers that
    come back late: a slow answer for what was typed first was appended to
    the rows of what was typed next."""
    store = Store.memory()
    for name in ("alpha one", "alpha two", "beta three"):
        with store.create(name=name):
            pass
    with live_server(store) as url:
        page.goto(f"{url}/")
        page.wait_for_selector("#sessions tbody tr")
        holder = Holder(page, "**/sessions?*q=alpha*", prefetch=True)
        page.fill("#search", "alpha")
        holder.wait()
        page.fill("#search", "beta")
        assert until(lambda: titles(page) == ["beta three"])
        holder.release()
        page.wait_for_timeout(300)
        assert titles(page) == ["beta three"]
        page.goto("about:blank")


def test_bidi_controls_in_a_message_are_shown_not_obeyed(page: Any) -> None:
    """A right-to-left override in a message reversed the rest of its line
    on screen (QA finding; the "Trojan Source" trick): the viewer shows
    each override, embedding and isolate as a visible mark instead."""
    store = Store.memory()
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sid = client.post(f"{API}/sessions", json={"name": "bidi"}).json()["session"]["id"]
        last = post(client, sid, "pay \u202eevil.exe\u202c to me \u2066x\u2069")
        page.goto(f"{url}/#/s/{sid}")
        page.wait_for_selector(f"#conversation li[data-id='{last}']")
        shown = page.inner_text(f"#conversation li[data-id='{last}']")
        assert "\u27e6U+202E\u27e7evil.exe\u27e6U+202C\u27e7" in shown
        assert "\u27e6U+2066\u27e7x\u27e6U+2069\u27e7" in shown
        assert not any(c in shown for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
        page.goto("about:blank")

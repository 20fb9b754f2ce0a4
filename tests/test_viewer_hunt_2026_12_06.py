"""Regressions of a hunt of the viewer in Chromium (2026-12-06): titles
that obeyed bidirectional overrides, a session that failed to open left
the one before on screen, a tree reload that made the conversation redraw
from scratch, the list's "More" that repeated a row and lost the session
written to, and a "typing…" preview that outlived its reply. Skipped
loudly without Chromium, as in ``test_server_browser.py``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser_support import until, watched_page  # noqa: E402
from helpers import retry_stair  # noqa: E402
from server_support import live_server  # noqa: E402

httpx = pytest.importorskip("httpx")

from agentlog import Store  # noqa: E402

API = "/api/v1"
ROW_IDS = "Array.from(document.querySelectorAll('#sessions tbody tr'), r => r.dataset.id)"
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

pytestmark = pytest.mark.timeout(60)
pytest_plugins = ["browser_support"]


def post(client: Any, sid: str, content: str, role: str = "user") -> str:
    response = client.post(
        f"{API}/sessions/{sid}/events", json={"kind": "message", "role": role, "record": {"content": content}}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["event"]["id"])


def conversation_ids(page: Any) -> list[str]:
    return list(page.evaluate("Array.from(document.querySelectorAll('#conversation li[data-id]'), n => n.dataset.id)"))


def test_titles_show_bidi_controls_as_marks(page: Any) -> None:
    store = Store.memory()
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sid = client.post(f"{API}/sessions", json={"name": "pay \u202eevil\u202c now"}).json()["session"]["id"]
        post(client, sid, "findme")
        page.goto(f"{url}/#/s/{sid}")
        page.wait_for_selector("#live-state.on")
        for shown in (page.inner_text("#session-title"), page.title()):
            assert "\u27e6U+202E\u27e7evil\u27e6U+202C\u27e7" in shown
            assert not any(c in shown for c in BIDI)
        page.goto(f"{url}/#/")
        page.fill("#search", "findme")
        page.wait_for_selector("#hits li.hit .hit-title")
        page.wait_for_timeout(300)  # the hits' titles are filled in after the hits
        title = page.inner_text("#hits li.hit .hit-title")
        assert "\u27e6U+202E\u27e7" in title and not any(c in title for c in BIDI)
        page.goto("about:blank")


def test_a_session_that_cannot_be_opened_shows_nothing_of_the_one_before(browser: Any) -> None:
    store = Store.memory()
    with (
        live_server(store) as url,
        httpx.Client(base_url=url) as client,
        watched_page(browser, width=1300, height=900) as (page, errors),
    ):
        sid = client.post(f"{API}/sessions", json={"name": "the first"}).json()["session"]["id"]
        post(client, sid, "from the first session")
        page.goto(f"{url}/#/s/{sid}")
        page.wait_for_selector("#live-state.on")
        assert page.inner_text("#session-title") == "the first"
        page.goto(f"{url}/#/s/no-such-session")
        assert until(
            lambda: "session_not_found" in page.inner_text("#status") or "not found" in page.inner_text("#status")
        )
        assert page.inner_text("#session-title") == ""
        assert conversation_ids(page) == []
        assert page.inner_text("#event-count") == "0"
        assert page.inner_text("#head-id") == ""
        page.goto("about:blank")
    # the browser logs the missing session's 404s, and nothing else
    assert [e for e in errors if "404" not in e] == []


def test_an_event_a_tree_reload_read_first_is_appended_not_redrawn(page: Any) -> None:
    """A label schedules a tree reload, which can read events the stream has
    not delivered yet; they were then skipped when the stream brought them,
    and the conversation was redrawn from scratch (opened tool calls closed,
    the reader thrown to the end)."""
    store = Store.memory()
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sid = client.post(f"{API}/sessions", json={"name": "reload"}).json()["session"]["id"]
        for i in range(3):
            post(client, sid, f"m{i}")
        page.goto(f"{url}/#/s/{sid}")
        page.wait_for_selector("#live-state.on")
        page.evaluate(
            "window.__redraws = 0; const real = window.renderConversation;"
            "window.renderConversation = function (...a) { window.__redraws += 1; return real.apply(this, a); }; 0"
        )
        # What the tree reload would have read first, then the stream's settled message for it.
        settled = page.evaluate(
            """() => {
              const parent = view.shown;
              const id = parent.slice(0, -4) + "ffff";
              const e = { id, parent_id: parent, branch_from: null, kind: "message", role: "user",
                          timestamp: new Date().toISOString(), record: { content: "read by the tree first" } };
              addEntry(e);
              view.head = id;
              onSettled({ ...e, head: id });
              return id;
            }"""
        )
        page.wait_for_timeout(300)
        assert conversation_ids(page)[-1] == settled
        assert page.evaluate("view.shown") == settled
        assert page.evaluate("window.__redraws") == 0
        page.goto("about:blank")


def test_more_neither_repeats_nor_loses_a_session_written_to(page: Any) -> None:
    store = Store.memory()
    ids = []
    for i in range(60):
        with store.create(name=f"sess {i:02d}") as s:
            s.append("message", {"content": f"hi {i}"}, role="user")
            ids.append(s.id)
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        page.goto(f"{url}/")
        assert until(lambda: page.evaluate("document.querySelectorAll('#sessions tbody tr').length") == 50)
        post(client, ids[3], "new work")  # sess 03 is on no first page: the oldest are last
        page.click("#more")
        shown = lambda: list(page.evaluate(ROW_IDS))  # noqa: E731
        assert until(lambda: len(shown()) == 60)
        rows = shown()
        assert len(set(rows)) == 60
        assert rows[0] == ids[3]  # newest first: the session just written to
        assert page.is_hidden("#more")
        page.goto("about:blank")


def test_the_typing_preview_goes_when_an_event_settles_on_another_path(page: Any) -> None:
    store = Store.memory()
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sid = client.post(f"{API}/sessions", json={"name": "delta"}).json()["session"]["id"]
        first = post(client, sid, "q1")
        answer = post(client, sid, "a1", role="assistant")
        assert client.post(f"{API}/sessions/{sid}/checkout", json={"event_id": first}).status_code == 200
        post(client, sid, "q2")  # HEAD on a branch beside the answer
        page.goto(f"{url}/#/s/{sid}/e/{answer}")  # reading the other branch
        page.wait_for_selector("#viewing-note:not([hidden])")
        page.wait_for_selector("#live-state.on")
        live = client.post(f"{API}/sessions/{sid}/live", json={"items": [{"type": "delta", "text": "The answer is 4"}]})
        assert live.status_code in (200, 202), live.text
        assert until(lambda: page.is_visible("#live-delta"))
        post(client, sid, "The answer is 42.", role="assistant")
        assert until(lambda: page.is_hidden("#live-delta"))
        assert page.inner_text("#live-delta") == ""
        page.goto("about:blank")


def test_the_tree_stays_flat_when_the_chain_goes_on_off_the_active_path(page: Any) -> None:
    """At every step the older child carries the chain and the newer is a
    one-event retry, HEAD on the first retry: going on with the newest put
    the chain a level deeper per step."""
    store = Store.memory()
    retry_stair(store, "st", 40)
    with live_server(store) as url:
        page.goto(f"{url}/#/s/st")
        page.wait_for_selector("#live-state.on")
        assert page.evaluate("view.rows.length") == 82
        assert page.evaluate("Math.max(...view.rows.map((row) => row.depth))") <= 3
        page.goto("about:blank")

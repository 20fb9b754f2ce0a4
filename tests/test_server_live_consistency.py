"""What a live reader sees while an agent writes, with real clients and a
browser:

- ``/path``, ``/context`` and ``/entries`` read HEAD apart from the events:
  on stores that read live (SQLite, PostgreSQL, memory) an append in
  between gave a HEAD the events did not reach, and the viewer, comparing
  HEADs, never fetched the missing event.
- The viewer opened the stream of an empty session without ``?after=``,
  so an event that landed before the server subscribed was never drawn.
- A message's usage line drew a cost given as text as ``$NaN``.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("starlette")

import httpx  # noqa: E402

from agentlog import Session, Store  # noqa: E402
from agentlog.server import create_app  # noqa: E402
from server_support import call, live_server  # noqa: E402

pytest_plugins = ["browser_support"]  # its `browser` and `page` fixtures

API = "/api/v1"

pytestmark = pytest.mark.timeout(60)


def _store_with_a_writer_inside(
    monkeypatch: pytest.MonkeyPatch, method: str, calls: set[int], *, after: bool
) -> tuple[Store, str]:
    """A memory store (it reads live, as SQLite and PostgreSQL do) whose
    ``Session.<method>`` has an agent append one event just before (or,
    ``after``, just after) the read of each call numbered in ``calls`` (1
    is the first call): a commit landing in the middle of a request, made
    deterministic."""
    store = Store.memory()
    with store.create(name="busy") as session:
        for i in range(3):
            session.append("message", {"content": f"m{i}"}, role="user")
        sid = session.id
    original = getattr(Session, method)
    count = 0

    def append() -> None:
        with store.open(sid) as writer:
            writer.append("message", {"content": f"landed during call {count}"}, role="assistant")

    def racing(self: Session, *args: Any, **kwargs: Any) -> Any:
        nonlocal count
        count += 1
        if count in calls and not after:
            append()
        result = original(self, *args, **kwargs)
        if count in calls and after:
            append()
        return result

    monkeypatch.setattr(Session, method, racing)
    return store, sid


def test_the_path_s_head_is_where_its_events_end_though_an_append_lands_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, sid = _store_with_a_writer_inside(monkeypatch, "path", {1}, after=True)
    document = call(create_app(store), "GET", f"{API}/sessions/{sid}/path").json()
    assert document["head"] == document["events"][-1]["id"]
    assert document["at"] == document["head"]


def test_the_context_s_head_is_where_its_events_end_though_an_append_lands_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, sid = _store_with_a_writer_inside(monkeypatch, "context", {1}, after=True)
    document = call(create_app(store), "GET", f"{API}/sessions/{sid}/context").json()
    assert document["head"] == document["events"][-1]["id"]


def test_the_tree_s_head_is_its_newest_entry_though_appends_land_while_it_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Call 1 reads the labels and notes; call 2 is the tree itself, read
    # after HEAD: an append there left HEAD behind the entries.
    store, sid = _store_with_a_writer_inside(monkeypatch, "entries", {1, 2}, after=False)
    document = call(create_app(store), "GET", f"{API}/sessions/{sid}/entries").json()
    assert len(document["entries"]) == 5
    assert document["head"] == document["entries"][-1]["id"]


# --- the browser -----------------------------------------------------------------------------

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from test_review_viewer import Holder, conversation_ids, post, until  # noqa: E402


def test_the_first_event_of_an_empty_session_is_drawn_though_it_lands_before_the_stream(page: Any) -> None:
    """The tree of an empty session has no last event, and the stream was
    opened without ``?after=``: the server starts such a stream at the
    moment it subscribes, so an agent's first event, written after the tree
    was read and before that, was missing (the count said 1 for 2 events
    once the next one came)."""
    store = Store.memory()
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sid = client.post(f"{API}/sessions", json={"name": "empty"}).json()["session"]["id"]
        streams = Holder(page, "**/stream*", prefetch=False)
        page.goto(f"{url}/#/s/{sid}")
        streams.wait()  # the tree is read, the stream not yet asked for
        first = post(client, sid, "the agent's first event")
        streams.release()
        page.wait_for_selector("#live-state.on")
        assert until(lambda: conversation_ids(page) == [first]), conversation_ids(page)
        assert page.inner_text("#event-count") == "1"
        second = post(client, sid, "the next one")
        assert until(lambda: conversation_ids(page) == [first, second]), conversation_ids(page)
        assert page.inner_text("#event-count") == "2"
        page.goto("about:blank")


def test_a_usage_with_text_where_numbers_go_is_not_drawn_as_nan(page: Any) -> None:
    store = Store.memory()
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sid = client.post(f"{API}/sessions", json={"name": "odd usage"}).json()["session"]["id"]
        usage = {"input_tokens": "7", "output_tokens": 3, "cost_usd": "a"}
        record = {"content": "hi", "model": {"x": 1}, "usage": usage}
        body = {"kind": "message", "role": "assistant", "record": record}
        assert client.post(f"{API}/sessions/{sid}/events", json=body).status_code == 201
        page.goto(f"{url}/#/s/{sid}")
        page.wait_for_selector("#live-state.on")
        assert page.inner_text("#conversation .usage") == "0 in · 3 out"
        page.goto("about:blank")

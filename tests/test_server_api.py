"""The JSON API through the ASGI app (httpx), on every store of the fixture.

httpx's ASGI transport re-raises any exception the app lets escape, so a
test here fails on any unexpected error, not only on a 500 response.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from server_support import build_demo

httpx = pytest.importorskip("httpx")

from agentlog import NIL_ID, Store  # noqa: E402
from agentlog.server import create_app  # noqa: E402
from agentlog.server.openapi import openapi_document  # noqa: E402

API = "/api/v1"


@pytest.fixture
def store(make_store: Any) -> Store:
    """Each backend of conftest.BACKENDS (a small blob threshold makes blobs cheap)."""
    return make_store(blob_threshold=4096)


class Client:
    """A synchronous face on an httpx AsyncClient over the ASGI app."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost")

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        response = self.loop.run_until_complete(self.client.request(method, url, **kwargs))
        assert response.status_code < 500, response.text
        return response

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()


@pytest.fixture
def client(store: Store) -> Any:
    c = Client(create_app(store))
    yield c
    c.close()


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"]["message"], str)
    return str(body["error"]["code"])


# --- reads ---------------------------------------------------------------------------


def test_list_get_entries_path_context(client: Client, store: Store) -> None:
    ids = build_demo(store)
    sid = ids["session"]
    listing = client.get(f"{API}/sessions").json()
    assert [s["id"] for s in listing["sessions"]] == [sid] and listing["total"] == 1

    session = client.get(f"{API}/sessions/{sid}").json()
    assert session["head"] == ids["head"]
    assert session["session"]["title"] == "demo: fix the parser"

    tree = client.get(f"{API}/sessions/{sid}/entries").json()
    with store.open(sid, readonly=True) as s:
        assert [e["id"] for e in tree["entries"]] == [e.id for e in s.entries()]
        path_ids = [e.id for e in s.path()]
        context_ids = [e.id for e in s.context()]
    assert tree["head"] == ids["head"]
    assert ids["abandoned"] in {e["id"] for e in tree["entries"]}  # both branches are there
    assert tree["labels"] == {ids["compaction"]: ["fixed"]}
    with store.open(sid) as s:  # what `agentlog label` sets: names in the metadata
        s.update_meta(labels={"start": ids["first"], "again": ids["compaction"], "fixed": ids["compaction"]})
    labelled = client.get(f"{API}/sessions/{sid}/entries").json()["labels"]
    assert labelled == {ids["first"]: ["start"], ids["compaction"]: ["again", "fixed"]}
    assert tree["notes"][ids["compaction"]]["kind"] == "compaction"
    assert tree["notes"][ids["branch_summary"]]["kind"] == "branch_summary"

    path = client.get(f"{API}/sessions/{sid}/path").json()
    assert [e["id"] for e in path["events"]] == path_ids
    assert path["events"][0]["id"] == ids["first"]  # history before the compaction
    blob = next(e for e in path["events"] if e["id"] == ids["blob"])
    assert blob["blob"] is True and blob["record"] is None  # loaded only when asked
    assert path["totals"]["input_tokens"] == 1200 + 3400 + 3600 + 900
    assert path["totals"]["cost_usd"] == pytest.approx(0.0123 + 0.0311 + 0.0201 + 0.004)

    at = client.get(f"{API}/sessions/{sid}/path", params={"at": ids["abandoned"]}).json()
    assert at["events"][-1]["id"] == ids["abandoned"] and at["at"] == ids["abandoned"]

    context = client.get(f"{API}/sessions/{sid}/context").json()
    assert [e["id"] for e in context["events"]] == context_ids
    assert context["events"][0]["kind"] == "compaction"


def test_event_and_blob(client: Client, store: Store) -> None:
    ids = build_demo(store)
    sid = ids["session"]
    plain = client.get(f"{API}/sessions/{sid}/events/{ids['blob']}").json()
    assert plain["record"] is None and plain["digest"].startswith("sha256:")
    resolved = client.get(f"{API}/sessions/{sid}/events/{ids['blob']}", params={"resolve": "true"})
    assert resolved.json()["record"]["content"].startswith("line of parser.py")
    blob = client.get(f"{API}/sessions/{sid}/events/{ids['blob']}/blob")
    assert blob.status_code == 200 and blob.headers["digest"] == plain["digest"]
    assert blob.json() == resolved.json()["record"]
    inline = client.get(f"{API}/sessions/{sid}/events/{ids['first']}/blob")
    assert inline.status_code == 404 and error_code(inline) == "no_blob"
    resolved_path = client.get(f"{API}/sessions/{sid}/path", params={"resolve": "1"}).json()
    assert all(e["record"] is not None for e in resolved_path["events"])


def test_list_filters_and_paging(client: Client, store: Store) -> None:
    made = []
    for i in range(7):
        with store.create(name=f"task {i}", working_dir=f"/w/{i % 2}") as s:
            made.append(s.id)
    page = client.get(f"{API}/sessions", params={"limit": 3}).json()
    assert len(page["sessions"]) == 3 and page["total"] == 7 and page["next_offset"] == 3
    seen = [s["id"] for s in page["sessions"]]
    while page["next_offset"] is not None:
        page = client.get(f"{API}/sessions", params={"limit": 3, "offset": page["next_offset"]}).json()
        seen += [s["id"] for s in page["sessions"]]
    assert sorted(seen) == sorted(made) and len(seen) == 7
    assert client.get(f"{API}/sessions", params={"q": "TASK 3"}).json()["total"] == 1
    assert client.get(f"{API}/sessions", params={"working_dir": "/w/1"}).json()["total"] == 3
    store.update_meta(made[0], archived=True)
    assert client.get(f"{API}/sessions").json()["total"] == 6
    assert client.get(f"{API}/sessions", params={"archived": "true"}).json()["total"] == 7
    for bad in ({"limit": 0}, {"limit": "x"}, {"offset": -1}, {"archived": "maybe"}):
        response = client.get(f"{API}/sessions", params=bad)
        assert response.status_code == 400 and error_code(response) == "invalid_parameter"


# --- writes --------------------------------------------------------------------------


def test_create_append_batch_and_if_match(client: Client, store: Store) -> None:
    created = client.post(f"{API}/sessions", json={"name": "api made"})
    assert created.status_code == 201
    sid = created.json()["session"]["id"]
    assert created.json()["head"] == NIL_ID
    one = client.post(
        f"{API}/sessions/{sid}/events", json={"kind": "message", "role": "user", "record": {"content": "hi"}}
    )
    assert one.status_code == 201
    head = one.json()["head"]
    assert one.json()["event"]["id"] == head and one.json()["event"]["parent_id"] == NIL_ID

    batch = client.post(
        f"{API}/sessions/{sid}/batch",
        headers={"If-Match": f'"{head}"'},
        json={
            "events": [
                {"kind": "message", "role": "assistant", "record": {"content": "a"}},
                {"kind": "custom", "record": [1, 2, 3]},
            ]
        },
    )
    assert batch.status_code == 201
    events = batch.json()["events"]
    assert events[0]["parent_id"] == head and events[1]["parent_id"] == events[0]["id"]

    stale = client.post(
        f"{API}/sessions/{sid}/events",
        headers={"If-Match": head},
        json={"kind": "message", "role": "user", "record": {"content": "late"}},
    )
    assert stale.status_code == 409 and error_code(stale) == "head_mismatch"
    assert stale.json()["error"]["head"] == events[1]["id"]

    # A batch with one bad event writes nothing (all or nothing).
    bad = client.post(
        f"{API}/sessions/{sid}/batch",
        json={
            "events": [
                {"kind": "message", "role": "user", "record": {"content": "ok"}},
                {"kind": "Not A Kind"},
            ]
        },
    )
    assert bad.status_code == 400 and error_code(bad) == "invalid_event"
    with store.open(sid, readonly=True) as s:
        assert len(s.entries()) == 3 and s.head == events[1]["id"]


def test_checkout_fork_compact(client: Client, store: Store) -> None:
    ids = build_demo(store)
    sid = ids["session"]
    moved = client.post(
        f"{API}/sessions/{sid}/checkout",
        json={"event_id": ids["abandoned"]},
        headers={"If-Match": ids["head"]},
    )
    assert moved.status_code == 200 and moved.json()["head"] == ids["abandoned"]
    again = client.post(
        f"{API}/sessions/{sid}/checkout", json={"event_id": ids["head"]}, headers={"If-Match": ids["head"]}
    )
    assert again.status_code == 409 and again.json()["error"]["head"] == ids["abandoned"]
    missing = client.post(f"{API}/sessions/{sid}/checkout", json={"event_id": "01900000-0000-7000-8000-000000000000"})
    assert missing.status_code == 404 and error_code(missing) == "event_not_found"

    forked = client.post(f"{API}/sessions/{sid}/fork", json={"at": ids["fork_point"], "name": "f"})
    assert forked.status_code == 201
    fid = forked.json()["session"]["id"]
    assert fid != sid and forked.json()["head"] == ids["fork_point"]
    with store.open(fid, readonly=True) as f:
        assert f.event(ids["blob"]).digest is not None

    for i in range(12):
        client.post(
            f"{API}/sessions/{fid}/events",
            json={
                "kind": "message",
                "role": "user" if i % 2 == 0 else "assistant",
                "record": {"content": f"turn {i} " + "words " * 200},
            },
        )
    compacted = client.post(f"{API}/sessions/{fid}/compact", json={"keep_tokens": 100})
    assert compacted.status_code == 200
    assert compacted.json()["event"]["kind"] == "compaction"
    assert compacted.json()["head"] == compacted.json()["event"]["id"]


# --- errors --------------------------------------------------------------------------


def test_bad_input_is_json_4xx(client: Client, store: Store) -> None:
    ids = build_demo(store)
    sid = ids["session"]
    cases = [
        ("GET", f"{API}/sessions/bad%20id", {}, 400, "invalid_session_id"),
        ("GET", f"{API}/sessions/a.b", {}, 400, "invalid_session_id"),
        ("GET", f"{API}/sessions/nope", {}, 404, "session_not_found"),
        ("GET", f"{API}/sessions/{sid}/events/not-a-uuid", {}, 400, "invalid_event_id"),
        (
            "GET",
            f"{API}/sessions/{sid}/events/01900000-0000-7000-8000-000000000000",
            {},
            404,
            "event_not_found",
        ),
        ("GET", f"{API}/sessions/{sid}/path?at=xyz", {}, 400, "invalid_event_id"),
        ("GET", f"{API}/nothing/here", {}, 404, "not_found"),
        ("DELETE", f"{API}/sessions/{sid}", {}, 405, "method_not_allowed"),
        (
            "POST",
            f"{API}/sessions/{sid}/events",
            {"content": b"{", "headers": {"content-type": "application/json"}},
            400,
            "invalid_json",
        ),
        (
            "POST",
            f"{API}/sessions/{sid}/events",
            {"content": b"[]", "headers": {"content-type": "application/json"}},
            400,
            "invalid_body",
        ),
        (
            "POST",
            f"{API}/sessions/{sid}/events",
            {"content": b"{}", "headers": {"content-type": "text/plain"}},
            415,
            "unsupported_media_type",
        ),
        ("POST", f"{API}/sessions/{sid}/events", {"json": {"record": {}}}, 400, "invalid_body"),
        ("POST", f"{API}/sessions/{sid}/events", {"json": {"kind": 3}}, 400, "invalid_body"),
        ("POST", f"{API}/sessions/{sid}/events", {"json": {"kind": "BAD"}}, 400, "invalid_event"),
        (
            "POST",
            f"{API}/sessions/{sid}/events",
            {"json": {"kind": "message", "role": "user"}, "headers": {"If-Match": "x"}},
            400,
            "invalid_event_id",
        ),
        ("POST", f"{API}/sessions/nope/events", {"json": {"kind": "message"}}, 404, "session_not_found"),
        ("POST", f"{API}/sessions/{sid}/batch", {"json": {"events": []}}, 400, "invalid_body"),
        ("POST", f"{API}/sessions/{sid}/checkout", {"json": {}}, 400, "invalid_body"),
        ("POST", f"{API}/sessions/{sid}/compact", {"json": {"keep_tokens": -1}}, 400, "invalid_body"),
        ("POST", f"{API}/sessions/{sid}/compact", {"json": {"keep_tokens": True}}, 400, "invalid_body"),
        ("POST", f"{API}/sessions", {"json": {"session_id": sid}}, 409, "session_exists"),
        ("POST", f"{API}/sessions", {"json": {"session_id": "../x"}}, 400, "invalid_session_id"),
        ("POST", f"{API}/sessions/{sid}/live", {"json": {"items": [1]}}, 400, "invalid_body"),
        ("POST", f"{API}/sessions/nope/live", {"json": {"items": []}}, 404, "session_not_found"),
        (
            "GET",
            f"{API}/sessions/{sid}/stream",
            {"headers": {"Last-Event-ID": "zz"}},
            400,
            "invalid_event_id",
        ),
        ("GET", f"{API}/sessions/nope/stream", {}, 404, "session_not_found"),
    ]
    for method, url, kwargs, status, code in cases:
        response = client.request(method, url, **kwargs)
        assert (response.status_code, error_code(response)) == (status, code), (method, url)
        assert response.headers["content-type"] == "application/json"


def test_body_limit(store: Store) -> None:
    ids = build_demo(store)
    c = Client(create_app(store, max_body=2048))
    try:
        url = f"{API}/sessions/{ids['session']}/events"
        big = {"kind": "message", "role": "user", "record": {"content": "x" * 5000}}
        response = c.post(url, json=big)
        assert response.status_code == 413 and error_code(response) == "body_too_large"

        async def chunks() -> Any:  # no Content-Length: counted while it streams
            for _ in range(10):
                yield b" " * 1000

        streamed = c.post(url, content=chunks(), headers={"content-type": "application/json"})
        assert streamed.status_code == 413 and error_code(streamed) == "body_too_large"
        with store.open(ids["session"], readonly=True) as s:
            assert s.head == ids["head"]
    finally:
        c.close()


def test_locked_session_is_423(tmp_path: Any) -> None:
    """Another process holds the writer's lease: writes get 423, reads work."""
    store = Store(tmp_path / "home")
    with store.create(name="held") as s:
        s.append("message", {"content": "hi"}, role="user")
        sid = s.id
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from agentlog import Store
            with Store({str(tmp_path / "home")!r}).open({sid!r}):
                print("holding", flush=True)
                sys.stdin.read()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        c = Client(create_app(store))
        try:
            response = c.post(
                f"{API}/sessions/{sid}/events",
                json={"kind": "message", "role": "user", "record": {"content": "x"}},
            )
            assert response.status_code == 423 and error_code(response) == "session_locked"
            assert c.get(f"{API}/sessions/{sid}/path").status_code == 200
        finally:
            c.close()
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0


def test_openapi_matches_routes(client: Client) -> None:
    served = client.get(f"{API}/openapi.json").json()
    assert served == openapi_document(token=False)
    documented = {(method.upper(), f"{API}{path}") for path, ops in served["paths"].items() for method in ops}
    routed = set()
    for route in client.app.routes:
        path = getattr(route, "path", "")
        if path.startswith(API) and path != f"{API}/openapi.json":
            routed |= {(m, path) for m in route.methods if m != "HEAD"}
    assert documented == routed


# --- search and export (the CLI's, over HTTP) ------------------------------------------


def test_search_finds_text_on_every_branch(client: Client, store: Store) -> None:
    with store.create(session_id="found") as s:
        first = s.append("message", {"content": "the aardvark plan"}, role="user")
        s.append("message", {"content": "an abandoned wombat idea"}, role="assistant")
        s.select(first.id)
        s.append("message", {"content": "the kept branch"}, role="assistant")
    hits = client.get(f"{API}/search", params={"q": "wombat"}).json()["hits"]
    assert [(h["session_id"], h["kind"], h["role"]) for h in hits] == [("found", "message", "assistant")]
    assert client.get(f"{API}/search", params={"q": "aardvark", "role": "assistant"}).json()["hits"] == []
    assert error_code(client.get(f"{API}/search")) == "bad_parameter"
    assert error_code(client.get(f"{API}/search", params={"q": "  "})) == "bad_parameter"


def test_export_in_every_format(client: Client, store: Store) -> None:
    ids = build_demo(store)
    sid = ids["session"]
    md = client.get(f"{API}/sessions/{sid}/export", params={"format": "md"})
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    html = client.get(f"{API}/sessions/{sid}/export", params={"format": "html"})
    assert html.text.lstrip().lower().startswith("<!doctype html") and "http://" not in html.text
    bundle = client.get(f"{API}/sessions/{sid}/export", params={"format": "bundle"})
    lines = [line for line in bundle.text.splitlines() if line]
    assert len(lines) >= 3 and "agentlog_bundle" in lines[0]
    assert error_code(client.get(f"{API}/sessions/{sid}/export", params={"format": "pdf"})) == "bad_parameter"
    assert client.get(f"{API}/sessions/nope/export").status_code == 404

"""Regressions of the issue-12 audit (docs/server.md): promises of the
server that did not hold when tried with real clients."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import pytest

from browser_support import chromium, watched_page
from server_support import SSE, build_demo, call, live_server

httpx = pytest.importorskip("httpx")

from agentlog import Store  # noqa: E402
from agentlog.server import create_app  # noqa: E402
from agentlog.server.feed import Item, Subscriber  # noqa: E402

API = "/api/v1"
pytestmark = pytest.mark.timeout(60)


# --- a large commit dropped every client, however fast ------------------------------


def test_a_commit_larger_than_the_queue_does_not_drop_a_client_that_keeps_up() -> None:
    """One batch of 25 events to a client whose queue holds 10 and which has
    nothing unsent: it gets all 25, and no ``dropped``."""
    store = Store.memory()
    with store.create(name="burst") as s:
        sid = s.id
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sse = SSE(client, f"{API}/sessions/{sid}/stream?queue=10")
        assert (sse.next() or {})["event"] == "ready"
        response = client.post(
            f"{API}/sessions/{sid}/batch",
            json={"events": [{"kind": "message", "role": "user", "record": {"content": f"b{i}"}} for i in range(25)]},
        )
        assert response.status_code == 201
        written = [e["id"] for e in response.json()["events"]]
        got = sse.until(lambda m: m["event"] == "dropped" or m.get("id") == written[-1])
        sse.close()
    assert [m["event"] for m in got if m["event"] != "settled"] == []
    assert [m["id"] for m in got] == written


def test_a_subscriber_behind_by_its_queue_is_still_dropped() -> None:
    """The bound still holds: a burst is queued whole only while the client
    has fewer than ``maxsize`` items unsent."""

    async def main() -> None:
        sub = Subscriber(maxsize=4)
        sub.offer_many([Item("settled", f"{i:08d}", {}) for i in range(6)])  # one commit: queued whole
        sub.offer_many([Item("settled", "00000099", {})])  # 6 unsent >= 4: too slow
        got = await sub.get_many(100)
        assert [g.id for g in got] == [f"{i:08d}" for i in range(6)]
        dropped = await sub.get_many(100)
        assert [g.name for g in dropped] == ["dropped"]
        assert await sub.get() is None

    asyncio.run(main())


# --- 405 without Allow -----------------------------------------------------------------


def test_method_not_allowed_names_the_allowed_methods() -> None:
    app = create_app(Store.memory())
    response = call(app, "DELETE", f"{API}/sessions/abc")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert "GET" in response.headers["allow"]


# --- a token outside ASCII --------------------------------------------------------------

ODD_TOKEN = 'tö€ken; "quoted" %41'


def test_a_non_ascii_token_works_by_cookie_and_by_bearer() -> None:
    """``/?token=`` answered 500 (Set-Cookie cannot carry the token), and a
    bearer header sent as UTF-8 (curl) never matched."""
    store = Store.memory()
    build_demo(store)
    app = create_app(store, token=ODD_TOKEN)

    async def go() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            entry = await client.get(f"/?token={quote(ODD_TOKEN, safe='')}")
            assert entry.status_code == 303, entry.text
            assert client.cookies.get("agentlog_token")
            by_cookie = await client.get(f"{API}/health")
            assert by_cookie.status_code == 200, by_cookie.text
            client.cookies.clear()
            assert (await client.get(f"{API}/health")).status_code == 401
            raw = b"Bearer " + ODD_TOKEN.encode("utf-8")
            by_bearer = await client.get(f"{API}/health", headers={"Authorization": raw})
            assert by_bearer.status_code == 200, by_bearer.text
            wrong = await client.get(f"{API}/health", headers={"Authorization": raw + b"x"})
            assert wrong.status_code == 401

    asyncio.run(go())


def test_an_ascii_token_set_by_hand_as_the_cookie_still_works() -> None:
    app = create_app(Store.memory(), token="plain-token")
    assert call(app, "GET", f"{API}/health", headers={"Cookie": "agentlog_token=plain-token"}).status_code == 200
    assert call(app, "GET", f"{API}/health", headers={"Cookie": "agentlog_token=plain-tokeN"}).status_code == 401


# --- If-Match: * --------------------------------------------------------------------------


def test_if_match_star_matches_any_head_and_needs_the_session() -> None:
    store = Store.memory()
    ids = build_demo(store)
    app = create_app(store)
    body = {"kind": "message", "role": "user", "record": {"content": "hi"}}
    response = call(app, "POST", f"{API}/sessions/{ids['session']}/events", json=body, headers={"If-Match": "*"})
    assert response.status_code == 201, response.text
    missing = call(app, "POST", f"{API}/sessions/nope/events", json=body, headers={"If-Match": "*"})
    assert missing.status_code == 404


# --- the OpenAPI document said what the server refuses was valid -------------------------


def test_openapi_says_which_paths_must_be_absolute_and_that_401_exists() -> None:
    document = call(
        create_app(Store.memory(), token="t"), "GET", f"{API}/openapi.json", headers={"Authorization": "Bearer t"}
    ).json()
    create = document["paths"]["/sessions"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert create["properties"]["working_dir"]["pattern"] == "^/"
    cwd = next(p for p in document["paths"]["/search"]["get"]["parameters"] if p["name"] == "cwd")
    assert cwd["schema"]["pattern"] == "^/"
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert "401" in operation["responses"], (method, path)


def test_openapi_lists_every_status_docs_server_md_names() -> None:
    plain = call(create_app(Store.memory()), "GET", f"{API}/openapi.json").json()
    for path, operations in plain["paths"].items():
        for method, operation in operations.items():
            statuses = set(operation["responses"])
            assert "421" in statuses, (method, path)  # the DNS-rebinding guard without a token
            if path != "/health":
                assert {"500", "503"} <= statuses, (method, path)
    compact = plain["paths"]["/sessions/{session_id}/compact"]["post"]["responses"]
    assert {"422", "502"} <= set(compact)


# --- the viewer on a mistyped address -----------------------------------------------------


def test_viewer_survives_a_malformed_address_and_does_not_show_a_stale_live_state() -> None:
    """``#/s/%E0`` threw URIError out of the router; a session that cannot be
    opened kept the "on" of the session shown before."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

    store = Store.memory(blob_threshold=4096)
    ids = build_demo(store)
    with (
        live_server(store) as url,
        chromium(sync_api) as browser,
        watched_page(browser, width=1280, height=800) as (page, errors),
    ):
        page.goto(f"{url}/#/s/{ids['session']}")
        page.wait_for_selector("#live-state.on")
        page.goto(f"{url}/#/s/no-such-session")
        page.wait_for_selector("#status:has-text('session_not_found')")
        # "off" once the failed open has been handled (it stayed "on" before)
        page.wait_for_function("document.querySelector('#live-state').textContent === 'off'", timeout=5000)
        page.goto(f"{url}/#/s/%E0%A4%A")
        page.wait_for_selector("#status:has-text('invalid_session_id')")
        # The refused opens are logged as failed loads (expected); nothing else.
        assert [e for e in errors if "Failed to load resource" not in e] == []

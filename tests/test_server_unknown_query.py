"""A query parameter a route does not take is a 400 naming it, as an unknown
body field is: ``/context?at=X`` used to answer HEAD's context in silence."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from server_support import build_demo

httpx = pytest.importorskip("httpx")

from agentlog import Store  # noqa: E402
from agentlog.server import create_app  # noqa: E402
from agentlog.server.openapi import openapi_document  # noqa: E402

API = "/api/v1"


@pytest.fixture
def client(tmp_path: Any) -> Any:
    store = Store(tmp_path / "home")
    ids = build_demo(store)
    transport = httpx.ASGITransport(app=create_app(store))

    async def get(url: str) -> httpx.Response:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return await c.get(url)

    yield ids, lambda url: asyncio.run(get(url))
    store.close()


@pytest.mark.parametrize(
    ("route", "query", "named"),
    [
        ("context", "at={first}", "at"),
        ("path", "at_={first}", "at_"),
        ("entries", "resolve=true", "resolve"),
        ("", "verbose=1", "verbose"),
    ],
)
def test_an_unknown_query_parameter_is_refused_and_named(client: Any, route: str, query: str, named: str) -> None:
    ids, get = client
    url = f"{API}/sessions/{ids['session']}" + (f"/{route}" if route else "") + "?" + query.format(**ids)
    response = get(url)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter" and repr(named) in error["message"]


def test_every_documented_parameter_is_taken(client: Any) -> None:
    ids, get = client
    assert get(f"{API}/sessions/{ids['session']}/path?at={ids['first']}&resolve=true").status_code == 200
    assert get(f"{API}/sessions/{ids['session']}/context?resolve=1").status_code == 200
    assert get(f"{API}/sessions?limit=5&offset=0&archived=true&q=demo").status_code == 200
    assert get(f"{API}/search?q=parser&limit=3").status_code == 200
    assert get(f"{API}/sessions/{ids['session']}/export?format=md&all_branches=true").status_code == 200
    documented = openapi_document(token=False)["paths"]
    assert "at" not in {p["name"] for p in documented["/sessions/{session_id}/context"]["get"]["parameters"]}

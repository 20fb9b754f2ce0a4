"""Regressions of the library-and-server QA pass (/tmp/qa_lib/REPORT.md),
server side: deep bodies, unknown fields, charsets, relative directories."""

from __future__ import annotations

from typing import Any

import pytest

from server_support import call

httpx = pytest.importorskip("httpx")

from agentlog import Store  # noqa: E402
from agentlog.server import create_app  # noqa: E402
from agentlog.server.encode import MAX_DEPTH  # noqa: E402

API = "/api/v1"
JSON = {"content-type": "application/json"}


@pytest.fixture
def served() -> tuple[Any, str]:
    store = Store.memory()
    with store.create() as s:
        sid = s.id
    return create_app(store), sid


def nested(levels: int) -> str:
    """``levels`` arrays, one inside the other."""
    return "[" * levels + "]" * levels


def bodies(sid: str, levels: int) -> dict[str, str]:
    """A body per write route, nested ``levels`` deep in all."""
    s = f"{API}/sessions/{sid}"
    return {
        f"{API}/sessions": '{"name":' + nested(levels - 1) + "}",
        f"{s}/events": '{"kind":"message","record":' + nested(levels - 1) + "}",
        f"{s}/batch": '{"events":[{"kind":"message","record":' + nested(levels - 3) + "}]}",
        f"{s}/live": '{"items":[' + '{"a":' * (levels - 2) + "1" + "}" * (levels - 2) + "]}",
        f"{s}/checkout": '{"event_id":' + nested(levels - 1) + "}",
        f"{s}/fork": '{"at":' + nested(levels - 1) + "}",
        f"{s}/compact": '{"keep_tokens":' + nested(levels - 1) + "}",
    }


# --- 1. deep bodies were a 500 (RecursionError) -------------------------------------------


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 400, 500, 600, 1000, 1020, 1050, 1100])
def test_a_deeply_nested_body_is_invalid_json_on_every_write_route(served: tuple[Any, str], levels: int) -> None:
    app, sid = served
    for url, body in bodies(sid, levels).items():
        response = call(app, "POST", url, content=body, headers=JSON)
        assert response.status_code == 400, (url, response.text)
        assert response.json()["error"]["code"] == "invalid_json", (url, response.text)


def test_a_body_at_the_depth_limit_is_stored_and_read_back(served: tuple[Any, str]) -> None:
    app, sid = served
    record = nested(MAX_DEPTH - 1)
    response = call(
        app, "POST", f"{API}/sessions/{sid}/events", content='{"kind":"x","record":' + record + "}", headers=JSON
    )
    assert response.status_code == 201, response.text
    # The deepest answer that carries it: {"events": [{"record": ...}]}.
    path = call(app, "GET", f"{API}/sessions/{sid}/path")
    assert path.status_code == 200, path.text
    live = '{"items":[' + '{"a":' * (MAX_DEPTH - 2) + "1" + "}" * (MAX_DEPTH - 2) + "]}"
    assert call(app, "POST", f"{API}/sessions/{sid}/live", content=live, headers=JSON).status_code == 202


# --- 7. a relative working_dir on the list ------------------------------------------------


@pytest.mark.parametrize("value", ["relative", "./x", "x/y"])
def test_a_relative_working_dir_on_the_list_is_a_400(served: tuple[Any, str], value: str) -> None:
    app, _ = served
    response = call(app, "GET", f"{API}/sessions", params={"working_dir": value})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_parameter"
    assert "absolute" in response.json()["error"]["message"]
    assert call(app, "GET", f"{API}/sessions", params={"working_dir": "/abs"}).status_code == 200


# --- 15. unknown fields and charsets ------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "body", "named"),
    [
        ("", {"name": "n", "bogus": 5}, "bogus"),
        ("", {"working_directory": "/tmp"}, "working_directory"),
        ("/events", {"kind": "message", "extra": 1}, "extra"),
        ("/batch", {"events": [{"kind": "message"}], "atomic": True}, "atomic"),
        ("/batch", {"events": [{"kind": "message"}, {"kind": "message", "rol": "user"}]}, "rol"),
        ("/checkout", {"event_id": "00000000-0000-0000-0000-000000000000", "force": True}, "force"),
        ("/fork", {"name": "f", "session_id": "x"}, "session_id"),
        ("/compact", {"keep_tokens": 5, "keep": 1}, "keep"),
        ("/live", {"items": [], "x": 1}, "x"),
    ],
)
def test_an_unknown_body_field_is_a_400_naming_it(served: tuple[Any, str], route: str, body: Any, named: str) -> None:
    app, sid = served
    url = f"{API}/sessions" + (f"/{sid}{route}" if route else "")
    response = call(app, "POST", url, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_body"
    assert repr(named) in error["message"]
    entries = call(app, "GET", f"{API}/sessions/{sid}/entries").json()["entries"]
    assert entries == []  # nothing written


def test_live_items_stay_free_form(served: tuple[Any, str]) -> None:
    app, sid = served
    response = call(app, "POST", f"{API}/sessions/{sid}/live", json={"items": [{"anything": 1, "goes": [2]}]})
    assert response.status_code == 202, response.text


@pytest.mark.parametrize("charset", ["latin1", "ISO-8859-1", "utf-16", '"windows-1252"'])
def test_a_body_in_another_charset_is_a_415(served: tuple[Any, str], charset: str) -> None:
    app, sid = served
    headers = {"content-type": f"application/json; charset={charset}"}
    body = '{"kind":"message","record":{"content":"caf\u00e9"}}'.encode("latin-1")
    response = call(app, "POST", f"{API}/sessions/{sid}/events", content=body, headers=headers)
    assert response.status_code == 415, response.text
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert call(app, "GET", f"{API}/sessions/{sid}/entries").json()["entries"] == []


@pytest.mark.parametrize(
    "value", ["application/json; charset=utf-8", "application/json;charset=UTF8", "application/json"]
)
def test_utf8_bodies_are_taken(served: tuple[Any, str], value: str) -> None:
    app, sid = served
    body = '{"kind":"message","record":{"content":"caf\u00e9"}}'.encode()
    response = call(app, "POST", f"{API}/sessions/{sid}/events", content=body, headers={"content-type": value})
    assert response.status_code == 201, response.text
    assert response.json()["event"]["record"]["content"] == "caf\u00e9"

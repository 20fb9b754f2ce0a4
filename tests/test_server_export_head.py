"""A HEAD of an export gets what a GET's response says of it (status, type,
file name) without the export being made: it was made whole and thrown
away, so a link checker's HEAD of a large session cost a download. Real
uvicorn on loopback, real httpx."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("starlette", reason="the 'server' extra is not installed")
httpx = pytest.importorskip("httpx")

import agentlog.server.routes_find as routes_find  # noqa: E402
from agentlog import Store  # noqa: E402
from server_support import live_server  # noqa: E402

API = "/api/v1"


def test_head_of_an_export_checks_and_answers_without_making_it(tmp_path: Any, monkeypatch: Any) -> None:
    store = Store(tmp_path / "home")
    with store.create(session_id="s") as s:
        for i in range(20):
            s.append("message", {"content": f"line {i}"}, role="user")
    made: list[str] = []
    real = routes_find.export_session
    monkeypatch.setattr(routes_find, "export_session", lambda *a, **k: made.append(a[1]) or real(*a, **k))
    with live_server(store) as base:
        for fmt, kind in (("md", "text/markdown"), ("html", "text/html"), ("bundle", "application/x-ndjson")):
            head = httpx.head(f"{base}{API}/sessions/s/export", params={"format": fmt}, timeout=10)
            assert head.status_code == 200 and head.content == b""
            assert head.headers["content-type"].startswith(kind)
            get = httpx.get(f"{base}{API}/sessions/s/export", params={"format": fmt}, timeout=10)
            assert get.headers["content-disposition"] == head.headers["content-disposition"]
            assert int(get.headers["content-length"]) == len(get.content) > 0
            assert "content-length" not in head.headers  # only making the export would tell it
        assert made == ["md", "html", "bundle"]  # by the GETs alone
        # the same checks as a GET
        assert httpx.head(f"{base}{API}/sessions/nope/export", timeout=10).status_code == 404
        assert httpx.head(f"{base}{API}/sessions/s/export", params={"format": "pdf"}, timeout=10).status_code == 400
        # and the server goes on serving on the same connection after a HEAD
        with httpx.Client(timeout=10) as client:
            assert client.head(f"{base}{API}/sessions/s/export").status_code == 200
            assert client.get(f"{base}{API}/sessions/s/export").text.startswith("#")
    store.close()

"""Regressions of the pass that ran every documented example: a 405 that
named too few methods, ``show`` breaking a record's JSON when piped, a
rebuild of the search index on a read-only home that claimed success, and
counts said as "1 events"."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentlog import SessionNotFound, Store
from agentlog.search import SearchError
from cli_support import error, ok, run


def _session(home: Path, content: str) -> tuple[str, str]:
    store = Store(home)
    with store.create(session_id="s") as session:
        event = session.append("message", {"content": content}, role="user")
    store.close()
    return "s", event.id


def test_show_piped_keeps_a_long_record_valid_json(tmp_path: Path) -> None:
    long = "word " * 120  # wider than a pipe's 240 columns
    sid, eid = _session(tmp_path / "home", long)
    shown = ok(tmp_path / "home", "show", sid, eid)
    record = shown.split("\nrecord\n", 1)[1]
    assert json.loads(record) == {"content": long}


def test_reindex_on_a_home_it_cannot_write_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    _session(home, "findable words")
    real = os.access
    home_text = str(home)

    def read_only(path: Any, mode: int, **kwargs: Any) -> bool:
        if mode & os.W_OK and os.fspath(path).startswith(home_text):
            return False  # what a read-only mount answers (root passes permission bits)
        return real(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", read_only)
    line = error(run(home, "search", "--reindex"))
    assert "cannot rebuild the search index" in line and "cannot be written" in line
    assert not (home / "search").exists()
    # A search still works there: it builds an index in memory for itself.
    monkeypatch.setattr(os, "access", real)
    assert "findable" in ok(home, "search", "findable")


def test_a_405_names_every_method_of_the_path() -> None:
    pytest.importorskip("starlette", reason="the 'server' extra is not installed")
    from agentlog.server import create_app
    from server_support import call

    app = create_app(Store.memory())
    response = call(app, "DELETE", "/api/v1/sessions")
    assert response.status_code == 405
    assert {m.strip() for m in response.headers["allow"].split(",")} == {"GET", "HEAD", "POST"}
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert call(app, "GET", "/api/v1/sessions").status_code == 200
    assert call(app, "POST", "/api/v1/sessions", json={}).status_code == 201


def test_counts_are_said_in_the_singular_for_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sid, _ = _session(home, "hello")
    assert "1 session checked: 0 errors, 0 warnings" in ok(home, "fsck")
    assert "(1 event)" in ok(home, "tree", sid)
    assert "1 session, search index" in ok(home, "du")


def test_since_takes_an_age_in_the_library_and_on_the_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _session(home, "recent words")
    store = Store(home)
    assert [h.session_id for h in store.search("recent", since="7d")] == ["s"]
    assert store.search("recent", since="2099-01-01") == []
    with pytest.raises(SearchError, match="not an age"):
        store.search("recent", since="soon")
    pytest.importorskip("starlette", reason="the 'server' extra is not installed")
    from agentlog.server import create_app
    from server_support import call

    app = create_app(store)
    found = call(app, "GET", "/api/v1/search", params={"q": "recent", "since": "12h"})
    assert found.status_code == 200 and [h["session_id"] for h in found.json()["hits"]] == ["s"]
    bad = call(app, "GET", "/api/v1/search", params={"q": "recent", "since": "soon"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_parameter"
    store.close()


def test_the_search_route_says_when_its_session_is_not_one(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="the 'server' extra is not installed")
    from agentlog.server import create_app
    from server_support import call

    home = tmp_path / "home"
    _session(home, "some words")
    store = Store(home)
    app = create_app(store)
    hit = call(app, "GET", "/api/v1/search", params={"q": "words", "session": "s"})
    assert [h["session_id"] for h in hit.json()["hits"]] == ["s"]
    missing = call(app, "GET", "/api/v1/search", params={"q": "words", "session": "nosuch"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "session_not_found"
    store.close()


def test_the_library_search_says_when_its_session_is_not_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _session(home, "some words")
    store = Store(home)
    with pytest.raises(SessionNotFound):
        store.search("words", session="nosuch")
    store.close()

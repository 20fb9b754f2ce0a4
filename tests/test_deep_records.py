"""A record as deep as the store takes can be read back by every reader.

orjson writes at most 254 levels and the store takes any record orjson
writes; the documents that carry a record (``--json``, API answers, SSE
messages, bundle lines) wrap it deeper. They used to fail: the CLI with an
"internal error", the server with a 500, a bundle export not at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentlog import Store
from agentlog._json import dumps
from agentlog.errors import AgentlogError
from cli_support import ok, ok_json


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


def _deepest_record(session: Any) -> tuple[Any, str]:
    """Append the deepest record the store takes; return it and its id."""
    for levels in range(300, 200, -1):
        record = _nested(levels)
        try:
            event = session.append("custom", record)
        except (AgentlogError, ValueError, TypeError):
            continue
        return record, event.id
    raise AssertionError("no record between 200 and 300 levels was taken")


@pytest.fixture
def deep(tmp_path: Path) -> tuple[Path, str, Any, str]:
    home = tmp_path / "home"
    store = Store(home)
    with store.create(session_id="deep") as session:
        session.append("message", {"content": "before"}, role="user")
        record, event_id = _deepest_record(session)
    store.close()
    return home, "deep", record, event_id


def test_dumps_matches_orjson_where_orjson_can_write() -> None:
    document = {"a": [1, 2.5, None, True, "é\u2028"], "b": {"c": []}}
    assert dumps(document) == orjson.dumps(document)
    assert dumps(document, indent=True) == orjson.dumps(document, option=orjson.OPT_INDENT_2)


def test_dumps_writes_what_orjson_refuses_as_too_deep() -> None:
    document = {"events": [{"record": _nested(260)}]}
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(document)
    assert json.loads(dumps(document)) == document
    assert json.loads(dumps(document, indent=True)) == document


def test_dumps_still_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(TypeError):
        dumps({"a": object()})


def test_every_cli_json_view_carries_the_deepest_record(deep: tuple[Path, str, Any, str]) -> None:
    home, sid, record, event_id = deep
    shown = ok_json(home, "show", sid, event_id)
    assert shown["record"] == record
    assert [e["record"] for e in ok_json(home, "log", sid)][-1] == record
    assert [e["record"] for e in ok_json(home, "context", sid)][-1] == record
    assert ok_json(home, "tree", sid)
    assert ok_json(home, "search", "leaf")


def test_a_bundle_carries_the_deepest_record_there_and_back(deep: tuple[Path, str, Any, str], tmp_path: Path) -> None:
    home, sid, record, event_id = deep
    bundle = tmp_path / "deep.tar"
    ok(home, "export", sid, "--format", "bundle", "-o", str(bundle))
    assert bundle.stat().st_size > 0
    other = tmp_path / "other"
    ok(other, "import", "--from", "bundle", str(bundle))
    store = Store(other)
    with store.open(sid) as session:
        assert session.event(event_id).record == record
    store.close()


def test_the_server_answers_with_the_deepest_record(deep: tuple[Path, str, Any, str]) -> None:
    pytest.importorskip("starlette", reason="the 'server' extra is not installed")
    from agentlog.server import create_app
    from agentlog.server.feed import Item
    from server_support import call

    home, sid, record, event_id = deep
    store = Store(home)
    app = create_app(store)
    path = call(app, "GET", f"/api/v1/sessions/{sid}/path")
    assert path.status_code == 200
    assert path.json()["events"][-1]["record"] == record
    event = call(app, "GET", f"/api/v1/sessions/{sid}/events/{event_id}")
    assert event.status_code == 200
    assert event.json()["record"] == record
    # An SSE message that carries it (what the live feed sends).
    wire = Item("event", event_id, {"event": {"record": record}}).wire()
    data = wire.split(b"data: ", 1)[1].rstrip(b"\r\n")
    assert json.loads(data)["event"]["record"] == record
    store.close()

"""Follow-ups of a QA pass over ``agentlog serve`` with real clients: a
watched session deleted and made again at once, a replay past a damaged
record, the reserved tombstone kind, imported sessions' directories, and
a stream cut for a client that stopped reading."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

import httpx  # noqa: E402

from agentlog import NIL_ID, CorruptionError, RecoveryWarning, Store  # noqa: E402
from agentlog.server import create_app, routes_stream  # noqa: E402
from agentlog.server.openapi import openapi_document  # noqa: E402
from server_support import SSE, call, live_server  # noqa: E402

API = "/api/v1"


def test_a_watched_session_deleted_and_made_again_at_once_ends_its_stream(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(session_id="again") as s:
        s.append("message", {"content": "first life"}, role="user")
    with live_server(store) as base, httpx.Client(base_url=base) as client:
        sse = SSE(client, f"{API}/sessions/again/stream")
        try:
            assert sse.next()["event"] == "ready"  # type: ignore[index]
            # Deleted and made again under the same id before the feed looks:
            # its reader would go on reading the old log, and the file watch
            # died with the old directory.
            store.delete("again")
            with store.create(session_id="again") as s:
                s.append("message", {"content": "second life"}, role="user")
            got = sse.until(lambda m: m["event"] == "problem", limit=50)
            assert got[-1]["event"] == "problem" and "was deleted" in got[-1]["data"]["message"]
            assert sse.next() is None  # the stream ended
        finally:
            sse.close()
        # A new stream follows the new session.
        sse = SSE(client, f"{API}/sessions/again/stream?after={NIL_ID}")
        try:
            got = sse.until(lambda m: m["event"] == "settled", limit=10)
            assert got[-1]["data"]["record"] == {"content": "second life"}
        finally:
            sse.close()


def _damage_record(store: Store, sid: str, text: bytes) -> None:
    chunk = Path(store.home) / "sessions" / sid / "chunks" / "000000.jsonl"
    data = chunk.read_bytes()
    at = data.index(text)
    chunk.write_bytes(data[:at] + text.upper() + data[at + len(text) :])


def _six_notes_the_third_damaged(tmp_path: Path) -> tuple[Store, list[str]]:
    store = Store(tmp_path / "home")
    with store.create(session_id="d") as s:
        ids = [s.append("message", {"content": f"note {n}"}, role="user").id for n in range(6)]
    _damage_record(store, "d", b"note 2")
    return store, ids


def test_a_reader_that_met_a_damaged_record_still_reads_every_other_event(tmp_path: Path) -> None:
    store, ids = _six_notes_the_third_damaged(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)  # "index rebuilt from the chunks"
        with store.open("d", readonly=True) as reader:
            with pytest.raises(CorruptionError):
                reader.event(ids[2])
            assert [reader.event(i).record["content"] for i in ids[3:]] == ["note 3", "note 4", "note 5"]
            assert reader.event(ids[1]).record == {"content": "note 1"}


def test_a_replay_past_a_damaged_record_names_it_alone_and_sends_the_rest(tmp_path: Path) -> None:
    store, ids = _six_notes_the_third_damaged(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        with live_server(store) as base, httpx.Client(base_url=base) as client:
            sse = SSE(client, f"{API}/sessions/d/stream?after={NIL_ID}")
            try:
                # ready first (with how many are replayed), then the replay
                got = sse.until(lambda m: m["event"] == "settled" and m["data"]["id"] == ids[-1], limit=50)
            finally:
                sse.close()
    settled = [m["data"]["id"] for m in got if m["event"] == "settled"]
    problems = [m["data"]["message"] for m in got if m["event"] == "problem"]
    assert settled == ids[:2] + ids[3:]
    assert len(problems) == 1 and ids[2] in problems[0] and ids[3] not in problems[0]


def test_the_api_refuses_the_reserved_tombstone_kind(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(session_id="t"):
        pass
    app = create_app(store)
    record = {"quarantined": {"chunk": "chunks/000001.log", "offset": 123, "reason": "crc mismatch"}}
    one = call(app, "POST", f"{API}/sessions/t/events", json={"kind": "tombstone", "record": record})
    assert one.status_code == 400 and one.json()["error"]["code"] == "invalid_event"
    assert "reserved" in one.json()["error"]["message"]
    many = call(
        app,
        "POST",
        f"{API}/sessions/t/batch",
        json={"events": [{"kind": "message", "record": {}}, {"kind": "tombstone", "record": record}]},
    )
    assert many.status_code == 400 and "events[1]" in many.json()["error"]["message"]
    with store.open("t", readonly=True) as s:
        assert s.entries() == []  # nothing of either request was written


def test_an_imported_session_shows_and_filters_by_the_directory_it_was_recorded_in(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(session_id="imp", meta={"source_cwd": "/home/user/project"}):
        pass
    with store.create(session_id="own", working_dir="/home/user/other"):
        pass
    app = create_app(store)

    def listed(**query: Any) -> list[tuple[str, Any, Any]]:
        rows = call(app, "GET", f"{API}/sessions", params=query).json()["sessions"]
        return sorted((r["id"], r["working_dir"], r["source_cwd"]) for r in rows)

    assert listed() == [("imp", None, "/home/user/project"), ("own", "/home/user/other", None)]
    assert listed(working_dir="/home/user/project") == [("imp", None, "/home/user/project")]
    assert listed(q="user/project") == [("imp", None, "/home/user/project")]


def test_a_stream_cut_for_a_client_that_stopped_reading_is_not_logged_as_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    routes_stream.quiet_cut_streams()
    unfinished = "ASGI callable returned without completing response."
    logger = logging.getLogger("uvicorn.error")
    with caplog.at_level(logging.ERROR, logger="uvicorn.error"):
        routes_stream._cut += 1  # what _Stream does when the send times out
        logger.error(unfinished)  # uvicorn's line right after: the cut stream's
        logger.error(unfinished)  # another response left unfinished: a real error
    assert [r.getMessage() for r in caplog.records] == [unfinished]
    assert routes_stream._cut == 0


def test_the_openapi_document_gives_search_its_404() -> None:
    responses = openapi_document(token=False)["paths"]["/search"]["get"]["responses"]
    assert {"200", "400", "404"} <= set(responses)

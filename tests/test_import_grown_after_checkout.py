"""Importing the new lines of a grown file whose lines carry no parent
(Codex, pi v1) chains them from the event of the last line imported, as
the file orders them, wherever HEAD was moved in between: a checkout of an
earlier event, or events the user appended to the imported session, are no
part of the source's conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlog import Store
from importers_support import do_import, load

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores

CODEX_ID = "019c0000-0000-7000-8000-0000000000aa"
PI_ID = "dddd1111-2222-3333-4444-555566667777"


def _codex_lines(start: int, stop: int) -> list[dict[str, Any]]:
    """A session_meta line (at 0), then user and assistant messages."""
    out: list[dict[str, Any]] = []
    for i in range(start, stop):
        ts = f"2026-02-23T20:00:{i:02d}.000Z"
        if i == 0:
            payload = {"id": CODEX_ID, "cwd": "/w", "cli_version": "0.104.0"}
            out.append({"timestamp": ts, "type": "session_meta", "payload": payload})
            continue
        role, part = ("user", "input_text") if i % 2 else ("assistant", "output_text")
        payload = {"type": "message", "role": role, "content": [{"type": part, "text": f"line {i}"}]}
        out.append({"timestamp": ts, "type": "response_item", "payload": payload})
    return out


def _pi_v1_lines(start: int, stop: int) -> list[dict[str, Any]]:
    """A v1 header (at 0, no version), then messages with no ids."""
    out: list[dict[str, Any]] = []
    for i in range(start, stop):
        ts = f"2026-01-01T10:00:{i:02d}.000Z"
        if i == 0:
            out.append({"type": "session", "id": PI_ID, "timestamp": ts, "cwd": "/p"})
            continue
        role = "user" if i % 2 else "assistant"
        message = {"role": role, "content": [{"type": "text", "text": f"line {i}"}], "timestamp": 1767261600000 + i}
        out.append({"type": "message", "timestamp": ts, "message": message})
    return out


FORMATS = {
    "codex": (_codex_lines, f"codex-{CODEX_ID}", "rollout-2026-02-23T20-00-00-" + CODEX_ID + ".jsonl"),
    "pi": (_pi_v1_lines, f"pi-{PI_ID}", f"2026-01-01T10-00-00-000Z_{PI_ID}.jsonl"),
}


def _write(path: Path, objs: list[dict[str, Any]], mode: str) -> None:
    with open(path, mode, encoding="utf-8") as f:
        f.writelines(json.dumps(o) + "\n" for o in objs)


def _text_of(record: Any) -> str | None:
    content = record.get("content") if isinstance(record, dict) else None
    if isinstance(content, list) and content and isinstance(content[0], dict):
        return content[0].get("text")
    return content if isinstance(content, str) else None


def _by_text(store: Store, session_id: str) -> dict[str, Any]:
    return {t: e for e in load(store, session_id).events if (t := _text_of(e.record)) is not None}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("moved", ["checkout", "appended"])
def test_new_lines_chain_from_the_last_imported_line(store: Store, tmp_path: Path, fmt: str, moved: str) -> None:
    """Was a bug: the next import started its chain at HEAD, so after a
    checkout of line 1 the source's line 5 became a reply to line 1 (and
    after an event of the user's own, a reply to that), and the active
    path lost lines 2-4."""
    make, session_id, name = FORMATS[fmt]
    path = tmp_path / name
    _write(path, make(0, 5), "w")
    do_import(store, fmt, path)
    before = _by_text(store, session_id)
    with store.open(session_id) as s:
        if moved == "checkout":
            s.checkout(before["line 1"].id)
        else:
            s.append("message", {"content": "typed in agentlog"}, role="user")
    _write(path, make(5, 7), "a")
    report = do_import(store, fmt, path)
    assert report.sessions[0].events >= 2
    after = _by_text(store, session_id)
    assert after["line 5"].parent_id == before["line 4"].id
    assert after["line 6"].parent_id == after["line 5"].id
    with store.open(session_id) as s:
        assert s.head == after["line 6"].id  # HEAD is the event of the last line
        path_texts = [_text_of(e.record) for e in s.transcript()]
    assert [t for t in path_texts if t] == [f"line {i}" for i in range(1, 7)]

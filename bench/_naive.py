"""The baselines: what a reader does without an index, HEAD file or lazy payloads.

Each is written to be as fast as plain Python allows (orjson, whole-file
reads, no checksum verification), so a ratio below 1 is agentlog's design
winning, not a strawman losing.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

NIL_ID = "00000000-0000-0000-0000-000000000000"

__all__ = ["Counter", "naive_context", "naive_inline_context", "naive_list"]


class Counter:
    def __init__(self) -> None:
        self.files_opened = 0
        self.bytes_read = 0


def _read(path: str, counter: Counter | None) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    if counter is not None:
        counter.files_opened += 1
        counter.bytes_read += len(data)
    return data


def _context_from(events: dict[str, dict[str, Any]], head: str) -> list[dict[str, Any]]:
    """Walk HEAD -> root, stopping at the latest compaction like Session.context()."""
    after: list[dict[str, Any]] = []
    current = head
    while current != NIL_ID:
        rec = events[current]
        if rec["kind"] == "compaction":
            record = rec.get("record") or {}
            keep_from = record.get("first_kept_event_id")
            kept = []
            cur = rec["parent_id"]
            while keep_from and cur != NIL_ID:
                older = events[cur]
                kept.append(older)
                if older["id"] == keep_from:
                    break
                cur = older["parent_id"]
            else:
                kept = []
            kept.reverse()
            after.reverse()
            return [rec, *kept, *after]
        after.append(rec)
        current = rec["parent_id"]
    after.reverse()
    return after


def naive_context(session_dir: str, counter: Counter | None = None) -> list[dict[str, Any]]:
    """Open every chunk, parse every line, rebuild id -> record, walk HEAD -> root.

    HEAD is the last event line or the last ``checkout`` record, which is
    what the log says. Blob payloads are not read (agentlog's context()
    leaves them unloaded too); checksums are not verified."""
    chunks = os.path.join(session_dir, "chunks")
    events: dict[str, dict[str, Any]] = {}
    head = NIL_ID
    loads = orjson.loads
    for name in sorted(os.listdir(chunks)):
        if not name.endswith(".jsonl"):
            continue
        for line in _read(os.path.join(chunks, name), counter).splitlines():
            rec = loads(line)
            if "op" in rec:
                if rec["op"] == "checkout":
                    head = rec["head"]
                continue
            events[rec["id"]] = rec
            head = rec["id"]
    return _context_from(events, head)


def naive_inline_context(path: str, counter: Counter | None = None) -> list[dict[str, Any]]:
    """The anchors' layout: one JSONL with every payload inline; HEAD = last line."""
    events: dict[str, dict[str, Any]] = {}
    head = NIL_ID
    loads = orjson.loads
    for line in _read(path, counter).splitlines():
        rec = loads(line)
        events[rec["id"]] = rec
        head = rec["id"]
    return _context_from(events, head)


def naive_list(home: str, counter: Counter | None = None) -> list[dict[str, Any]]:
    """A listing that parses every file: session.json, then every chunk line
    for the event count and the last event time; most recent first."""
    sessions = os.path.join(home, "sessions")
    rows = []
    loads = orjson.loads
    for sid in os.listdir(sessions):
        if sid.startswith("."):
            continue
        sdir = os.path.join(sessions, sid)
        meta = loads(_read(os.path.join(sdir, "session.json"), counter))
        if meta.get("archived"):
            continue
        count = 0
        updated = meta.get("updated_at") or ""
        chunks = os.path.join(sdir, "chunks")
        for name in sorted(os.listdir(chunks)):
            for line in _read(os.path.join(chunks, name), counter).splitlines():
                rec = loads(line)
                if "op" in rec:
                    continue
                count += 1
                updated = max(updated, rec["timestamp"])
        rows.append(
            {"id": sid, "title": meta.get("title") or meta.get("name"), "updated_at": updated, "event_count": count}
        )
    rows.sort(key=lambda r: (r["updated_at"], r["id"]), reverse=True)
    return rows

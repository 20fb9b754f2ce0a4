"""A cache, beside a session, of what importing into it needs of its events.

Importing new lines into a session needs, for every event already in it,
its source keys, whether it is a side event, its source line, and a few
fields (a tool call's id and name, a Codex turn start). Reading every
event back for that costs about as much as the first import. This cache
keeps those facts in ``import-index.json`` in the session's artifacts
directory (file stores; a memory store has none and reads its events).

It is derived data: each row is used only for the event of the same id,
parent and kind in the session's index; an event it lacks (appended by
another program, or written just before a crash) is read from the log,
and a cache that is missing or damaged is simply rebuilt."""

from __future__ import annotations

import os
from typing import Any

import orjson

from ..session import Session

__all__ = ["load_rows", "save_rows", "slim_record"]

NAME = "import-index.json"
VERSION = 1

#: A row: [event id, parent id, kind, slim record].
Row = list[Any]


def slim_record(kind: str, record: Any) -> dict[str, Any]:
    """The part of an imported record that SessionBuilder._observe reads."""
    if not isinstance(record, dict):
        return {}
    out: dict[str, Any] = {}
    source = record.get("source")
    if isinstance(source, dict):
        keep = ("keys", "side", "file", "line", "turn_start", "copied_from")
        slim = {k: source[k] for k in keep if k in source}
        if isinstance(source.get("merged"), list):
            slim["merged"] = [{"line": m.get("line")} for m in source["merged"] if isinstance(m, dict)]
        if isinstance(source.get("summary_line"), dict):
            slim["summary_line"] = {"line": source["summary_line"].get("line")}
        out["source"] = slim
    if kind == "tool_call":
        out["id"], out["name"] = record.get("id"), record.get("name")
    return out


def _path(session: Session) -> str | None:
    directory = session.artifacts_dir
    return os.path.join(directory, NAME) if directory else None


def load_rows(session: Session) -> dict[str, Row]:
    """Event id -> row; empty when there is no usable cache."""
    path = _path(session)
    if path is None:
        return {}
    try:
        with open(path, "rb") as f:
            doc = orjson.loads(f.read())
        if doc.get("version") != VERSION:
            return {}
        return {row[0]: row for row in doc["rows"] if isinstance(row, list) and len(row) == 4}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # missing or damaged: the events are read instead, and it is written anew


def save_rows(session: Session, rows: list[Row]) -> None:
    """Replace the cache (write beside, then rename: a reader sees the old
    or the new one whole)."""
    path = _path(session)
    if path is None:
        return
    tmp = path + ".tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(orjson.dumps({"version": VERSION, "rows": rows}))
        os.replace(tmp, path)
    except OSError:
        pass  # only a cache: the next import reads the events instead

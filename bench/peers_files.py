"""The seeds' file layouts as peers: a pi-style JSONL session and the loop-store's whole-file JSON.

**pi-style JSONL** (badlogic/pi-mono's session files): a header line, then
one entry a line (``message`` or ``compaction``, each with an id and its
parent's id), appended; resuming parses the whole file. Two durabilities:
``jsonl`` writes the line and leaves it in the page cache (pi's own
``appendFileSync``: survives a process crash, not a power loss),
``jsonl-fsync`` adds an ``fdatasync`` per line. The file stays open
between appends (pi reopens it for each; that is in the peer's favour).

**Whole-file JSON** (the loop-store seed, 004): one JSON document per
session with the working ``messages`` and the full ``transcript``; every
save writes the whole document to a temporary file in the same directory,
fsyncs it and renames it over the old one (the seed does not fsync the
directory). Encoded with orjson, the fastest encoder at hand, in the
peer's favour. Messages are chat-completions dicts, as the seed stores them.

Several writers: one file each (neither layout takes two writers on one
session: pi chains each entry to the previous one, the seed holds a lock).
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterable
from typing import Any

import orjson

from .peers_data import COMPACTION, KEEP, Ev
from .peers_peer import Peer, Writer


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


# --- pi-style JSONL ---------------------------------------------------------------
def pi_message(ev: Ev) -> dict[str, Any]:
    kind, role, record = ev
    if kind == "message":
        return {"role": role, "content": [{"type": "text", "text": record["content"]}]}
    if kind == "tool_call":
        call = {"type": "toolCall", "id": record["id"], "name": record["name"]}
        return {"role": "assistant", "content": [{**call, "arguments": orjson.loads(record["arguments"])}]}
    if kind == "tool_result":
        text = [{"type": "text", "text": record["content"]}]
        return {"role": "toolResult", "toolCallId": record["tool_call_id"], "toolName": record["name"], "content": text}
    raise ValueError(f"no pi message for {kind}")


def _new_id(taken: set[str]) -> str:
    """pi's entry id: 8 random hex digits, drawn again on a collision
    (at 100,000 entries a collision is likely, and would loop the parent chain)."""
    while (new := secrets.token_hex(4)) in taken:
        pass
    taken.add(new)
    return new


def _pi_entry(ev: Ev, parent: str | None, recent: list[str], taken: set[str]) -> dict[str, Any]:
    kind, _role, record = ev
    entry: dict[str, Any] = {"type": "message", "id": _new_id(taken), "parentId": parent, "timestamp": _now()}
    if kind == COMPACTION:
        entry["type"] = "compaction"
        entry["summary"] = record["summary"]
        entry["firstKeptEntryId"] = recent[-KEEP] if len(recent) >= KEEP else None
        entry["tokensBefore"] = 180_000
    else:
        entry["message"] = pi_message(ev)
    return entry


class _JsonlWriter(Writer):
    def __init__(self, path: str, fsync: bool) -> None:
        entries = _parse_jsonl(path)
        self.last = entries[-1].get("id") if len(entries) > 1 else None
        self.taken = {str(e["id"]) for e in entries[1:]}
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self.fsync = fsync

    def prepare(self, ev: Ev) -> Any:
        return pi_message(ev)

    def append(self, native: Any) -> None:
        entry = {"type": "message", "id": _new_id(self.taken), "parentId": self.last, "timestamp": _now()}
        entry["message"] = native
        os.write(self.fd, orjson.dumps(entry) + b"\n")
        if self.fsync:
            os.fdatasync(self.fd)
        self.last = entry["id"]

    def close(self) -> None:
        os.close(self.fd)


def _parse_jsonl(path: str) -> list[dict[str, Any]]:
    with open(path, "rb") as f:
        return [orjson.loads(line) for line in f.read().splitlines()]


class JsonlPeer(Peer):
    shares_session = False
    writers_note = "8 threads, a session file each"
    loads_everything = "resume parses the whole file (then keeps the path from the last compaction)"

    def __init__(self, fsync: bool) -> None:
        self.fsync = fsync
        self.key = "jsonl-fsync" if fsync else "jsonl"
        self.label = "pi-style JSONL" + (" + fdatasync" if fsync else " (no sync)")
        self.sync = "fdatasync" if fsync else "no sync"
        self.durability = "fdatasync per line" if fsync else "page cache only: survives a process crash, not power loss"

    def path(self, loc: str, sid: str) -> str:
        return os.path.join(loc, "sessions", f"{sid}.jsonl")

    def build(self, loc: str, events: Iterable[Ev], name: str = "bench") -> str:
        os.makedirs(os.path.join(loc, "sessions"), exist_ok=True)
        header = {"type": "session", "version": 3, "id": name, "timestamp": _now(), "cwd": "/work/project"}
        recent: list[str] = []
        taken: set[str] = set()
        with open(self.path(loc, name), "wb") as f:
            f.write(orjson.dumps(header) + b"\n")
            for ev in events:
                entry = _pi_entry(ev, recent[-1] if recent else None, recent, taken)
                f.write(orjson.dumps(entry) + b"\n")
                recent.append(entry["id"])
                del recent[:-KEEP]
        return name

    def build_many(self, loc: str, sessions: Iterable[tuple[str, list[Ev]]]) -> None:
        for n, (_summary, events) in enumerate(sessions):
            self.build(loc, events, name=f"s{n:05d}")

    def writer(self, loc: str, sid: str) -> Writer:
        return _JsonlWriter(self.path(loc, sid), self.fsync)

    def whole(self, loc: str, sid: str) -> int:
        return len(_parse_jsonl(self.path(loc, sid))) - 1

    def last(self, loc: str, sid: str, n: int) -> int:
        return len(_parse_jsonl(self.path(loc, sid))[1:][-n:])

    def listing(self, loc: str) -> int:
        # pi's listing: every file parsed for its first message, count and time.
        rows = []
        with os.scandir(os.path.join(loc, "sessions")) as it:
            for entry in it:
                if not entry.name.endswith(".jsonl"):
                    continue
                lines = _parse_jsonl(entry.path)
                messages = [e for e in lines[1:] if e.get("type") == "message"]
                first = next((m["message"] for m in messages if m["message"].get("role") == "user"), None)
                rows.append((entry.stat().st_mtime, lines[0].get("id"), len(messages), first))
        rows.sort(key=lambda r: r[0], reverse=True)
        return len(rows)

    def browse(self, loc: str, sid: str, context_len: int, pages: int, page: int) -> dict[str, int]:
        entries = _parse_jsonl(self.path(loc, sid))[1:]
        by_id = {e["id"]: e for e in entries}
        path: list[dict[str, Any]] = []
        current: dict[str, Any] | None = entries[-1] if entries else None
        while current is not None:
            path.append(current)
            if len(path) > len(entries):
                raise RuntimeError(f"{self.path(loc, sid)}: the parent chain loops")
            current = by_id.get(current["parentId"]) if current.get("parentId") else None
        path.reverse()
        context = path
        for i in range(len(path) - 1, -1, -1):
            if path[i]["type"] == "compaction":
                kept = path[i].get("firstKeptEntryId")
                start = next((j for j in range(i) if path[j]["id"] == kept), i)
                context = [path[i], *path[start:i], *path[i + 1 :]]
                break
        return {"context": len(context), "paged_back": min(pages * page, len(path)), "shown": page}


# --- whole-file JSON (the loop-store seed) ---------------------------------------------
def chat_message(ev: Ev) -> dict[str, Any]:
    kind, role, record = ev
    if kind == "message":
        return {"role": role, "content": record["content"]}
    if kind == "tool_call":
        fn = {"name": record["name"], "arguments": record["arguments"]}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": record["id"], "type": "function", "function": fn}],
        }
    if kind == "tool_result":
        return {"role": "tool", "tool_call_id": record["tool_call_id"], "content": record["content"]}
    raise ValueError(f"no chat message for {kind}")


def _save(path: str, doc: dict[str, Any]) -> None:
    """The seed's save: temporary file beside it, fsync, rename."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, orjson.dumps(doc))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _load(path: str) -> dict[str, Any]:
    with open(path, "rb") as f:
        doc: dict[str, Any] = orjson.loads(f.read())
    return doc


class _JsonWriter(Writer):
    def __init__(self, path: str) -> None:
        self.path = path
        self.doc = _load(path)  # resuming loads the document; saves rewrite it

    def prepare(self, ev: Ev) -> Any:
        return chat_message(ev)

    def append(self, native: Any) -> None:
        self.doc["messages"].append(native)
        self.doc["transcript"].append(native)
        self.doc["updated_at"] = _now()
        _save(self.path, self.doc)

    def close(self) -> None:
        pass


class WholeJsonPeer(Peer):
    key = "json"
    label = "whole-file JSON + fsync"
    durability = "temp file, fsync, rename, on every save (no directory fsync)"
    sync = "fsync + rename"
    shares_session = False
    writers_note = "8 threads, a session file each"
    loads_everything = "one JSON document: loading any of it parses all of it"

    def path(self, loc: str, sid: str) -> str:
        return os.path.join(loc, "sessions", f"{sid}.json")

    def build(self, loc: str, events: Iterable[Ev], name: str = "bench", summary: str = "") -> str:
        os.makedirs(os.path.join(loc, "sessions"), exist_ok=True)
        now = _now()
        doc: dict[str, Any] = {"id": name, "created_at": now, "updated_at": now, "summary": summary, "title": None}
        doc.update(archived=False, project_root="/work/project", compactions=[], messages=[], transcript=[])
        for ev in events:
            if ev[0] == COMPACTION:
                summary_msg = {"role": "user", "content": ev[2]["summary"]}
                doc["messages"] = [summary_msg, *doc["messages"][-KEEP:]]
                doc["compactions"].append({"summary": ev[2]["summary"], "at": len(doc["transcript"])})
                continue
            message = chat_message(ev)
            doc["messages"].append(message)
            doc["transcript"].append(message)
        _save(self.path(loc, name), doc)
        return name

    def build_many(self, loc: str, sessions: Iterable[tuple[str, list[Ev]]]) -> None:
        for n, (summary, events) in enumerate(sessions):
            self.build(loc, events, name=f"s{n:05d}", summary=summary)

    def writer(self, loc: str, sid: str) -> Writer:
        return _JsonWriter(self.path(loc, sid))

    def whole(self, loc: str, sid: str) -> int:
        return len(_load(self.path(loc, sid))["transcript"])

    def last(self, loc: str, sid: str, n: int) -> int:
        return len(_load(self.path(loc, sid))["messages"][-n:])

    def listing(self, loc: str) -> int:
        # The seed's listing: every file loaded for its id, time and summary.
        rows = []
        with os.scandir(os.path.join(loc, "sessions")) as it:
            for entry in it:
                if entry.name.endswith(".json"):
                    doc = _load(entry.path)
                    if not doc.get("archived"):
                        rows.append((doc["updated_at"], doc["id"], doc.get("summary"), doc.get("title")))
        rows.sort(key=lambda r: r[0], reverse=True)
        return len(rows)

    def browse(self, loc: str, sid: str, context_len: int, pages: int, page: int) -> dict[str, int]:
        doc = _load(self.path(loc, sid))
        n = len(doc["transcript"])
        return {"context": len(doc["messages"]), "paged_back": min(pages * page, n), "shown": page}

"""The shapes of the file backend's log lines and index entries."""

from __future__ import annotations

import time
from typing import Any

import orjson

from ..._cext import speedups
from ..._codec import encode_line
from ...event import Event, format_timestamp
from ..base import Commit, IndexEntry, StagedEvent
from .index import Entry

__all__ = ["entry_to_index", "event_object", "event_of", "frame_commit", "is_event"]


def entry_to_index(e: Entry) -> IndexEntry:
    return IndexEntry(e.id, e.parent_id, e.branch_from, e.kind, e.role, e.timestamp, e.digest)


def event_of(rec: dict[str, Any]) -> Event:
    """The Event of a checked event line's members (a blob's payload unloaded)."""
    return Event(
        rec["id"],
        rec["parent_id"],
        rec["kind"],
        rec.get("role"),
        rec["timestamp"],
        rec.get("record"),
        rec.get("digest"),
        rec.get("branch_from"),
    )


def is_event(rec: dict[str, Any]) -> bool:
    return "op" not in rec


def event_object(
    id: str,
    parent_id: str,
    branch_from: str | None,
    kind: str,
    role: str | None,
    timestamp: str,
    record: Any,
    digest: str | None,
) -> dict[str, Any]:
    """An event line's members, in the order docs/format.md gives them.

    ``branch_from`` and ``digest`` are written only when set (format
    version 3): they are null on nearly every line, and the 33 bytes of
    ``"branch_from":null`` and ``"digest":null`` were 5% of a typical
    line. Every reader takes an absent member as null, as version 2's
    readers already did, so either build reads the other's lines."""
    obj: dict[str, Any] = {"id": id, "parent_id": parent_id}
    if branch_from is not None:
        obj["branch_from"] = branch_from
    obj["kind"] = kind
    obj["role"] = role
    obj["timestamp"] = timestamp
    obj["record"] = record
    if digest is not None:
        obj["digest"] = digest
    return obj


def _event_object(e: StagedEvent) -> dict[str, Any]:
    record = None if e.payload is None else orjson.Fragment(e.payload)
    return event_object(e.id, e.parent_id, e.branch_from, e.kind, e.role, e.timestamp, record, e.digest)


#: ``encode_line`` in C for the writer's own lines (None: orjson frames them).
_frame_line = None if speedups is None else speedups.frame_line


def _framed(obj: dict[str, Any], payload: bytes | None) -> bytes:
    """``encode_line(obj)``, where ``obj["record"]``, if present, is
    ``orjson.Fragment(payload)`` (or None with no payload): framed in C
    where the C code writes every member exactly as orjson does, which is
    every line of an append (tests/test_frame_line.py)."""
    if _frame_line is not None:
        line: bytes | None = _frame_line(obj, payload)
        if line is not None:
            return line
    return encode_line(obj)


def frame_commit(commit: Commit) -> tuple[list[bytes], list[dict[str, Any] | None]]:
    """The log lines of one commit, and beside each the event record it
    holds (None for a checkout record): its events, then a checkout record
    when HEAD does not end on the last of them; members of a commit of more
    than one line carry ``txn`` markers so a crash keeps all or none.

    The payload is the core's JSON, spliced in as a fragment (never parsed
    again); the C extension frames the line where it writes it exactly as
    orjson would (``_framed``), orjson otherwise."""
    events = commit.events
    if len(events) == 1 and events[0].id == commit.head:  # an append: one line, no marker
        obj = _event_object(events[0])
        return [_framed(obj, events[0].payload)], [obj]
    objs = [_event_object(e) for e in events]
    records: list[dict[str, Any] | None] = list(objs)
    if not events or events[-1].id != commit.head:
        stamp = events[-1].timestamp if events else format_timestamp(time.time_ns())
        objs.append({"op": "checkout", "head": commit.head, "timestamp": stamp})
        records.append(None)
    n = len(objs)
    if n > 1:
        for i, obj in enumerate(objs):
            obj["txn"] = [i, n]
    payloads = [e.payload for e in events]
    if len(objs) > len(events):
        payloads.append(None)  # the checkout record
    return [_framed(obj, payload) for obj, payload in zip(objs, payloads, strict=True)], records

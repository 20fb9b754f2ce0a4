"""The shapes of the file backend's log lines and index entries."""

from __future__ import annotations

import time
from typing import Any

import orjson

from ..._codec import encode_line
from ...event import format_timestamp
from ..base import Commit, IndexEntry, StagedEvent
from .index import Entry

__all__ = ["entry_to_index", "frame_commit", "is_event"]


def entry_to_index(e: Entry) -> IndexEntry:
    return IndexEntry(e.id, e.parent_id, e.branch_from, e.kind, e.role, e.timestamp, e.digest)


def is_event(rec: dict[str, Any]) -> bool:
    return "op" not in rec


def _event_object(e: StagedEvent) -> dict[str, Any]:
    return {
        "id": e.id,
        "parent_id": e.parent_id,
        "branch_from": e.branch_from,
        "kind": e.kind,
        "role": e.role,
        "timestamp": e.timestamp,
        "record": None if e.payload is None else orjson.Fragment(e.payload),
        "digest": e.digest,
    }


def frame_commit(commit: Commit) -> tuple[list[bytes], list[dict[str, Any] | None]]:
    """The log lines of one commit, and beside each the event record it
    holds (None for a checkout record): its events, then a checkout record
    when HEAD does not end on the last of them; members of a commit of more
    than one line carry ``txn`` markers so a crash keeps all or none.

    The payload is the core's JSON, spliced in as a fragment (never parsed
    again); orjson encodes the dict faster than formatting the fields by hand."""
    events = commit.events
    if len(events) == 1 and events[0].id == commit.head:  # an append: one line, no marker
        obj = _event_object(events[0])
        return [encode_line(obj)], [obj]
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
    return [encode_line(obj) for obj in objs], records

"""Reading back what imports stored in a session: each event's slim record
(the part importing needs, ``index_cache.slim_record``) and the source
keys each event names.

The session's import cache gives the row of each event it holds unchanged
(same id, parent and kind); any other event is read from the log."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..backends.base import IndexEntry
from ..session import Session
from .index_cache import load_rows, slim_record

__all__ = ["keyed_events", "slim_rows"]


def slim_rows(session: Session) -> Iterator[tuple[IndexEntry, Any]]:
    """(index entry, slim record) for each event, in append order."""
    cached = load_rows(session)
    for entry in session.entries():
        row = cached.get(entry.id)
        if row is not None and row[1] == entry.parent_id and row[2] == entry.kind:
            slim = row[3]
        else:
            event = session.event(entry.id)
            if not event.loaded:
                event = session.resolve(event)
            slim = slim_record(entry.kind, event.record)
        yield entry, slim


def keyed_events(session: Session) -> list[tuple[str, list[str]]]:
    """(event id, the source keys its record names) for each event, from
    the index cache where it has the event, else from the record."""
    out = []
    for entry, slim in slim_rows(session):
        keys = (slim.get("source") or {}).get("keys") or []
        out.append((entry.id, [k for k in keys if isinstance(k, str)]))
    return out

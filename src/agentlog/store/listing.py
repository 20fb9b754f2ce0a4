"""Listing a store's sessions: one row per session, built from its
metadata and one stat, never from its events, and the sessions that
could not be read, with why."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import SessionStats
from ..event import check_session_id, format_timestamp, parse_timestamp
from ..lifecycle import meta_with_defaults
from .base import StoreBase

__all__ = ["BrokenSession", "SessionInfo", "StoreListing", "session_info"]


@dataclass(frozen=True)
class SessionInfo:
    """One row of a listing, built without reading any event payload."""

    id: str
    title: str | None
    name: str | None
    working_dir: str | None
    model: str | None
    created_at: str | None
    updated_at: str
    summary: str | None
    status: str
    archived: bool
    event_count: int
    meta: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)


@dataclass(frozen=True)
class BrokenSession:
    """A session directory that listing could not read, and why."""

    id: str
    reason: str


def _canonical_time(value: Any) -> bool:
    """True for agentlog's own RFC 3339 form (nanoseconds, Z), 30 characters."""
    return (
        isinstance(value, str) and len(value) == 30 and value[19] == "." and value.endswith("Z") and value[:4].isdigit()
    )


def _text(value: Any) -> str | None:
    """A text field of session.json as ``SessionInfo`` types it: the API
    refuses other types (``check_meta``), but the file can be edited by
    hand, and one odd value must not break every listing."""
    return value if isinstance(value, str) else None


def session_info(session_id: str, stored: dict[str, Any], stats: SessionStats) -> SessionInfo:
    """One listing row. Listing builds one per session (10,000 in a large
    store), so the row is filled in directly: the frozen dataclass's
    ``__init__`` stores each field through ``object.__setattr__``, which
    was a quarter of this function's time."""
    meta = meta_with_defaults(stored)
    get = meta.get
    updated = get("updated_at")
    touched = format_timestamp(stats.updated_ns)
    if isinstance(updated, str) and _canonical_time(updated):
        latest = max(updated, touched)  # same fixed format: strings order as times
    else:
        try:
            meta_ns = parse_timestamp(updated) if isinstance(updated, str) else 0
        except ValueError:
            meta_ns = 0
        latest = format_timestamp(max(meta_ns, stats.updated_ns))
    name = _text(get("name"))
    info = _new_info(SessionInfo)
    info.__dict__.update(
        id=session_id,
        title=_text(get("title")) or name,
        name=name,
        working_dir=_text(get("working_dir")),
        model=_text(get("model")),
        created_at=_text(get("created_at")),
        updated_at=latest,
        summary=_text(get("summary")) or None,
        status=_text(get("status")) or "active",
        archived=get("archived") is True,
        event_count=stats.event_count,
        meta=meta,
    )
    return info


_new_info = object.__new__


class StoreListing(StoreBase):
    """Rows of sessions, most recently updated first, and the broken ones."""

    def info(self, session_id: str) -> SessionInfo:
        """One listing row, without reading any event payload."""
        return session_info(
            session_id, self.backend.read_meta(check_session_id(session_id)), self.backend.stats(session_id)
        )

    def list(self, *, archived: bool = False) -> builtins.list[SessionInfo]:
        """Sessions, most recently updated first; archived ones only if asked.

        Reads session.json and one stat per session, never the event logs.
        A malformed session is left out (see ``broken()``, ``fsck``)."""
        rows, _ = self.scan()
        if not archived:
            rows = [r for r in rows if not r.archived]
        return rows

    def scan(self) -> tuple[builtins.list[SessionInfo], builtins.list[BrokenSession]]:
        rows: builtins.list[SessionInfo] = []
        broken: builtins.list[BrokenSession] = []
        for row in self.backend.listing():
            if row.error is not None or row.stats is None:
                broken.append(BrokenSession(row.session_id, str(row.error)))
            else:
                rows.append(session_info(row.session_id, row.meta, row.stats))
        rows.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
        return rows, broken

    def broken(self) -> builtins.list[BrokenSession]:
        return self.scan()[1]

"""Full-text search over every event of every session.

    hits = search(store, "flaky test", kind="tool_result", limit=10)
    for hit in hits:
        print(hit.session_id, hit.event_id, hit.snippet)

The index (see ``index.py``) covers all history: every branch, events
before a compaction, tool calls and results. ``search`` first catches up
with what was appended since the last call, then queries; ``reindex``
rebuilds it from nothing. A query over an up-to-date index reads the
index only, never a session's event log or blobs.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..event import format_timestamp, parse_timestamp
from ..store import Store
from .index import Index, IndexStats, ProgressFn, drop, index_location, open_index
from .query import SearchError, to_match

__all__ = [
    "MARK_END",
    "MARK_START",
    "IndexStats",
    "SearchError",
    "SearchHit",
    "catch_up",
    "index_location",
    "reindex",
    "search",
]

#: Private-use characters bracketing matched words in a raw FTS5 snippet;
#: ``SearchHit`` turns them into ``highlights`` spans.
MARK_START = "\ue000"
MARK_END = "\ue001"
_SNIPPET_TOKENS = 16
#: Characters kept around the first match: one word can be a 40 KB blob.
_SNIPPET_CHARS = 240


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching event. ``snippet`` is plain text around the match;
    ``highlights`` are (start, end) character spans of matched words in
    it. ``score`` is FTS5's bm25: lower is a better match."""

    session_id: str
    event_id: str
    kind: str
    role: str | None
    timestamp: str
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "event_id": self.event_id, "kind": self.kind,
                "role": self.role, "timestamp": self.timestamp, "snippet": self.snippet,
                "highlights": [list(span) for span in self.highlights], "score": self.score}


def _unmark(raw: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    start = 0
    length = 0
    for ch in raw:
        if ch == MARK_START:
            start = length
        elif ch == MARK_END:
            spans.append((start, length))
        else:
            out.append(ch)
            length += 1
    text = "".join(out)
    if len(text) <= _SNIPPET_CHARS:
        return text, tuple(spans)
    first = spans[0][0] if spans else 0
    lo = max(0, min(first - _SNIPPET_CHARS // 3, len(text) - _SNIPPET_CHARS))
    hi = lo + _SNIPPET_CHARS
    head = "…" if lo else ""
    kept = tuple((a - lo + len(head), min(b, hi) - lo + len(head))
                 for a, b in spans if a >= lo and a < hi)
    return head + text[lo:hi] + ("…" if hi < len(text) else ""), kept


def _since(value: str | datetime | None) -> str | None:
    """A canonical timestamp (the stored form, so strings compare as times)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return format_timestamp(int(aware.timestamp() * 1_000_000_000))
    try:
        return format_timestamp(parse_timestamp(value))
    except ValueError:
        pass  # not RFC 3339 with a Z: try the looser ISO forms (a bare date)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise SearchError(f"--since {value!r} is not a date or time") from None
    return _since(parsed)


def catch_up(store: Store, progress: ProgressFn | None = None) -> IndexStats:
    """Bring the index up to date with the store (incremental)."""
    with open_index(store) as index:
        return index.catch_up(progress)


def reindex(store: Store, progress: ProgressFn | None = None) -> IndexStats:
    """Drop the index and build it again from every session."""
    drop(store)
    return catch_up(store, progress)


def search(store: Store, query: str, *, session: str | None = None,
           kind: str | None = None, role: str | None = None,
           since: str | datetime | None = None, cwd: str | None = None,
           limit: int = 20, refresh: bool = True) -> list[SearchHit]:
    """The events that best match ``query``, best first.

    ``query`` is words (ANDed), ``"a phrase"``, ``prefix*``, and OR / NOT
    between words. Filters: one session id, an event kind and role, a
    time (events at or after it) and a working directory (the session's,
    or one below it). ``refresh=False`` skips the catch-up."""
    if limit < 1:
        raise SearchError(f"limit must be at least 1, not {limit}")
    match = to_match(query)
    where = ["fts MATCH ?"]
    params: list[Any] = [match]
    if session is not None:
        where.append("e.session_id = ?")
        params.append(session)
    if kind is not None:
        where.append("e.kind = ?")
        params.append(kind)
    if role is not None:
        where.append("e.role = ?")
        params.append(role)
    after = _since(since)
    if after is not None:
        where.append("e.timestamp >= ?")
        params.append(after)
    join = ""
    if cwd is not None:
        directory = os.path.abspath(cwd)
        join = "JOIN sessions s ON s.session_id = e.session_id"
        where.append("(s.working_dir = ? OR substr(s.working_dir, 1, ?) = ?)")
        below = directory.rstrip(os.sep) + os.sep
        params += [directory, len(below), below]
    sql = (f"SELECT e.session_id, e.event_id, e.kind, e.role, e.timestamp, "
           f"snippet(fts, 0, '{MARK_START}', '{MARK_END}', '…', {_SNIPPET_TOKENS}), bm25(fts) "
           f"FROM fts JOIN events e ON e.rowid = fts.rowid {join} "
           f"WHERE {' AND '.join(where)} ORDER BY bm25(fts) LIMIT ?")
    params.append(limit)
    with open_index(store) as index:
        if refresh:
            index.catch_up()
        return _run(index, sql, params, query)


def _run(index: Index, sql: str, params: list[Any], query: str) -> list[SearchHit]:
    try:
        rows = index.conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        raise SearchError(f"cannot search for {query!r}: {exc}") from None
    hits = []
    for sid, eid, kind, role, ts, raw, score in rows:
        text, spans = _unmark(raw)
        hits.append(SearchHit(sid, eid, kind, role, ts, text, spans, float(score)))
    return hits



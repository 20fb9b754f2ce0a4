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
from typing import TYPE_CHECKING, Any, TypedDict

from .._ages import AmbiguousAge, ago, parse_age
from ..backends.base import Backend, SearchHit
from ..errors import SessionNotFound
from ..event import KIND_PATTERN, ROLE_PATTERN, format_timestamp, parse_timestamp
from .index import IndexStats, ProgressFn, SearchIndex, drop, index_location, open_index, tag
from .query import SearchError, SearchWarning, highlight_words, to_match
from .rank import rank
from .scripts import unsplit
from .snippet import make_snippet

if TYPE_CHECKING:  # annotations only: the store imports this package to offer search()
    from ..store import Store

__all__ = [
    "CANDIDATES",
    "IndexStats",
    "SearchError",
    "SearchHit",
    "SearchOptions",
    "SearchWarning",
    "catch_up",
    "index_location",
    "index_unwritable",
    "reindex",
    "search",
    "searches_itself",
]


class SearchOptions(TypedDict, total=False):
    """The keywords of ``search`` after the query, as ``Store.search`` takes
    them (``**options``): a type checker then refuses a misspelt one."""

    session: str | None
    kind: str | None
    role: str | None
    since: str | datetime | None
    cwd: str | None
    limit: int
    refresh: bool


#: Past this many matches, a query ranks the newest this many (see ``_ranked``).
CANDIDATES = 1000
#: Row ids per ``IN (...)`` when reading candidates' text.
_BATCH = 500


def _since(value: str | datetime | None) -> str | None:
    """A canonical timestamp (the stored form, so strings compare as times)
    from a time, a date (UTC), or an age (``7d``: that long ago)."""
    if value is None:
        return None
    if not isinstance(value, (str, datetime)):
        raise SearchError(f"since must be an age (7d), a date, a time or a datetime, not a {type(value).__name__}")
    if isinstance(value, str):
        try:
            return ago(parse_age(value))
        except AmbiguousAge as exc:
            raise SearchError(str(exc)) from None  # an age, but which ("6M"): say so
        except ValueError:
            pass  # not an age: a date or time
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
        raise SearchError(f"since {value!r} is not an age (7d, 12h), a date or a time") from None
    return _since(parsed)


def catch_up(store: Store, progress: ProgressFn | None = None) -> IndexStats:
    """Bring the index up to date with the store (incremental)."""
    with open_index(store) as index:
        return index.catch_up(progress)


def searches_itself(store: Store) -> bool:
    """Whether the store's backend answers searches with its own index
    (PostgreSQL's, kept as it writes), so agentlog's index is never used."""
    return type(store.backend).search is not Backend.search


def reindex(store: Store, progress: ProgressFn | None = None) -> IndexStats:
    """Drop the index and build it again from every session.

    An index that cannot be written (a read-only home) is a SearchError
    before anything is dropped: a search then builds one in memory for
    itself, but a rebuild there would be thrown away while saying it was done.
    A store that searches itself (``searches_itself``) has no index of
    agentlog's to rebuild: nothing is read, and the stats are all zero
    (building one in memory read every event only to throw it away)."""
    if searches_itself(store):
        return IndexStats(0, 0, 0, 0)
    path = index_location(store.home)
    if path is not None:
        _check_writable(path)
    try:
        drop(store)
    except OSError as exc:
        raise SearchError(f"cannot rebuild the search index {path}: {exc.strerror or exc}") from None
    with open_index(store) as index:
        stats = index.catch_up(progress)
        index.optimize()
    return stats


def index_unwritable(path: str) -> str | None:
    """What keeps the index file at ``path`` from being written: the file,
    or the directory it lives in (SQLite makes its journal files there, and
    the nearest that exists stands for one not made yet); None if nothing."""
    at = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(at):  # the root exists, so this ends
        at = os.path.dirname(at)
    for where in (path, at) if os.path.lexists(path) else (at,):
        if not os.access(where, os.W_OK):
            return where
    return None


def _check_writable(path: str) -> None:
    """A SearchError unless the index file at ``path`` may be written."""
    where = index_unwritable(path)
    if where is not None:
        raise SearchError(f"cannot rebuild the search index {path}: {where} cannot be written (a read-only home?)")


#: The largest limit SQLite and PostgreSQL bind (a signed 64-bit integer).
_MAX_LIMIT = (1 << 63) - 1


def _check_text(name: str, value: object) -> None:
    """A query or filter must be text the index can hold (UTF-8)."""
    if not isinstance(value, str):
        raise SearchError(f"{name} must be text, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate (bytes a terminal could not decode)
        raise SearchError(f"{name} is not valid Unicode text at character {exc.start}") from None
    if "\x00" in value:
        # SQLite's FTS5 reads a query only up to a NUL and PostgreSQL cannot
        # hold one, so each would answer something else: refuse it everywhere.
        hint = ": search for the words around it instead" if name == "query" else ""
        raise SearchError(f"{name} holds a NUL character (U+0000) at character {value.index(chr(0))}{hint}")


def search(
    store: Store,
    query: str,
    *,
    session: str | None = None,
    kind: str | None = None,
    role: str | None = None,
    since: str | datetime | None = None,
    cwd: str | None = None,
    limit: int = 20,
    refresh: bool = True,
    progress: ProgressFn | None = None,
) -> list[SearchHit]:
    """The events that best match ``query``, best first.

    ``query`` is words (ANDed), ``"a phrase"``, ``prefix*``, and OR / NOT
    between words. Filters: one session id, an event kind and role, a
    time (events at or after it: a datetime, an ISO date or time, UTC
    unless it says otherwise, or an age such as ``"7d"``) and a working
    directory (the session's, or one below it). ``refresh=False`` skips
    the catch-up; ``progress`` is called with (sessions done, sessions)
    as it goes (a first search, or the first after an upgrade of the index,
    indexes everything).

    When more than ``CANDIDATES`` events (and more than ``limit``) match,
    the best of the newest ``max(CANDIDATES, limit)`` are returned: ranking
    every match of a word found in half a million events would take far
    longer than a query should."""
    _check_text("query", query)
    for name, value in (("session", session), ("kind", kind), ("role", role), ("cwd", cwd)):
        if value is not None:
            _check_text(name, value)
            if not value:  # matches nothing, which reads as "no matches" rather than as the mistake it is
                raise SearchError(f"{name} must not be empty: leave it out to search every {name}")
            if name in ("kind", "role") and not (KIND_PATTERN if name == "kind" else ROLE_PATTERN).match(value):
                # No event can have it (every backend refuses such a kind or
                # role on append): "User" would silently find nothing.
                raise SearchError(
                    f"no event has the {name} {value!r}: a {name} is lowercase letters, digits and _.-"
                    f" (such as {'message' if name == 'kind' else 'user'!r})"
                )
    if type(limit) is not int or limit < 1:
        raise SearchError(f"limit must be a whole number of at least 1, not {limit!r}")
    limit = min(limit, _MAX_LIMIT)  # more than SQL can bind means "all of them"
    if session is not None and not store.exists(session):
        # Not a session here (a short id, a name, a deleted one): it would
        # find nothing, which reads as "no matches" rather than the mistake.
        raise SessionNotFound(session)
    # One query language whatever the store: a query this index refuses
    # (``NOT b`` alone, no word at all) is refused before a backend with
    # its own index could read it another way.
    match_text = to_match(query)
    # A backend with its own full-text index (PostgreSQL's) answers behind
    # the same call, with the same arguments and hit type.
    native = store.backend.search(
        query, session=session, kind=kind, role=role, since=_since(since), cwd=cwd, limit=limit
    )
    if native is not None:
        return native
    terms = [f"text : ({match_text})"]
    for field, value in (("s", session), ("k", kind), ("r", role)):
        if value is not None:
            terms.append(f'tags : "{tag(field, value)}"')
    match = " AND ".join(terms)
    where = ["fts MATCH ?"]
    params: list[Any] = [match]
    join = ""
    after = _since(since)
    if after is not None:
        join = "JOIN events e ON e.rowid = fts.rowid"
        where.append("e.timestamp >= ?")
        params.append(after)
    if cwd is not None:
        directory = os.path.abspath(cwd)
        if not join:
            join = "JOIN events e ON e.rowid = fts.rowid"
        join += " JOIN sessions s ON s.session_id = e.session_id"
        where.append("(s.working_dir = ? OR substr(s.working_dir, 1, ?) = ?)")
        below = directory.rstrip(os.sep) + os.sep
        params += [directory, len(below), below]
    base = f"FROM fts {join} WHERE {' AND '.join(where)}"
    plan = _Plan(
        newest=f"SELECT fts.rowid {base} ORDER BY fts.rowid DESC LIMIT ?",
        exact=f"SELECT fts.rowid, bm25(fts, 1.0, 0.0) AS score {base} ORDER BY score, fts.rowid DESC LIMIT ?",
        params=params,
        limit=limit,
    )
    with open_index(store) as index:
        if refresh:
            index.catch_up(progress)
        return _run(index, plan, query)


@dataclass(frozen=True, slots=True)
class _Plan:
    newest: str
    exact: str
    params: list[Any]
    limit: int


def _ranked(index: SearchIndex, plan: _Plan, query: str) -> list[tuple[int, float]]:
    """(rowid, score) of the best hits. Up to CANDIDATES matches (or the
    limit, if higher), FTS5's bm25 ranks them all; past that, the newest
    that many are ranked (see ``rank``): FTS5 streams them in rowid order,
    bounded however common the word, and rowids grow as the index catches up."""
    conn = index.conn
    # Never fewer candidates than hits asked for: "-n 5000" must not stop at
    # CANDIDATES while 5,000 events match (PostgreSQL gives them all).
    pool = max(CANDIDATES, min(plan.limit, _MAX_LIMIT - 1))
    newest = [r for (r,) in conn.execute(plan.newest, [*plan.params, pool + 1])]
    if len(newest) <= pool:
        return [(r, float(s)) for r, s in conn.execute(plan.exact, [*plan.params, plan.limit])]
    del newest[pool:]
    texts: list[tuple[int, str]] = []
    for lo in range(0, len(newest), _BATCH):
        batch = newest[lo : lo + _BATCH]
        marks = ",".join("?" * len(batch))
        rows = conn.execute(f"SELECT rowid, text FROM fts WHERE rowid IN ({marks})", batch)
        texts += [(rowid, unsplit(text)) for rowid, text in rows]
    return rank(texts, highlight_words(query), plan.limit)


_HIT_SQL = (
    "SELECT e.session_id, e.event_id, e.kind, e.role, e.timestamp, fts.text "
    "FROM fts JOIN events e ON e.rowid = fts.rowid WHERE fts.rowid = ?"
)


def _run(index: SearchIndex, plan: _Plan, query: str) -> list[SearchHit]:
    words = highlight_words(query)
    try:
        ranked = _ranked(index, plan, query)
        hits = []
        for rowid, score in ranked:
            row = index.conn.execute(_HIT_SQL, (rowid,)).fetchone()
            if row is None:
                continue  # removed by a concurrent catch-up between the two reads
            sid, eid, kind, role, ts, text = row
            snippet, spans = make_snippet(unsplit(text), words)
            hits.append(SearchHit(sid, eid, kind, role, ts, snippet, spans, float(score)))
    except sqlite3.OperationalError as exc:
        raise SearchError(f"cannot search for {query!r}: {exc}") from None
    return hits

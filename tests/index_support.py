"""Helpers for tests of the SQLite search index's in-place upgrades: an
index made now, rewritten as an older version left it, then opened."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from agentlog import Store
from agentlog.search import catch_up
from agentlog.search.index import SCHEMA_VERSION, index_location
from agentlog.search.scripts import unsplit

__all__ = ["as_older_index", "assert_upgraded_in_place", "matches"]


def as_older_index(store: Store, version: str, text: Callable[[str], str] = unsplit) -> str:
    """Index ``store``, then make its index what ``version`` wrote: each
    stored text as ``text`` gives it (by default without the marks of
    ``split``), and the version number. The index's path."""
    catch_up(store)
    path = index_location(store.home)
    assert path is not None
    conn = sqlite3.connect(path)
    with conn:
        for rowid, stored in conn.execute("SELECT rowid, text FROM fts").fetchall():
            conn.execute("UPDATE fts SET text = ? WHERE rowid = ?", (text(stored), rowid))
        conn.execute("UPDATE info SET value = ? WHERE key = 'schema'", (version,))
    conn.close()
    return path


def matches(path: str, match: str) -> int:
    """How many rows of the index at ``path`` the FTS5 expression ``match`` finds."""
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (match,)).fetchone()[0])
    finally:
        conn.close()


def assert_upgraded_in_place(store: Store, path: str) -> None:
    """The next catch-up upgrades the index at ``path``: it reads no
    session again, and the index is of this version after it."""
    stats = catch_up(store)
    assert (stats.sessions_indexed, stats.events_added) == (0, 0)  # upgraded, not rebuilt
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT value FROM info WHERE key = 'schema'").fetchone() == (SCHEMA_VERSION,)
    finally:
        conn.close()

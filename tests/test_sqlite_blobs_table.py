"""The SQLite store keeps blobs in a rowid table. A WITHOUT ROWID table
keeps each row in its key's B-tree, so a lookup passing a 50 MB blob read
all of it: appends of small tool outputs slowed 40-fold once a few large
ones were stored. A store made before is moved over on open, once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agentlog import Store

BIG = "x" * 100_000


def _blobs_sql(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return str(db.execute("SELECT sql FROM sqlite_master WHERE name = 'blobs'").fetchone()[0])


def test_a_new_store_keeps_blobs_in_a_rowid_table(tmp_path: Path) -> None:
    Store(f"sqlite://{tmp_path}/a.db").close()
    assert "WITHOUT ROWID" not in _blobs_sql(tmp_path / "a.db").upper()


def test_a_store_made_before_is_moved_over_with_its_blobs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = Store(f"sqlite://{path}")
    with store.create(session_id="s") as s:
        first = s.append("tool_result", {"tool_call_id": "c", "content": BIG}, role="tool")
        assert first.digest is not None
    store.close()
    with sqlite3.connect(path) as db:  # the table as stores before 2026-12-06 made it
        db.execute("CREATE TABLE old_blobs (digest TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID")
        db.execute("INSERT INTO old_blobs SELECT digest, data FROM blobs")
        db.execute("DROP TABLE blobs")
        db.execute("ALTER TABLE old_blobs RENAME TO blobs")
    assert "WITHOUT ROWID" in _blobs_sql(path).upper()
    store = Store(f"sqlite://{path}")
    assert "WITHOUT ROWID" not in _blobs_sql(path).upper()
    with store.open("s") as s:
        assert s.resolve(s.event(first.id)).record["content"] == BIG
        second = s.append("tool_result", {"tool_call_id": "d", "content": BIG + "y"}, role="tool")
        assert s.resolve(s.event(second.id)).record["content"] == BIG + "y"
    assert store.fsck("s") == []
    store.close()

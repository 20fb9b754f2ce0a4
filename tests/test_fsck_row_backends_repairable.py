"""fsck on a store that keeps rows (SQLite) says its problems are not repairable.

Their repair does nothing (SQLite's journal recovers a crash; damage beyond
it is reported, never mended), yet every problem was marked repairable and
`fsck --repair` printed "repaired: nothing to move" for each session."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from cli_support import ok, ok_json, run


def test_damage_in_an_sqlite_store_is_reported_as_not_repairable(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    sid = ok(url, "new", "--name", "x").strip()
    ok(url, "append", "x", "message", '{"content": "hello"}', "--role", "user")
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("UPDATE events SET record = '{not json' WHERE session_id = ?", (sid,))
    report = run(url, "fsck", "--json")
    assert report.exit_code == 1
    problems = json.loads(report.stdout)["problems"]
    assert problems and all(not p["repairable"] for p in problems)
    repaired = run(url, "fsck", "--repair")
    assert repaired.exit_code == 1 and "repaired:" not in repaired.stdout
    assert "1 error" in repaired.stdout
    assert ok_json(url, "ls")[0]["id"] == sid

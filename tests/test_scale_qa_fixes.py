"""Regressions of the scale QA pass: du counts a hard-linked blob once in
a home's total, and counts and names read as a person expects."""

from __future__ import annotations

import json
from pathlib import Path

from agentlog import Store
from cli_support import error, ok, run


def _forked(home: Path) -> tuple[str, int]:
    """A session with one blob, and a fork holding the same blob (a hard link)."""
    store = Store(home, blob_threshold=1024)
    with store.create(session_id="orig") as session:
        session.append("tool_result", {"content": "x" * 50_000}, role="tool")
        fork = session.fork(session_id="copy")
        fork.close()
    store.close()
    blob = next((home / "sessions" / "orig" / "blobs").iterdir())
    assert blob.stat().st_nlink == 2  # the fork links it, it does not copy it
    return "copy", blob.stat().st_size


def test_du_counts_a_blob_two_sessions_link_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _, size = _forked(home)
    doc = json.loads(ok(home, "du", "--json"))
    rows = {r["id"]: r for r in doc["sessions"]}
    assert rows["orig"]["blobs"] == rows["copy"]["blobs"] == size
    assert sorted(r["blobs_shared"] for r in rows.values()) == [0, size]  # whichever was listed second
    assert doc["total"] == sum(r["total"] for r in rows.values()) - size + doc["search_index"]
    assert "counted once" in ok(home, "du")


def test_a_name_that_matches_nothing_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _forked(home)
    line = error(run(home, "log", "task 5000"))
    assert "no session has that name" in line


def test_copy_says_its_counts_plainly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _forked(home)
    said = ok(home, "copy", "--to", f"file://{tmp_path / 'other'}", "orig")
    assert "sessions: 1 created, 0 extended, 0 unchanged; 1 event copied" in said


def test_gc_json_on_a_database_store_has_the_documented_keys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    ok(url, "new", "--id", "s", "--working-dir", str(tmp_path))
    doc = json.loads(ok(url, "gc", "--json"))
    assert {"dry_run", "collected", "bytes", "busy", "damaged", "quarantine_kept"} <= set(doc)
    assert doc["collected"] == [] and doc["busy"] == []
    assert "sqlite" in ok(url, "du")


def test_tree_of_a_session_retried_many_times_stays_narrow(tmp_path: Path) -> None:
    """Each retry used to push the rest of the path two levels right: the
    output grew with the square of the retries and HEAD's line was cut."""
    home = tmp_path / "home"
    store = Store(home)
    with store.create(session_id="r") as session:
        ask = session.append("message", {"content": "fix it"}, role="user")
        for i in range(150):
            session.append("message", {"content": f"attempt {i}"}, role="assistant")
            ask = session.append("message", {"content": f"attempt {i} fails, again"}, role="user")
            if i % 2:
                side = session.append("message", {"content": "a side try"}, role="assistant")
                session.checkout(ask.id)
                assert side.parent_id == ask.id
    store.close()
    lines = ok(home, "tree", "r").splitlines()
    assert max(len(line) for line in lines) < 160
    (head,) = [line for line in lines if "◀ HEAD" in line]
    assert len(head) - len(head.lstrip(" │├└─")) <= 4  # HEAD stays at the top level
    # Every side try is still there (the last is its ask's only child: no branch point yet).
    assert sum("branch 1/2" in line for line in lines) == 74 and sum("a side try" in line for line in lines) == 75

"""Regressions of the scale QA pass: du counts a hard-linked blob once in
a home's total, and counts and names read as a person expects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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


def _bundle_of_five(tmp_path: Path) -> tuple[Path, list[str], list[str]]:
    store = Store(tmp_path / "src")
    with store.create(session_id="b") as session:
        ids = [session.append("message", {"text": f"m{i}"}, role="user").id for i in range(5)]
        out = tmp_path / "b.jsonl"
        with open(out, "wb") as f:
            from agentlog.export import export_session

            export_session(session, "bundle", f)
    store.close()
    return out, ids, out.read_text().splitlines()


def test_a_bundle_that_shrinks_between_the_passes_is_refused(tmp_path: Path, monkeypatch: Any) -> None:
    import agentlog.export.bundle as bundle_module
    from agentlog.errors import BundleError
    from agentlog.export import import_bundle

    path, ids, lines = _bundle_of_five(tmp_path)
    smaller = [*lines[:4], json.dumps({"end": {"events": 3, "head": ids[4]}})]
    first_pass = bundle_module._check

    def then_shrink(p: Any, progress: Any) -> Any:
        checked = first_pass(p, progress)
        path.write_text("\n".join(smaller) + "\n")  # still a bundle that holds together on its own
        return checked

    monkeypatch.setattr(bundle_module, "_check", then_shrink)
    target = Store(tmp_path / "target")
    with pytest.raises(BundleError, match="changed while it was imported"):
        import_bundle(target, path)
    target.close()


def test_a_bundle_import_reports_progress_to_the_end(tmp_path: Path) -> None:
    from agentlog.export import import_bundle

    path, _, _ = _bundle_of_five(tmp_path)
    target = Store(tmp_path / "target")
    for _ in range(2):  # created, then unchanged (no second pass)
        seen: list[tuple[int, int]] = []
        import_bundle(target, path, progress=lambda done, total, seen=seen: seen.append((done, total)))
        assert seen[-1][0] == seen[-1][1]
    target.close()


def test_an_age_longer_than_time_is_a_typed_error_or_the_epoch(tmp_path: Path) -> None:
    from agentlog.search import SearchError

    store = Store(tmp_path / "home")
    with store.create() as session:
        session.append("message", {"content": "hello"}, role="user")
    assert len(store.search("hello", since="1000000y")) == 1  # since before any event: every one
    with pytest.raises(SearchError):
        store.search("hello", since="9" * 400 + "d")  # not a number of seconds a float holds
    store.close()

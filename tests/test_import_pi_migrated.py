"""A pi session that pi itself migrated and wrote again goes on importing.

pi opens a v1 or v2 session by migrating it to its current version and
rewriting the whole file (session-manager.ts: ``setSessionFile`` ->
``migrateToCurrentVersion`` -> ``_rewriteFile``). Every old session a user
resumes in a newer pi is rewritten so, which used to stop its import for
good (the consumed prefix changed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlog import Store
from agentlog.event import NIL_ID
from agentlog.importers import FORMATS, follow
from importers_support import do_import, load, write_lines

pytest_plugins = ["importers_store"]

SID = "22222222-3333-4444-8555-666666666666"


def _ts(i: int) -> str:
    return f"2025-11-01T10:00:{i:02d}.000Z"


def _msg(i: int, role: str, text: str) -> dict[str, Any]:
    content = [{"type": "text", "text": text}]
    return {"type": "message", "timestamp": _ts(i), "message": {"role": role, "content": content}}


def _v1() -> list[dict[str, Any]]:
    return [
        {"type": "session", "id": SID, "timestamp": _ts(0), "cwd": "/home/u/p"},
        _msg(1, "user", "first"),
        _msg(2, "assistant", "one"),
        _msg(3, "user", "second"),
        _msg(4, "assistant", "two"),
        {"type": "compaction", "timestamp": _ts(5), "summary": "so far", "firstKeptEntryIndex": 3},
        _msg(6, "user", "third"),
    ]


def _migrated(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What pi's migrateV1ToV2 and migrateV2ToV3 make of v1 entries."""
    out, previous = [], None
    for n, entry in enumerate(entries):
        entry = dict(entry)
        if entry["type"] == "session":
            entry["version"] = 3
        else:
            entry["id"], entry["parentId"] = f"e{n:07x}", previous
            previous = entry["id"]
            if entry["type"] == "compaction":
                entry["firstKeptEntryId"] = f"e{entry.pop('firstKeptEntryIndex'):07x}"
        out.append(entry)
    return out


def _entry(i: int, entry_id: str, parent: str, role: str, text: str) -> dict[str, Any]:
    return {"id": entry_id, "parentId": parent, **_msg(i, role, text)}


def test_a_v1_session_pi_migrated_imports_what_pi_appended(store: Store, tmp_path: Path) -> None:
    path = write_lines(tmp_path / f"2025-11-01T10-00-00-000Z_{SID}.jsonl", _v1())
    assert do_import(store, "pi", path).errors == []
    before = load(store, f"pi-{SID}")
    migrated = _migrated(_v1())
    write_lines(
        path,
        [
            *migrated,
            _entry(7, "f0000001", "e0000006", "assistant", "three (after the resume)"),
            _entry(8, "f0000002", "e0000002", "user", "a branch from the first reply"),
        ],
    )
    report = do_import(store, "pi", path)
    assert report.errors == []
    assert [w[2] for w in report.warnings] == ["pi rewrote the file; its lines 1-7 are the ones imported before"]
    after = load(store, f"pi-{SID}")
    assert after.events[: len(before.events)] == before.events  # nothing imported twice
    new = after.events[len(before.events) :]
    texts = [e.record["content"][0]["text"] for e in new]
    assert texts == ["three (after the resume)", "a branch from the first reply"]
    by_text = {e.record["content"][0]["text"]: e for e in after.events if e.kind == "message"}
    assert new[0].parent_id == by_text["third"].id
    assert new[1].parent_id == by_text["one"].id and new[1].branch_from == by_text["one"].id
    assert do_import(store, "pi", path).errors == []  # the next import reads on as usual
    assert len(load(store, f"pi-{SID}").events) == len(after.events)


def test_a_migrated_file_is_followed(store: Store, tmp_path: Path) -> None:
    path = write_lines(tmp_path / f"2025-11-01T10-00-00-000Z_{SID}.jsonl", _v1())
    steps = [
        lambda: write_lines(path, _migrated(_v1())),
        lambda: path.open("a").write(json.dumps(_entry(7, "f0000001", "e0000006", "assistant", "later")) + "\n"),
    ]

    def grow(_interval: float) -> None:
        if steps:
            steps.pop(0)()

    total = follow(store, FORMATS["pi"], [str(path)], interval=0, max_polls=3, sleep=grow)
    assert total.errors == []
    loaded = load(store, f"pi-{SID}")
    (later,) = [e for e in loaded.events if e.kind == "message" and e.record["content"][0]["text"] == "later"]
    assert loaded.by_id[later.parent_id].record["content"][0]["text"] == "third"


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda lines: lines[:3] + lines[4:], id="an entry dropped"),
        pytest.param(lambda lines: [*lines[:2], lines[3], lines[2], *lines[4:]], id="reordered"),
        pytest.param(lambda lines: [{**lines[0], "id": "another"}, *lines[1:]], id="another session"),
        pytest.param(lambda lines: [{**lines[0], "version": 1}, *lines[1:]], id="no newer version"),
    ],
)
def test_any_other_rewrite_is_still_a_change(store: Store, tmp_path: Path, change: Any) -> None:
    path = write_lines(tmp_path / f"2025-11-01T10-00-00-000Z_{SID}.jsonl", _v1())
    do_import(store, "pi", path)
    write_lines(path, change(_migrated(_v1())) + [_entry(7, "f0000001", "e0000006", "assistant", "later")])
    report = do_import(store, "pi", path)
    assert any("changed since session" in e for e in report.errors) or report.sessions[-1].session_id != f"pi-{SID}"
    assert all(
        not (e.kind == "message" and e.record["content"][0]["text"] == "later") for e in load(store, f"pi-{SID}").events
    )


def test_a_v2_session_rewritten_as_v3_goes_on(store: Store, tmp_path: Path) -> None:
    lines = [
        {"type": "session", "version": 2, "id": SID, "timestamp": _ts(0), "cwd": "/w"},
        _entry(1, "a0000001", None, "user", "hello"),  # type: ignore[arg-type]
        {"id": "a0000002", "parentId": "a0000001", **_msg(2, "hookMessage", "from a hook")},
    ]
    path = write_lines(tmp_path / f"2025-11-01T10-00-00-000Z_{SID}.jsonl", lines)
    do_import(store, "pi", path)
    hook = {**lines[2], "message": {**lines[2]["message"], "role": "custom"}}
    rewritten = [{**lines[0], "version": 3}, lines[1], hook]
    write_lines(path, [*rewritten, _entry(3, "a0000003", "a0000002", "assistant", "ok")])
    report = do_import(store, "pi", path)
    assert report.errors == [] and report.events == 1
    loaded = load(store, f"pi-{SID}")
    assert loaded.events[-1].parent_id == loaded.events[-2].id != NIL_ID


def test_a_migrated_file_followed_after_its_session_was_let_go(store: Store, tmp_path: Path) -> None:
    # --follow keeps only a line's type and id between polls; a session it
    # let go of (more than it keeps open) reads its maps again from the
    # store, and must still find the entries pi gave ids when it migrated.
    from agentlog.importers import Follower

    path = write_lines(tmp_path / f"2025-11-01T10-00-00-000Z_{SID}.jsonl", _v1())
    with Follower(store, FORMATS["pi"], [str(path)]) as follower:
        follower.poll()
        write_lines(path, _migrated(_v1()))
        follower.poll()
        for kept in follower.keep.values():  # let go, as the bound on open sessions does
            kept.close()
        follower.keep.clear()
        with path.open("a") as f:
            f.write(json.dumps(_entry(7, "f0000001", "e0000006", "assistant", "later")) + "\n")
        assert follower.poll().errors == []
    loaded = load(store, f"pi-{SID}")
    (later,) = [e for e in loaded.events if e.kind == "message" and e.record["content"][0]["text"] == "later"]
    assert loaded.by_id[later.parent_id].record["content"][0]["text"] == "third"

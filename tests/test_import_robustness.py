"""Importers given damaged input: a line orjson refuses, a line whose shape
breaks conversion half-way, a line nested too deeply to store, damaged
import bookkeeping, and source ids that sanitize to the same session id.
Each test names the failure mode it pins."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentlog import Event, Store
from agentlog.importers import FORMATS, ClaudeImporter, run_import
from agentlog.importers.base import safe_session_id
from agentlog.importers.model import SourceLine
from importers_support import copy_fixture, do_import, load, write_lines

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores

TS = "2026-01-01T00:00:01Z"
LONE = "\\ud83d"  # as JSON text: a lone high surrogate escape (an emoji cut in half)


def _claude(uuid: str, parent: str | None, text: Any, kind: str = "user", **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": text}
    if kind == "assistant":
        message = {"id": extra.pop("mid", "m-" + uuid), "role": "assistant", "content": text}
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "S1",
        "timestamp": f"2026-01-01T00:00:0{len(uuid)}Z",
        "message": message,
        **extra,
    }


def _with_lone_surrogate(obj: dict[str, Any], marker: str) -> str:
    """``obj`` as one JSON line, its ``marker`` text replaced by a lone surrogate escape."""
    return json.dumps(obj).replace(marker, LONE)


def _path_texts(store: Store, session_id: str) -> list[str]:
    loaded = load(store, session_id)
    return [str(e.record.get("content")) for e in loaded.path()]


# --- a lone surrogate escape (bug 2) ------------------------------------------------------


def test_lone_surrogate_line_is_repaired_reported_and_keeps_the_chain(store, tmp_path):
    path = write_lines(
        tmp_path / "s.jsonl",
        [
            _claude("u1", None, "hi"),
            _with_lone_surrogate(_claude("u22", "u1", "cut CUT"), "CUT"),
            _claude("u333", "u22", "after"),
        ],
    )
    report = do_import(store, "claude", path)
    assert report.malformed == []
    [(where, lineno, note)] = report.warnings
    assert (where, lineno) == (str(path), 2)
    assert "\\ud83d in message.content" in note and "U+FFFD" in note
    loaded = load(store, "claude-S1")
    assert [e.record["content"] for e in loaded.path()] == ["hi", "cut \ufffd", "after"]
    assert loaded.path()[1].record["source"]["repaired"] == note  # the stored event says so too
    assert report.to_dict()["warnings"] == [{"path": str(path), "line": 2, "warning": note}]


def test_lone_surrogate_in_a_pi_entry_keeps_the_tree_whole(store, tmp_path):
    header = {"type": "session", "version": 3, "id": "p1", "cwd": "/w", "timestamp": "2026-01-01T00:00:00Z"}

    def entry(eid: str, parent: str | None, text: str) -> dict[str, Any]:
        message = {"role": "user", "content": text}
        return {"type": "message", "id": eid, "parentId": parent, "timestamp": TS, "message": message}

    path = write_lines(
        tmp_path / "p.jsonl",
        [header, entry("a", None, "1"), _with_lone_surrogate(entry("b", "a", "two CUT"), "CUT"), entry("c", "b", "3")],
    )
    report = do_import(store, "pi", path)
    assert report.malformed == [] and [n for _, n, _ in report.warnings] == [3]
    texts = _path_texts(store, "pi-p1")
    assert texts[-3:] == ["1", "two \ufffd", "3"]


def test_lone_surrogate_with_another_fault_is_still_malformed(store, tmp_path):
    bad = _with_lone_surrogate(_claude("u22", "u1", "CUT"), "CUT").replace('"sessionId"', '"n": NaN, "sessionId"')
    path = write_lines(tmp_path / "s.jsonl", [_claude("u1", None, "hi"), bad, _claude("u333", "u1", "x")])
    report = do_import(store, "claude", path)
    assert [n for _, n, _ in report.malformed] == [2]
    assert report.warnings == []


# --- a line that is not JSON at all (bug 2) ------------------------------------------------


def test_broken_line_whose_uuid_is_readable_keeps_its_children_attached(store, tmp_path):
    whole = json.dumps({"type": "user", "uuid": "u22", "parentUuid": "u1", "sessionId": "S1", "message": {}})
    broken = whole[: whole.index('"message"')] + '"message": {"role": "user", "content": "cut off'
    path = write_lines(tmp_path / "s.jsonl", [_claude("u1", None, "hi"), broken, _claude("u333", "u22", "after")])
    report = do_import(store, "claude", path)
    assert [n for _, n, _ in report.malformed] == [2]
    loaded = load(store, "claude-S1")
    kinds = [(e.kind, e.record["source"]["line"]) for e in loaded.path()]
    assert kinds == [("message", 1), ("custom", 2), ("message", 3)]
    assert loaded.path()[1].record["raw"] == broken
    assert "unresolved_parent" not in loaded.path()[2].record["source"]


def test_broken_line_without_its_uuid_reports_where_the_chain_broke(store, tmp_path):
    broken = '{"type": "user", "parentUuid": "u1", "sessionId": "S1", "message": {"content": "cut'
    path = write_lines(tmp_path / "s.jsonl", [_claude("u1", None, "hi"), broken, _claude("u333", "u22", "after")])
    report = do_import(store, "claude", path)
    assert [n for _, n, _ in report.malformed] == [2]
    [(_, lineno, note)] = report.warnings
    assert lineno == 3 and "'u22'" in note and "line 2" in note and "broken" in note


def test_a_uuid_is_read_only_from_the_top_level_never_from_inside_a_string():
    from agentlog.importers.salvage import top_level_strings

    text = '{"type": "user", "content": "\\"uuid\\": \\"evil\\"", "data": {"uuid": "nested"}, "x": [1, {"uuid": "y"'
    assert top_level_strings(text) == {"type": "user", "content": '"uuid": "evil"'}
    assert top_level_strings('{"uuid": "a", "uuid": "b", "type": "t"') == {"type": "t"}  # which one?
    assert top_level_strings('{"type": "t" "uuid": "u"}') == {"type": "t"}  # read up to the first fault


# --- a shape error part-way through a line (bug 3) -----------------------------------------


def test_non_string_tool_ids_are_stored_not_refused(store, tmp_path):
    calls = [
        {"type": "text", "text": "calling"},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": "ls"}},
        {"type": "tool_use", "id": ["bad"], "name": "Bash", "input": {}},
    ]
    result = [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]
    lines = [_claude("u1", None, "hi"), _claude("a1", "u1", calls, "assistant"), _claude("u2", "a1", result)]
    report = do_import(store, "claude", write_lines(tmp_path / "s.jsonl", lines))
    assert report.malformed == []
    loaded = load(store, "claude-S1")
    assert [e.kind for e in loaded.path()] == ["message", "message", "tool_call", "tool_call", "tool_result"]
    assert loaded.path()[3].record["id"] == ["bad"]
    assert loaded.path()[4].record["name"] == "Bash"


def test_pi_and_codex_tool_ids_of_any_type_are_stored(store, tmp_path):
    header = {"type": "session", "version": 3, "id": "p1", "cwd": "/w", "timestamp": "2026-01-01T00:00:00Z"}
    call = {"type": "toolCall", "id": {"x": 1}, "name": "bash", "arguments": {}}
    message = {"role": "assistant", "content": [call]}
    entry = {"type": "message", "id": "a", "parentId": None, "timestamp": "2026-01-01T00:00:01Z", "message": message}
    report = do_import(store, "pi", write_lines(tmp_path / "p.jsonl", [header, entry]))
    assert report.malformed == [] and report.kinds["tool_call"] == 1
    meta = {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "c1"}}
    item = {"type": "function_call", "call_id": [1], "name": "shell", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": [1], "output": "ok"}
    rows = [meta] + [{"timestamp": TS, "type": "response_item", "payload": p} for p in (item, output)]
    report = do_import(store, "codex", write_lines(tmp_path / "rollout-x.jsonl", rows))
    assert report.malformed == [] and report.kinds["tool_call"] == 1 and report.kinds["tool_result"] == 1


class _Exploding(ClaudeImporter):
    """Raises after converting a line marked "explode": what a shape error
    half-way through a line leaves (events made, an earlier event merged into)."""

    def convert(self, b: Any, line: SourceLine) -> None:
        super().convert(b, line)
        if line.obj is not None and line.obj.get("explode"):
            raise KeyError("late")


def test_a_line_failing_half_way_is_rolled_back_and_kept_whole(store, tmp_path):
    first = [{"type": "text", "text": "part one"}]
    second = [{"type": "text", "text": "part two"}, {"type": "tool_use", "id": "t9", "name": "Bash", "input": {}}]
    lines = [
        _claude("u1", None, "hi"),
        _claude("a1", "u1", first, "assistant", mid="m"),
        _claude("a22", "a1", second, "assistant", mid="m", explode=True),  # merges into a1's message, then fails
        _claude("u333", "a22", "after"),
    ]
    path = write_lines(tmp_path / "s.jsonl", lines)
    report = run_import(store, _Exploding(), [str(path)])
    assert [(n, "KeyError" in e) for _, n, e in report.malformed] == [(3, True)]
    [session] = report.sessions
    assert session.merged == 0 and session.kinds["tool_call"] == 0 and session.events == 4
    loaded = load(store, "claude-S1")
    path_events = loaded.path()
    assert [(e.kind, e.record["source"]["line"]) for e in path_events] == [
        ("message", 1),
        ("message", 2),
        ("custom", 3),
        ("message", 4),
    ]
    assert path_events[1].record["content"] == first and "merged" not in path_events[1].record["source"]
    assert path_events[2].record["original"]["uuid"] == "a22" and path_events[2].record["source"]["keys"] == ["a22"]
    assert len(loaded.events) == 4  # nothing half-made left off the path either


# --- a line nested too deeply to store (bug 4) --------------------------------------------


def test_a_line_too_deep_to_store_is_malformed_and_the_rest_imports(store, tmp_path):
    deep: Any = 0
    for _ in range(300):  # orjson reads 1024 levels, writes 254
        deep = {"a": deep}
    progress = {"type": "progress", "uuid": "p1", "parentUuid": "u1", "sessionId": "S1", "data": deep}
    path = write_lines(tmp_path / "s.jsonl", [_claude("u1", None, "hi"), progress, _claude("u333", "u1", "after")])
    report = do_import(store, "claude", path)
    assert report.errors == []
    [(where, lineno, error)] = report.malformed
    assert (where, lineno) == (str(path), 2) and "nested more than" in error
    assert [e.record["source"]["line"] for e in load(store, "claude-S1").events] == [1, 2, 3]


# --- damaged import bookkeeping (bug 5) ----------------------------------------------------

A = "claude-code_v2.1.42_real_03eb5929.jsonl"
B = "claude-code_v1.0.51_real_summary-records_326189cf.jsonl"
SID_A = "claude-03eb5929-52b3-4b13-ada3-b93ae35806b8"


def _damage_size(imp: Any) -> Any:
    imp["files"][A]["size"] = "abc"
    return imp


def _damage_files(imp: Any) -> Any:
    imp["files"] = [1]
    return imp


@pytest.mark.parametrize(
    "damage",
    [_damage_size, _damage_files, lambda imp: "x", lambda imp: {**imp, "files": {A: 7}}],
    ids=["size-not-a-number", "files-a-list", "import-a-string", "state-a-number"],
)
def test_damaged_import_state_fails_that_session_only(store, tmp_path, damage):
    src = tmp_path / "src"
    copy_fixture(A, src)
    do_import(store, "claude", src)
    copy_fixture(B, src)  # a new file for the next run
    store.update_meta(SID_A, **{"import": damage(store.meta(SID_A)["import"])})
    report = do_import(store, "claude", src)
    [error] = report.errors
    assert SID_A in error and "corruption" in error
    assert [s.session_id for s in report.sessions] == ["claude-326189cf-5676-4237-8cde-1ce80aae4a9f"]


def test_unparsable_session_json_fails_that_session_only(tmp_path):
    store = Store(tmp_path / "home")
    src = tmp_path / "src"
    copy_fixture(A, src)
    do_import(store, "claude", src)
    copy_fixture(B, src)
    [meta_file] = [p for p in (tmp_path / "home").rglob("session.json") if SID_A in str(p)]
    meta_file.write_text("{ damaged")
    report = do_import(Store(tmp_path / "home"), "claude", src)
    [error] = report.errors
    assert SID_A in error
    assert [s.session_id for s in report.sessions] == ["claude-326189cf-5676-4237-8cde-1ce80aae4a9f"]


# --- source ids that sanitize alike (bug 6) ------------------------------------------------


def _one_line_session(path: Path, source_id: str, text: str) -> Path:
    line = {"type": "user", "uuid": f"u-{text}", "parentUuid": None, "sessionId": source_id, "message": {}}
    line["message"] = {"role": "user", "content": text}
    return write_lines(path, [line])


def _suffix(source_id: str) -> str:
    return hashlib.sha256(source_id.encode()).hexdigest()[:8]


def test_sources_that_sanitize_alike_are_never_merged(store, tmp_path):
    _one_line_session(tmp_path / "src" / "one.jsonl", "proj.1", "ONE")
    _one_line_session(tmp_path / "src" / "two.jsonl", "proj_1", "TWO")
    report = do_import(store, "claude", tmp_path / "src")
    assert report.errors == []
    hashed = f"claude-proj_1-{_suffix('proj.1')}"
    assert sorted(s.session_id for s in report.sessions) == sorted(["claude-proj_1", hashed])
    assert _path_texts(store, "claude-proj_1") == ["TWO"]
    assert _path_texts(store, hashed) == ["ONE"]
    assert store.meta(hashed)["import"]["source_id"] == "proj.1"
    assert do_import(store, "claude", tmp_path / "src").events == 0  # stable: the same sessions again
    # An id sanitizing leaves as it was gets no suffix (a sidechain's "/" is not sanitizing).
    assert FORMATS["claude"].session_id("03eb5929-52b3-4b13-ada3-b93ae35806b8") == SID_A
    assert FORMATS["claude"].session_id("S1/agent-x") == "claude-S1-agent-x"


def test_a_session_imported_under_the_plain_id_keeps_it(store, tmp_path, monkeypatch):
    one = _one_line_session(tmp_path / "src" / "one.jsonl", "proj.1", "ONE")
    with monkeypatch.context() as m:  # as versions before the hash suffix named it
        m.setattr(ClaudeImporter, "session_id", lambda self, source_id: safe_session_id("claude", source_id))
        do_import(store, "claude", one)
    assert _path_texts(store, "claude-proj_1") == ["ONE"]
    with one.open("a") as f:
        f.write(json.dumps(_claude("u-more", "u-ONE", "MORE") | {"sessionId": "proj.1"}) + "\n")
    _one_line_session(tmp_path / "src" / "two.jsonl", "proj_1", "TWO")
    report = do_import(store, "claude", tmp_path / "src")
    assert report.errors == []
    assert _path_texts(store, "claude-proj_1") == ["ONE", "MORE"]  # the old session grew, kept its id
    assert _path_texts(store, f"claude-proj_1-{_suffix('proj_1')}") == ["TWO"]  # the plain id was taken


def test_a_session_that_is_not_an_import_is_never_written_into(store, tmp_path):
    store.create(session_id="claude-mine").close()
    path = _one_line_session(tmp_path / "s.jsonl", "mine", "IMPORTED")
    report = do_import(store, "claude", path)
    assert report.errors == [] and len(store.open("claude-mine", readonly=True).entries()) == 0
    assert _path_texts(store, f"claude-mine-{_suffix('mine')}") == ["IMPORTED"]


def test_a_source_whose_every_id_is_taken_is_refused_per_file(store, tmp_path):
    for sid in ("claude-proj_1", f"claude-proj_1-{_suffix('proj_1')}"):
        store.create(session_id=sid).close()
    path = _one_line_session(tmp_path / "s.jsonl", "proj_1", "X")
    report = do_import(store, "claude", path)
    [error] = report.errors
    assert str(path) in error and "'proj_1'" in error and "never merged" in error
    assert report.files[0].error == error and report.events == 0


# --- a time no event can hold ---------------------------------------------------------------


@pytest.mark.parametrize("ts", [1e308, 1e20])
def test_a_time_beyond_year_9999_is_not_the_lines_time(store, tmp_path, ts):
    lines = [_claude("u1", None, "hi") | {"timestamp": ts}, _claude("u22", "u1", "x")]
    report = do_import(store, "claude", write_lines(tmp_path / "s.jsonl", lines))
    assert report.errors == [] and report.events == 2  # it takes the time of the line after it


def test_a_stored_time_this_build_cannot_read_does_not_stop_the_next_import(store, tmp_path):
    # import_events keeps another tool's times as they are (the log's loose
    # form); the next import into that session used to die on parsing one.
    path = copy_fixture("claude-code_v2.1.42_real_03eb5929.jsonl", tmp_path / "src")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:30]))
    first = do_import(store, "claude", path)
    [sid] = [s.session_id for s in first.sessions]
    with store.open(sid) as s:
        odd = str(uuid.UUID(int=uuid.UUID(s.entries()[-1].id).int + 1))
        s.import_events([Event(odd, s.head, "custom", None, "yesterday", {"note": "x"})])
    path.write_bytes(b"".join(lines))
    again = do_import(store, "claude", path)
    assert again.errors == [] and again.events > 0

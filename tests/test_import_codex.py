"""Codex rollouts: items, reasoning, calls, compaction, thread rollback."""

from __future__ import annotations

import json

from agentlog import Store
from agentlog.importers import FORMATS, run_import
from importers_support import copy_fixture, do_import, load, source_lines, write_lines

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores

SID = "019c0000-0000-7000-8000-000000000001"


def _ts(i):
    return f"2026-02-23T20:00:{i:02d}.000Z"


def _item(i, payload, kind="response_item"):
    return {"timestamp": _ts(i), "type": kind, "payload": payload}


def _user_turn(i, text):
    return [
        _item(i, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
        _item(i, {"type": "user_message", "message": text}, "event_msg"),
    ]


def _answer(i, text):
    return [_item(i, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})]


def _meta():
    return _item(0, {"id": SID, "cwd": "/w", "cli_version": "0.104.0"}, "session_meta")


def test_real_rollout(store, tmp_path):
    path = copy_fixture("codex_rollout_0.104_redacted_019c8bfe.jsonl", tmp_path)
    lines = source_lines(path)
    report = do_import(store, "codex", path)
    (s,) = report.sessions
    assert s.session_id == "codex-019c8bfe-ec25-79e0-97d7-bda6a9c575ff"
    loaded = load(store, s.session_id)
    items = [o["payload"] for o in lines if o["type"] == "response_item"]
    calls = [p for p in items if p["type"] == "function_call"]
    outputs = [p for p in items if p["type"] == "function_call_output"]
    assert [
        (e.record["id"], e.record["name"], e.record["arguments"]) for e in loaded.events if e.kind == "tool_call"
    ] == [(c["call_id"], c["name"], c["arguments"]) for c in calls]
    assert [
        (e.record["tool_call_id"], e.record["content"], e.record["name"])
        for e in loaded.events
        if e.kind == "tool_result"
    ] == [(o["call_id"], o["output"], next(c["name"] for c in calls if c["call_id"] == o["call_id"])) for o in outputs]
    # each reasoning item starts an assistant message; the reply after it is merged in
    reasoning = [e for e in loaded.events if e.kind == "message" and "reasoning" in e.record["source"]]
    assert len(reasoning) == sum(1 for p in items if p["type"] == "reasoning")
    assert s.merged == 6 and all(e.record["content"] for e in reasoning)
    messages = [p for p in items if p["type"] == "message"]
    assert loaded.kinds()["message"] == len(messages) + len(reasoning) - s.merged
    kept = [e.record["original"] for e in loaded.events if e.kind == "custom"]
    assert kept == [o for o in lines if o["type"] in ("session_meta", "turn_context", "event_msg")]
    assert loaded.meta["source_cwd"] == lines[0]["payload"]["cwd"]
    assert loaded.meta["model"] == next(o["payload"]["model"] for o in lines if o["type"] == "turn_context")
    assert [e.role for e in loaded.events if e.kind == "message"][:2] == ["developer", "developer"]


def test_thread_rollback_drops_turns_from_the_active_path(store, tmp_path):
    lines = [
        _meta(),
        *_user_turn(1, "one"),
        *_answer(2, "ONE"),
        *_user_turn(3, "two"),
        *_answer(4, "TWO"),
        *_user_turn(5, "three"),
        *_answer(6, "THREE"),
        _item(7, {"type": "thread_rolled_back", "num_turns": 2}, "event_msg"),
        *_user_turn(8, "four"),
        *_answer(9, "FOUR"),
    ]
    path = write_lines(tmp_path / f"rollout-2026-02-23T20-00-00-{SID}.jsonl", lines)
    do_import(store, "codex", path)
    loaded = load(store, f"codex-{SID}")

    def texts(events):
        return [e.record["content"][0]["text"] for e in events if e.kind == "message"]

    assert texts(loaded.path()) == ["one", "ONE", "four", "FOUR"]
    assert texts(loaded.events) == ["one", "ONE", "two", "TWO", "three", "THREE", "four", "FOUR"]
    rollback = next(
        e
        for e in loaded.events
        if e.kind == "custom" and e.record["original"]["payload"].get("type") == "thread_rolled_back"
    )
    assert rollback.branch_from == rollback.parent_id
    assert loaded.by_id[rollback.parent_id].record["content"][0]["text"] == "ONE"


def test_rollback_in_a_later_import(store, tmp_path):
    head = [_meta(), *_user_turn(1, "one"), *_answer(2, "ONE"), *_user_turn(3, "two"), *_answer(4, "TWO")]
    path = write_lines(tmp_path / f"rollout-x-{SID}.jsonl", head)
    do_import(store, "codex", path)
    with path.open("a") as f:
        for o in [
            _item(5, {"type": "thread_rolled_back", "num_turns": 1}, "event_msg"),
            *_user_turn(6, "again"),
            *_answer(7, "AGAIN"),
        ]:
            f.write(json.dumps(o) + "\n")
    do_import(store, "codex", path)
    loaded = load(store, f"codex-{SID}")
    assert [e.record["content"][0]["text"] for e in loaded.path() if e.kind == "message"] == [
        "one",
        "ONE",
        "again",
        "AGAIN",
    ]


def test_compacted_becomes_a_compaction(store, tmp_path):
    history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "one"}]}]
    lines = [
        _meta(),
        *_user_turn(1, "one"),
        *_answer(2, "ONE"),
        _item(3, {"message": "summary of it", "replacement_history": history}, "compacted"),
        _item(3, {"type": "context_compacted"}, "event_msg"),
        *_user_turn(4, "two"),
        *_answer(5, "TWO"),
        _item(6, {"message": "second", "replacement_history": []}, "compacted"),
    ]
    path = write_lines(tmp_path / f"rollout-x-{SID}.jsonl", lines)
    report = do_import(store, "codex", path)
    assert report.kinds["compaction"] == 2
    loaded = load(store, f"codex-{SID}")
    first, second = [e for e in loaded.events if e.kind == "compaction"]
    assert first.record["summary"] == "summary of it"
    assert first.record["structured"]["replacement_history"] == history
    assert second.record["previous_compaction_id"] == first.id
    with store.open(f"codex-{SID}", readonly=True) as s:
        assert s.context()[0].id == second.id


def test_calls_of_every_shape(store, tmp_path):
    lines = [
        _meta(),
        *_user_turn(1, "go"),
        _item(2, {"type": "reasoning", "summary": [], "encrypted_content": "xx"}),
        _item(
            2,
            {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch"},
        ),
        _item(3, {"type": "custom_tool_call_output", "call_id": "c1", "output": "done"}),
        _item(
            4,
            {
                "type": "local_shell_call",
                "call_id": "c2",
                "status": "completed",
                "action": {"type": "exec", "command": ["ls"]},
            },
        ),
        _item(
            5,
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": {"content": "boom", "success": False},
            },
        ),
        _item(6, {"type": "web_search_call", "status": "completed"}),
    ]
    path = write_lines(tmp_path / f"rollout-x-{SID}.jsonl", lines)
    do_import(store, "codex", path)
    loaded = load(store, f"codex-{SID}")
    calls = [e.record for e in loaded.events if e.kind == "tool_call"]
    assert [(c["id"], c["name"], c["arguments"]) for c in calls] == [
        ("c1", "apply_patch", '"*** Begin Patch"'),  # free-form input, as a JSON string
        ("c2", "local_shell", '{"type":"exec","command":["ls"]}'),
    ]
    results = [e.record for e in loaded.events if e.kind == "tool_result"]
    assert [(r["content"], r["is_error"], r["name"]) for r in results] == [
        ("done", False, "apply_patch"),
        ("boom", True, "local_shell"),
    ]
    assert loaded.events[-1].kind == "custom"
    assert loaded.events[-1].record["original"]["payload"]["type"] == "web_search_call"


def test_default_location_honours_codex_home(tmp_path, monkeypatch):
    write_lines(
        tmp_path / "ch" / "sessions" / "2026" / "02" / "23" / f"rollout-x-{SID}.jsonl",
        [_meta(), *_user_turn(1, "hi")],
    )
    write_lines(tmp_path / "ch" / "sessions" / "notes.jsonl", [{"not": "a rollout"}])
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    report = run_import(Store.memory(), FORMATS["codex"])
    assert [s.session_id for s in report.sessions] == [f"codex-{SID}"]
    assert len(report.files) == 1


def test_rollback_while_following(store, tmp_path):
    from agentlog.importers import follow

    head = [_meta(), *_user_turn(1, "one"), *_answer(2, "ONE"), *_user_turn(3, "two"), *_answer(4, "TWO")]
    tail = [
        _item(5, {"type": "thread_rolled_back", "num_turns": 1}, "event_msg"),
        *_user_turn(6, "again"),
        *_answer(7, "AGAIN"),
    ]
    path = write_lines(tmp_path / f"rollout-x-{SID}.jsonl", head)
    pending = iter(tail)

    def grow(_interval):
        with path.open("a") as f:
            f.write(json.dumps(next(pending)) + "\n")

    total = follow(store, FORMATS["codex"], [str(tmp_path)], interval=0, max_polls=5, sleep=grow)
    assert total.errors == []
    loaded = load(store, f"codex-{SID}")
    assert [e.record["content"][0]["text"] for e in loaded.path() if e.kind == "message"] == [
        "one",
        "ONE",
        "again",
        "AGAIN",
    ]
    with store.open(f"codex-{SID}"):  # follow released the session when it stopped
        pass

"""Claude Code transcripts: merging, parent links, rewinds, compaction,
summaries, resumes and forks across files, subagents."""

from __future__ import annotations

import json

import orjson

from agentlog import Store
from agentlog.importers import FORMATS, run_import
from importers_support import copy_fixture, do_import, load, source_lines, write_lines

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores

NIL = "00000000-0000-0000-0000-000000000000"
SIDE = ("custom", "label")


def _chain_parent(loaded, event):
    """The first non-side ancestor (side events are threaded into the chain)."""
    by_id = loaded.by_id
    parent = event.parent_id
    while parent != NIL and by_id[parent].kind in SIDE:
        parent = by_id[parent].parent_id
    return parent


def test_real_v2_merges_split_replies_and_keeps_everything(store, tmp_path):
    path = copy_fixture("claude-code_v2.1.42_real_03eb5929.jsonl", tmp_path)
    lines = source_lines(path)
    report = do_import(store, "claude", path)
    (s,) = report.sessions
    loaded = load(store, s.session_id)
    assistants = [e for e in loaded.events if e.kind == "message" and e.role == "assistant"]
    message_ids = {o["message"]["id"] for o in lines if o["type"] == "assistant"}
    assert len(assistants) == len(message_ids)
    assert s.merged == sum(1 for o in lines if o["type"] == "assistant") - len(message_ids)
    uses = [b for o in lines if o["type"] == "assistant" for b in o["message"]["content"] if b["type"] == "tool_use"]
    calls = [e for e in loaded.events if e.kind == "tool_call"]
    assert [(c.record["id"], c.record["name"], json.loads(c.record["arguments"])) for c in calls] == [
        (u["id"], u["name"], u["input"]) for u in uses
    ]
    results = [e for e in loaded.events if e.kind == "tool_result"]
    assert [r.record["tool_call_id"] for r in results] == [u["id"] for u in uses]
    assert all(r.record["name"] == u["name"] for r, u in zip(results, uses, strict=True))
    # a merged reply keeps thinking and text parts in order, and the last line's usage
    first = assistants[0]
    assert [p["type"] for p in first.record["content"]] == ["text", "thinking", "text"]
    assert first.record["usage"] == lines[6]["message"]["usage"]
    assert [m["line"] for m in first.record["source"]["merged"]] == [5, 6, 7]
    # toolUseResult, todos, hook progress and file-history snapshots are kept
    by_key = loaded.by_key()
    for o in lines:
        if "toolUseResult" in o:
            assert by_key[o["uuid"]].record["source"]["fields"]["toolUseResult"] == o["toolUseResult"]
        if "todos" in o:
            assert by_key[o["uuid"]].record["source"]["fields"]["todos"] == o["todos"]
    originals = [e.record["original"] for e in loaded.events if e.kind == "custom"]
    assert originals == [o for o in lines if o["type"] in ("progress", "file-history-snapshot", "system")]
    assert loaded.meta["model"] == "claude-opus-4-6"
    assert loaded.meta["source_cwd"] == "/home/user/project"


def test_parent_uuid_chains_become_parents_and_rewinds_branches(store, tmp_path):
    path = copy_fixture("claude-code_v2.1.42_real_03eb5929.jsonl", tmp_path)
    lines = source_lines(path)
    report = do_import(store, "claude", path)
    loaded = load(store, report.sessions[0].session_id)
    by_key = loaded.by_key()
    for o in lines:
        if o["type"] in ("user", "assistant") and o.get("parentUuid") in by_key:
            event = by_key[o["uuid"]]
            if event.kind == "tool_call":
                continue  # its parent is the reply's message event
            if (
                event.kind == "message"
                and event.role == "assistant"
                and o["uuid"] not in event.record["source"]["keys"][:1]
            ):
                continue  # merged into an earlier line's event
            parent = by_key[o["parentUuid"]]
            want = parent.id if parent.kind not in SIDE else _chain_parent(loaded, parent)
            assert _chain_parent(loaded, event) == want, o["uuid"]
    # the rewind: line 38 continues from the same stop-hook line as line 18
    u18, u38 = by_key[lines[17]["uuid"]], by_key[lines[37]["uuid"]]
    assert u18.parent_id == u38.parent_id and u38.branch_from == u38.parent_id
    assert lines[60]["uuid"] in by_key and loaded.head == by_key[lines[60]["uuid"]].id
    path_ids = {e.id for e in loaded.path()}
    assert u38.id in path_ids and u18.id not in path_ids


def test_compact_boundary_after_rewind(store, tmp_path):
    path = copy_fixture("claude-code_synthetic_dag_compact_after_rewind.jsonl", tmp_path)
    report = do_import(store, "claude", path)
    loaded = load(store, "claude-s1")
    by_key = loaded.by_key()
    assert len(loaded.children(by_key["a1"].id)) == 2
    assert by_key["b2u"].branch_from == by_key["a1"].id
    (compaction,) = [e for e in loaded.events if e.kind == "compaction"]
    assert compaction.parent_id == by_key["b2a2"].id  # logicalParentUuid
    assert compaction.record["summary"].startswith("This session is being continued")
    assert compaction.record["tokens_before"] == 150000
    assert compaction.record["trigger"] == "auto"
    assert compaction.record["first_kept_event_id"] is None
    assert by_key["cb"].id == by_key["cs"].id == compaction.id
    assert report.sessions[0].merged == 1
    with store.open("claude-s1", readonly=True) as s:
        context = s.context()
    assert [e.kind for e in context] == ["compaction", "message", "message"]
    assert context[-1].record["content"][0]["text"] == "Final answer"


def test_resumes_and_forks_across_sessions_copy_the_shared_path(store, tmp_path):
    path = copy_fixture("claude-code_synthetic_dag_fork.jsonl", tmp_path)
    report = do_import(store, "claude", path)
    assert {s.session_id: s.copied for s in report.sessions} == {
        "claude-s1": 0,
        "claude-s2": 5,
        "claude-s3": 3,
    }

    def texts(sid):
        return [e.record["content"][0]["text"] for e in load(store, sid).path()]

    assert texts("claude-s1") == ["Start", "Reply 1", "Middle", "Reply 2", "Last in s1"]
    assert texts("claude-s2") == [
        "Start",
        "Reply 1",
        "Middle",
        "Reply 2",
        "Last in s1",
        "Continue from e",
        "Continued reply",
        "End of s2",
    ]
    assert texts("claude-s3") == ["Start", "Reply 1", "Middle", "Fork from c", "Forked reply", "End of s3"]
    copied = [e for e in load(store, "claude-s3").events if "copied_from" in e.record["source"]]
    s1 = load(store, "claude-s1").by_id
    assert all(
        e.record["source"]["copied_from"]["session"] == "claude-s1" and e.record["source"]["copied_from"]["event"] in s1
        for e in copied
    )


def test_a_resume_in_a_later_run_copies_from_the_stored_session(store, tmp_path):
    lines = source_lines(copy_fixture("claude-code_synthetic_dag_fork.jsonl", tmp_path / "all"))
    s1 = write_lines(tmp_path / "p" / "s1.jsonl", [o for o in lines if o["sessionId"] == "s1"])
    s2 = write_lines(tmp_path / "p" / "s2.jsonl", [o for o in lines if o["sessionId"] == "s2"])
    do_import(store, "claude", s1)
    report = do_import(store, "claude", s2)
    assert [(s.session_id, s.copied) for s in report.sessions] == [("claude-s2", 5)]
    assert len(load(store, "claude-s2").path()) == 8


def test_resumed_history_repeated_in_a_new_file_is_deduplicated_by_uuid(store, tmp_path):
    lines = source_lines(copy_fixture("claude-code_synthetic_dag_fork.jsonl", tmp_path / "all"))
    s1 = [o for o in lines if o["sessionId"] == "s1"]
    # the resumed file repeats s1's lines (as they were) before its own
    s2 = s1 + [o for o in lines if o["sessionId"] == "s2"]
    a = write_lines(tmp_path / "p" / "s1.jsonl", s1)
    b = write_lines(tmp_path / "p" / "s2.jsonl", s2)
    report = do_import(store, "claude", tmp_path / "p")
    assert sorted(s.session_id for s in report.sessions) == ["claude-s1", "claude-s2"]
    assert sum(s.duplicates for s in report.sessions) == len(s1)
    assert len(load(store, "claude-s1").events) == 5
    assert len(load(store, "claude-s2").path()) == 8
    assert do_import(store, "claude", a, b).events == 0


def test_summary_records_become_labels_or_custom_events(store, tmp_path):
    path = copy_fixture("claude-code_v1.0.51_real_summary-records_326189cf.jsonl", tmp_path)
    lines = source_lines(path)
    report = do_import(store, "claude", path)
    loaded = load(store, report.sessions[0].session_id)
    summaries = [o for o in lines if o["type"] == "summary"]
    kept = [e.record["original"] for e in loaded.events if e.kind == "custom" and e.record["type"] == "summary"]
    assert kept == summaries  # their leafUuids are in other files
    # lines without a time (the summaries come first) take the first time there is
    first_time = next(o["timestamp"] for o in lines if "timestamp" in o)
    assert loaded.events[0].timestamp[:19] == first_time[:19]
    # one that points into this session becomes a label on that event
    leaf = next(o["uuid"] for o in lines if o["type"] == "assistant")
    grown = path.read_text() + json.dumps({"type": "summary", "summary": "Title here", "leafUuid": leaf}) + "\n"
    path.write_text(grown)
    do_import(store, "claude", path)
    loaded = load(store, report.sessions[0].session_id)
    (label,) = [e for e in loaded.events if e.kind == "label"]
    assert label.record["name"] == "Title here"
    assert label.record["target"] == loaded.by_key()[leaf].id
    assert loaded.meta["name"] == "Title here"
    tool_results = [o for o in lines if "toolUseResult" in o]
    assert tool_results and all(
        loaded.by_key()[o["uuid"]].record["source"]["fields"]["toolUseResult"] == o["toolUseResult"]
        for o in tool_results
    )


def _line(uuid, parent, kind="user", sid="main", **extra):
    message = (
        {"role": "user", "content": f"text {uuid}"}
        if kind == "user"
        else {
            "id": f"m-{uuid}",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "text", "text": f"reply {uuid}"}],
        }
    )
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": sid,
        "timestamp": "2025-01-01T00:00:00.000Z",
        "message": message,
        **extra,
    }


def test_a_rename_sets_the_title_the_last_one_winning(store, tmp_path):
    # /rename writes {"type": "custom-title", "customTitle": ...}; Claude Code
    # lists it before any summary, and so do `agentlog ls` and the viewer.
    lines = [
        _line("u1", None),
        _line("a1", "u1", "assistant"),
        {"type": "summary", "summary": "Auto summary", "leafUuid": "a1"},
        {"type": "custom-title", "customTitle": "first name", "sessionId": "main"},
    ]
    path = write_lines(tmp_path / "proj" / "main.jsonl", lines)
    report = do_import(store, "claude", path)
    sid = report.sessions[0].session_id
    loaded = load(store, sid)
    assert loaded.meta["title"] == "first name" and loaded.meta["name"] == "Auto summary"
    assert [e.record["original"] for e in loaded.events if e.kind == "custom"] == [lines[3]]
    renamed = {"type": "custom-title", "customTitle": "my own title", "sessionId": "main"}
    path.write_text(path.read_text() + json.dumps(renamed) + "\n")
    do_import(store, "claude", path)
    assert load(store, sid).meta["title"] == "my own title"
    assert next(i for i in store.list() if i.id == sid).title == "my own title"


def test_subagent_files_become_their_own_sessions(store, tmp_path):
    main = write_lines(tmp_path / "proj" / "main.jsonl", [_line("u1", None), _line("a1", "u1", "assistant")])
    write_lines(
        tmp_path / "proj" / "main" / "subagents" / "agent-x1.jsonl",
        [
            _line("s1", None, isSidechain=True, agentId="x1"),
            _line("s2", "s1", "assistant", isSidechain=True, agentId="x1"),
        ],
    )
    report = do_import(store, "claude", tmp_path / "proj")
    assert sorted(s.session_id for s in report.sessions) == ["claude-main", "claude-main-agent-x1"]
    sub = load(store, "claude-main-agent-x1")
    assert sub.meta["parent_session"] == "claude-main" and len(sub.events) == 2
    assert len(load(store, "claude-main").events) == 2
    assert main.exists()


def test_one_reply_over_lines_with_tool_calls(store, tmp_path):
    reply = [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "let me look"},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}},
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"c": "ls"}},
    ]
    lines = [_line("u1", None)]
    parent = "u1"
    for i, block in enumerate(reply):
        obj = _line(f"a{i}", parent, "assistant")
        obj["message"]["id"] = "msg-1"
        obj["message"]["content"] = [block]
        lines.append(obj)
        parent = f"a{i}"
    lines.append(
        {
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a3",
            "sessionId": "main",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "two", "is_error": True},
                ],
            },
            "toolUseResult": {"stdout": "two"},
        }
    )
    path = write_lines(tmp_path / "main.jsonl", lines)
    report = do_import(store, "claude", path)
    loaded = load(store, "claude-main")
    assert [(e.kind, e.role) for e in loaded.path()] == [
        ("message", "user"),
        ("message", "assistant"),
        ("tool_call", "assistant"),
        ("tool_call", "assistant"),
        ("tool_result", "tool"),
        ("tool_result", "tool"),
    ]
    msg = loaded.path()[1]
    assert [p["type"] for p in msg.record["content"]] == ["thinking", "text"]
    results = loaded.path()[4:]
    assert [(r.record["tool_call_id"], r.record["name"], r.record["is_error"]) for r in results] == [
        ("t1", "Read", False),
        ("t2", "Bash", True),
    ]
    assert results[0].record["source"]["fields"]["toolUseResult"] == {"stdout": "two"}
    assert report.sessions[0].merged == 3
    with store.open("claude-main", readonly=True) as s:
        chat = s.to_chat_messages()
    assert [m["role"] for m in chat] == ["user", "assistant", "tool", "tool"]
    assert orjson.loads(chat[1]["tool_calls"][1]["function"]["arguments"]) == {"c": "ls"}


def test_default_location_honours_claude_config_dir(tmp_path, monkeypatch):
    write_lines(tmp_path / "cfg" / "projects" / "p" / "main.jsonl", [_line("u1", None)])
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    store = Store.memory()
    report = run_import(store, FORMATS["claude"])
    assert [s.session_id for s in report.sessions] == ["claude-main"]

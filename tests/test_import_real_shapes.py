"""Shapes found in real session files of other tools (2026-12-03: 33 files
from public repositories' fixtures and recorded sessions), each reduced
here to the lines that showed it:

- pi: a compaction's ``firstKeptEntryId`` (or v1 ``firstKeptEntryIndex``)
  and a label's ``targetId`` name an assistant entry that also made tool
  calls: they mean the entry's message, not its last tool call;
- a live file imported before its model, directory or version appeared
  (Claude Code writes its permission mode and a snapshot before the first
  prompt; Codex's model comes with the first ``turn_context``) gets them
  on a later pass;
- Claude Code 1.0 files holding only ``summary`` lines, and 2.1's
  ``ai-title`` lines and the state lines it restates unchanged;
- Codex rollouts from before the ``session_meta`` envelope."""

from __future__ import annotations

from pathlib import Path

from agentlog import Store
from importers_support import do_import, load, write_lines

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores

CLAUDE_SID = "8a283a61-0000-4000-8000-00000000c1a0"
CODEX_SID = "0199a001-0000-7000-8000-00000000c0de"
USER_Q = {"role": "user", "content": "q"}
OK_TEXT = [{"type": "text", "text": "ok"}]


def _ts(i: int) -> str:
    return f"2026-01-01T00:00:{i:02d}.000Z"


# --- pi: what a pointer to an entry names -----------------------------------------


def _pi_start(session: str) -> list[dict]:
    """A pi v3 session's header and first user message (entry e1)."""
    return [
        {"type": "session", "version": 3, "id": session, "timestamp": _ts(0), "cwd": "/p"},
        {"type": "message", "id": "e1", "parentId": None, "timestamp": _ts(1), "message": USER_Q},
    ]


def _pi_entry(i: int, entry: str, parent: str, message: dict) -> dict:
    return {"type": "message", "id": entry, "parentId": parent, "timestamp": _ts(i), "message": message}


def _pi_session(compaction: dict) -> list[dict]:
    call = {"type": "toolCall", "id": "call-1", "name": "read", "arguments": {"path": "a.md"}}
    return [
        *_pi_start("pi-real"),
        _pi_entry(2, "e2", "e1", {"role": "assistant", "content": [{"type": "text", "text": "reading a.md"}, call]}),
        {
            "type": "message",
            "id": "e3",
            "parentId": "e2",
            "timestamp": _ts(3),
            "message": {"role": "toolResult", "toolCallId": "call-1", "toolName": "read", "content": "text of a"},
        },
        {"id": "e4", "parentId": "e3", "timestamp": _ts(4), "type": "compaction", "summary": "s", **compaction},
        {"type": "label", "id": "e5", "parentId": "e4", "timestamp": _ts(5), "targetId": "e2", "label": "read"},
        {
            "type": "message",
            "id": "e6",
            "parentId": "e5",
            "timestamp": _ts(6),
            "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        },
    ]


def _kept_and_labelled(store: Store, session_id: str) -> tuple[list[str], str]:
    loaded = load(store, session_id)
    (compaction,) = [e for e in loaded.events if e.kind == "compaction"]
    (label,) = [e for e in loaded.events if e.kind == "label"]
    kept = loaded.by_id[compaction.record["first_kept_event_id"]]
    target = loaded.by_id[label.record["target"]]
    with store.open(session_id, readonly=True) as s:
        context = [e.kind for e in s.context()]
    assert (kept.kind, kept.role, target.kind) == ("message", "assistant", "message")
    assert kept.record["content"] == [{"type": "text", "text": "reading a.md"}]
    return context, target.id


def test_pi_compaction_and_label_name_the_entrys_message(store: Store, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", _pi_session({"firstKeptEntryId": "e2"}))
    do_import(store, "pi", path)
    context, _ = _kept_and_labelled(store, "pi-pi-real")
    # the summary, the kept message with its call and result, the label, the reply
    assert context == ["compaction", "message", "tool_call", "tool_result", "label", "message"]


def test_pi_the_same_when_the_entry_came_in_an_earlier_import(store: Store, tmp_path: Path) -> None:
    lines = _pi_session({"firstKeptEntryId": "e2"})
    path = write_lines(tmp_path / "s.jsonl", lines[:4])
    do_import(store, "pi", path)
    write_lines(path, lines)
    report = do_import(store, "pi", path)
    assert report.errors == []
    context, _ = _kept_and_labelled(store, "pi-pi-real")
    assert context == ["compaction", "message", "tool_call", "tool_result", "label", "message"]


def test_pi_v1_compaction_index_names_the_message(store: Store, tmp_path: Path) -> None:
    lines = _pi_session({"firstKeptEntryIndex": 2})
    v1 = [{k: v for k, v in o.items() if k not in ("id", "parentId", "version")} for o in lines[:5]]
    v1[0]["id"] = "pi-real-v1"
    path = write_lines(tmp_path / "s.jsonl", v1)
    do_import(store, "pi", path)
    loaded = load(store, "pi-pi-real-v1")
    (compaction,) = [e for e in loaded.events if e.kind == "compaction"]
    kept = loaded.by_id[compaction.record["first_kept_event_id"]]
    assert (kept.kind, kept.record["content"]) == ("message", [{"type": "text", "text": "reading a.md"}])


# --- metadata a live file gives later ---------------------------------------------


def _claude(i: int, kind: str, **body: object) -> dict:
    return {"type": kind, "sessionId": CLAUDE_SID, "timestamp": _ts(i), **body}


def _claude_live() -> list[dict]:
    return [
        {"type": "permission-mode", "permissionMode": "default", "sessionId": CLAUDE_SID},
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {"trackedFileBackups": {}}},
        _claude(
            2,
            "user",
            uuid="u1",
            parentUuid=None,
            cwd="/work/proj",
            version="2.1.145",
            message={"role": "user", "content": "make the readme shorter"},
        ),
        _claude(
            3,
            "assistant",
            uuid="a1",
            parentUuid="u1",
            cwd="/work/proj",
            version="2.1.145",
            message={"id": "msg1", "role": "assistant", "model": "claude-x", "content": OK_TEXT},
        ),
    ]


def test_claude_live_file_gets_its_model_directory_and_version_on_a_later_pass(store: Store, tmp_path: Path) -> None:
    lines = _claude_live()
    path = write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", lines[:2])
    do_import(store, "claude", path)
    meta = load(store, f"claude-{CLAUDE_SID}").meta
    assert (meta["model"], meta.get("source_cwd"), meta.get("source_version")) == (None, None, None)
    write_lines(path, lines)
    assert do_import(store, "claude", path).errors == []
    meta = load(store, f"claude-{CLAUDE_SID}").meta
    assert (meta["model"], meta["source_cwd"], meta["source_version"]) == ("claude-x", "/work/proj", "2.1.145")


def test_a_later_pass_leaves_a_model_already_set(store: Store, tmp_path: Path) -> None:
    lines = _claude_live()
    path = write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", lines[:2])
    do_import(store, "claude", path)
    with store.open(f"claude-{CLAUDE_SID}") as s:
        s.update_meta(model="chosen-by-hand")
    write_lines(path, lines)
    do_import(store, "claude", path)
    meta = load(store, f"claude-{CLAUDE_SID}").meta
    assert (meta["model"], meta["source_cwd"]) == ("chosen-by-hand", "/work/proj")


def test_codex_live_file_gets_its_model_on_a_later_pass(store: Store, tmp_path: Path) -> None:
    lines = [
        {"timestamp": _ts(0), "type": "session_meta", "payload": {"id": CODEX_SID, "cwd": "/w", "cli_version": "0.9"}},
        {"timestamp": _ts(1), "type": "event_msg", "payload": {"type": "user_message", "message": "hi"}},
        {"timestamp": _ts(2), "type": "turn_context", "payload": {"cwd": "/w", "model": "gpt-x"}},
    ]
    path = write_lines(tmp_path / f"rollout-2026-01-01T00-00-00-{CODEX_SID}.jsonl", lines[:2])
    do_import(store, "codex", path)
    assert load(store, f"codex-{CODEX_SID}").meta["model"] is None
    write_lines(path, lines)
    do_import(store, "codex", path)
    meta = load(store, f"codex-{CODEX_SID}").meta
    assert (meta["model"], meta["source_cwd"], meta["source_version"]) == ("gpt-x", "/w", "0.9")


# --- Claude Code's title lines and summary-only files --------------------------------


def test_claude_ai_title_names_the_session_and_its_restatements_warn_nothing(store: Store, tmp_path: Path) -> None:
    title = {"type": "ai-title", "aiTitle": "Shorten the readme", "sessionId": CLAUDE_SID}
    lines = _claude_live()
    lines = [*lines[:3], title, lines[0], lines[3], title]
    path = write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", lines)
    report = do_import(store, "claude", path)
    (fr,) = report.files
    assert fr.warnings == [] and report.errors == []
    loaded = load(store, f"claude-{CLAUDE_SID}")
    assert loaded.meta["name"] == "Shorten the readme"
    assert loaded.lines() == set(range(1, len(lines) + 1))  # every line kept


def test_claude_file_of_summary_lines_only_is_its_named_session(store: Store, tmp_path: Path) -> None:
    """Claude Code 1.0 left such files in a project; the file's name is the
    session id, and the summaries are kept rather than refused."""
    summary = {"type": "summary", "summary": "TUI cache fix", "leafUuid": "2369a617-0000-4000-8000-000000000001"}
    path = write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", [summary])
    report = do_import(store, "claude", path)
    assert report.errors == []
    loaded = load(store, f"claude-{CLAUDE_SID}")
    assert [e.record["original"] for e in loaded.events] == [summary]


def test_a_file_with_no_session_id_and_no_such_name_is_still_an_error(store: Store, tmp_path: Path) -> None:
    summary = {"type": "summary", "summary": "s", "leafUuid": "2369a617-0000-4000-8000-000000000001"}
    path = write_lines(tmp_path / "notes.jsonl", [summary])
    report = do_import(store, "claude", path)
    assert report.errors == [f"{path}: no claude session id in any line"]


# --- Codex rollouts from before session_meta -------------------------------------------


def test_codex_rollout_before_the_envelope(store: Store, tmp_path: Path) -> None:
    sid = "c27a914d-0000-4000-8000-000000000000"
    lines = [
        {"id": sid, "timestamp": "2025-08-20T13:20:47.060Z", "instructions": None, "git": {"branch": "main"}},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list the files"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
        {"type": "function_call", "id": "fc_1", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "README.md"},
        {"record_type": "state"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "one file"}]},
    ]
    # a name without the id: the header names the session
    path = write_lines(tmp_path / "rollout-2025-08-20T13-20-47.jsonl", lines)
    report = do_import(store, "codex", path)
    assert report.errors == []
    loaded = load(store, f"codex-{sid}")
    assert [(e.kind, e.role) for e in loaded.events] == [
        ("custom", None),
        ("custom", None),
        ("message", "user"),
        ("message", "user"),
        ("message", "assistant"),
        ("tool_call", "assistant"),
        ("tool_result", "tool"),
        ("custom", None),
        ("message", "assistant"),
    ]
    call, result = [e for e in loaded.events if e.kind in ("tool_call", "tool_result")]
    assert (call.record["name"], call.record["id"], result.record["name"]) == ("shell", "c1", "shell")
    assert loaded.meta["name"] == "list the files"
    assert loaded.events[2].timestamp.startswith("2025-08-20T13:20:47")  # the header's time
    with store.open(f"codex-{sid}", readonly=True) as s:
        assert [m["role"] for m in s.to_chat_messages()][-4:] == ["user", "assistant", "tool", "assistant"]


def test_a_summary_only_file_leaves_the_summary_to_its_conversation(store: Store, tmp_path: Path) -> None:
    """Imported together, the conversation whose leaf a summary names keeps
    it (its label and its name); the file of summaries only, with no time to
    order it by, claims nothing (found in review: it came first and took it)."""
    other = "bbbbbbbb-0000-4000-8000-000000000001"
    summary = {"type": "summary", "summary": "Fix the cache", "leafUuid": "a1"}
    conversation = [
        *_claude_live()[2:],
        summary,
    ]
    conversation[1] = {**conversation[1], "uuid": "a1"}
    first = write_lines(tmp_path / "proj" / f"{CLAUDE_SID}.jsonl", conversation)
    second = write_lines(tmp_path / "proj" / f"{other}.jsonl", [summary])
    report = do_import(store, "claude", first, second)
    assert report.errors == []
    loaded = load(store, f"claude-{CLAUDE_SID}")
    assert loaded.meta["name"] == "Fix the cache"
    assert [e.kind for e in loaded.events] == ["message", "message", "label"]
    again = do_import(store, "claude", first, second)
    assert [(s.events, s.duplicates) for s in again.sessions] == [(0, 0), (0, 0)]


def test_summary_only_files_alone_each_keep_their_lines_and_import_once(store: Store, tmp_path: Path) -> None:
    summary = {"type": "summary", "summary": "Fix the cache", "leafUuid": "elsewhere"}
    sids = ["bbbbbbbb-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"]
    paths = [write_lines(tmp_path / "proj" / f"{sid}.jsonl", [summary]) for sid in sids]
    assert [s.events for s in do_import(store, "claude", *paths).sessions] == [1, 1]
    assert [s.events for s in do_import(store, "claude", *paths).sessions] == [0, 0]
    assert [len(load(store, f"claude-{sid}").events) for sid in sids] == [1, 1]


def test_pi_tool_call_written_without_arguments_took_none(store: Store, tmp_path: Path) -> None:
    call = {"type": "toolCall", "id": "call-a", "name": "read"}
    lines = [*_pi_start("pi-noargs"), _pi_entry(2, "e2", "e1", {"role": "assistant", "content": [call]})]
    do_import(store, "pi", write_lines(tmp_path / "s.jsonl", lines))
    (event,) = [e for e in load(store, "pi-pi-noargs").events if e.kind == "tool_call"]
    assert event.record["arguments"] == "{}"


# --- dates ------------------------------------------------------------------------------


def test_an_imported_session_is_dated_by_its_source(store: Store, tmp_path: Path) -> None:
    """``ls`` lists imported sessions by when they were active in their tool,
    not by when they were imported (found importing real files: every
    session was dated the minute of the import, in import order)."""
    lines = _claude_live()
    path = write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", lines[:3])
    do_import(store, "claude", path)
    (info,) = store.list()
    assert (info.created_at, info.updated_at) == ("2026-01-01T00:00:02.000000000Z", "2026-01-01T00:00:02.000000000Z")
    write_lines(path, lines)  # a later line, a later date
    do_import(store, "claude", path)
    (info,) = store.list()
    assert (info.created_at, info.updated_at) == ("2026-01-01T00:00:02.000000000Z", "2026-01-01T00:00:03.000000000Z")
    with store.open(f"claude-{CLAUDE_SID}") as s:  # a change in agentlog dates it again
        s.append("message", {"content": "continued here"}, role="user")
    (continued,) = store.list()
    assert continued.updated_at > "2026-06"
    more = [*lines, _claude(4, "user", uuid="u2", parentUuid="a1", message={"role": "user", "content": "and?"})]
    write_lines(path, more)  # an older source line does not date it back
    do_import(store, "claude", path)
    (info,) = store.list()
    assert info.updated_at == continued.updated_at


def test_a_claude_snapshot_update_does_not_take_its_first_snapshots_time(store: Store, tmp_path: Path) -> None:
    lines = _claude_live()[2:]
    update = {
        "type": "file-history-snapshot",
        "messageId": "m0",
        "isSnapshotUpdate": True,
        "snapshot": {"messageId": "m0", "timestamp": _ts(2), "trackedFileBackups": {}},
    }
    path = write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", [*lines, update])
    do_import(store, "claude", path)
    events = load(store, f"claude-{CLAUDE_SID}").events
    assert [e.timestamp[17:19] for e in events] == ["02", "03", "03"]  # after the reply, not before it


def test_pi_session_without_a_model_change_takes_its_first_replys_model(store: Store, tmp_path: Path) -> None:
    reply = {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "model": "gpt-5.5", "provider": "x"}
    lines = [*_pi_start("pi-model"), _pi_entry(2, "e2", "e1", reply)]
    path = write_lines(tmp_path / "s.jsonl", lines[:2])
    do_import(store, "pi", path)
    assert load(store, "pi-pi-model").meta["model"] is None
    write_lines(path, lines)  # the reply comes in a later pass
    do_import(store, "pi", path)
    assert load(store, "pi-pi-model").meta["model"] == "gpt-5.5"


# --- records as docs/records.md types them ----------------------------------------------


def test_imported_records_keep_the_record_types(store: Store, tmp_path: Path) -> None:
    """``reasoning`` is text and ``provider`` an object (docs/records.md,
    ``MessageRecord``): a Codex reasoning item and a source's provider name
    went there as an object and a string."""
    summary = [{"type": "summary_text", "text": "Looking at the files"}]
    codex = [
        {"timestamp": _ts(0), "type": "session_meta", "payload": {"id": CODEX_SID, "cwd": "/w"}},
        {"timestamp": _ts(1), "type": "response_item", "payload": {"type": "reasoning", "summary": summary}},
        {"timestamp": _ts(2), "type": "response_item", "payload": {"type": "reasoning", "encrypted_content": "x"}},
    ]
    do_import(store, "codex", write_lines(tmp_path / f"rollout-{CODEX_SID}.jsonl", codex))
    first, second = [e for e in load(store, f"codex-{CODEX_SID}").events if e.kind == "message"]
    assert first.record["reasoning"] == "Looking at the files"
    assert first.record["source"]["reasoning"] == {"summary": summary}
    assert "reasoning" not in second.record and second.record["source"]["reasoning"] == {"encrypted_content": "x"}
    do_import(store, "claude", write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", _claude_live()))
    (reply,) = [e for e in load(store, f"claude-{CLAUDE_SID}").events if e.role == "assistant"]
    assert reply.record["provider_name"] == "anthropic" and "provider" not in reply.record


# --- Claude Code's parallel tool calls ----------------------------------------------------


REPLY = {"id": "m2", "role": "assistant", "content": OK_TEXT}


def _tool_use(i: int, uuid: str, parent: str, call: str) -> dict:
    block = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"echo {call}"}}
    message = {"id": "msg-par", "role": "assistant", "model": "claude-x", "content": [block]}
    return _claude(i, "assistant", uuid=uuid, parentUuid=parent, message=message)


def _tool_result(i: int, uuid: str, parent: str, call: str) -> dict:
    block = {"type": "tool_result", "tool_use_id": call, "content": f"out {call}"}
    return _claude(i, "user", uuid=uuid, parentUuid=parent, message={"role": "user", "content": [block]})


def _parallel_calls(between: list[dict]) -> list[dict]:
    """A prompt, two parallel calls (the second a child of the first), the
    lines ``between``, then each result as a child of its own call's line."""
    return [
        _claude(1, "user", uuid="u1", parentUuid=None, message={"role": "user", "content": "run both"}),
        _tool_use(2, "c1", "u1", "toolu_1"),
        _tool_use(3, "c2", "c1", "toolu_2"),
        *between,
        _tool_result(4, "r1", "c1", "toolu_1"),
        _tool_result(5, "r2", "c2", "toolu_2"),
    ]


def test_claude_parallel_tool_results_follow_the_calls_without_a_branch(store: Store, tmp_path: Path) -> None:
    """Claude Code 2.1 writes each parallel call as a line, then each result
    as a child of its own call's line (a real 2.1.258 capture): the first
    result and the second call are both children of the first call. The
    first result went on a side branch, and the provider view told the model
    that call never ran."""
    lines = _parallel_calls([]) + [_claude(6, "assistant", uuid="a2", parentUuid="r2", message=REPLY)]
    do_import(store, "claude", write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", lines))
    loaded = load(store, f"claude-{CLAUDE_SID}")
    assert [e.kind for e in loaded.path()] == [
        "message",
        "message",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "message",
    ]
    assert len(loaded.path()) == len(loaded.events)  # no branch
    with store.open(f"claude-{CLAUDE_SID}", readonly=True) as s:
        tools = [m for m in s.to_chat_messages() if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [(c, f"out {c}") for c in ("toolu_1", "toolu_2")]


def test_a_result_under_an_earlier_message_still_branches(store: Store, tmp_path: Path) -> None:
    """A rewind is kept as the source has it: a line whose parent is a call
    behind a later message starts a branch there."""
    lines = [
        _claude(1, "user", uuid="u1", parentUuid=None, message={"role": "user", "content": "run"}),
        _tool_use(2, "c1", "u1", "toolu_1"),
        _tool_result(3, "r1", "c1", "toolu_1"),
        _claude(4, "assistant", uuid="a2", parentUuid="r1", message=REPLY),
        _tool_result(5, "r1b", "c1", "toolu_1"),
    ]
    do_import(store, "claude", write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", lines))
    loaded = load(store, f"claude-{CLAUDE_SID}")
    (call,) = [e for e in loaded.events if e.kind == "tool_call"]
    assert len(loaded.children(call.id)) == 2


def test_codex_0_15x_names_a_session_from_its_completed_user_item(store: Store, tmp_path: Path) -> None:
    typed = {"type": "UserMessage", "id": "u", "content": [{"type": "text", "text": "Read notes.txt\nthen more"}]}
    lines = [
        {"timestamp": _ts(0), "type": "session_meta", "payload": {"id": CODEX_SID, "cli_version": "0.154.0"}},
        {"timestamp": _ts(1), "type": "event_msg", "payload": {"type": "item_completed", "item": typed}},
    ]
    do_import(store, "codex", write_lines(tmp_path / f"rollout-{CODEX_SID}.jsonl", lines))
    assert load(store, f"codex-{CODEX_SID}").meta["name"] == "Read notes.txt"


def test_codex_compaction_with_no_message_reads_its_replacement_history(store: Store, tmp_path: Path) -> None:
    """Recent Codex leaves ``message`` empty and puts what it continues with
    in ``replacement_history``: the context was the bare summary heading."""
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the parser"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Summary: tests pass now"}]},
    ]
    lines = [
        {"timestamp": _ts(0), "type": "session_meta", "payload": {"id": CODEX_SID}},
        {"timestamp": _ts(1), "type": "compacted", "payload": {"message": "", "replacement_history": history}},
    ]
    do_import(store, "codex", write_lines(tmp_path / f"rollout-{CODEX_SID}.jsonl", lines))
    with store.open(f"codex-{CODEX_SID}", readonly=True) as s:
        (summary, *_) = s.to_chat_messages()
    assert summary["content"].endswith("user: fix the parser\n\nuser: Summary: tests pass now")


def test_pi_fork_names_its_parent_as_imported(store: Store, tmp_path: Path) -> None:
    parent_file = "/home/u/.pi/agent/sessions/--w--/2026-01-01T00-00-00-000Z_0199-parent.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "fork", "timestamp": _ts(0), "cwd": "/w", "parentSession": parent_file},
        {"type": "message", "id": "e1", "parentId": None, "timestamp": _ts(1), "message": USER_Q},
    ]
    do_import(store, "pi", write_lines(tmp_path / "s.jsonl", lines))
    assert load(store, "pi-fork").meta["parent_session"] == "pi-0199-parent"


def test_codex_fork_names_the_thread_it_came_from(store: Store, tmp_path: Path) -> None:
    origin = "0199a000-0000-7000-8000-000000000002"
    meta = {"id": CODEX_SID, "forked_from_id": origin, "cwd": "/w"}
    lines = [
        {"timestamp": _ts(0), "type": "session_meta", "payload": meta},
        {"timestamp": _ts(0), "type": "session_meta", "payload": {"id": origin, "cwd": "/w"}},  # the origin's, copied
    ]
    do_import(store, "codex", write_lines(tmp_path / f"rollout-{CODEX_SID}.jsonl", lines))
    assert load(store, f"codex-{CODEX_SID}").meta["parent_session"] == f"codex-{origin}"


def test_parallel_results_join_the_chain_past_hook_progress_under_a_call(store: Store, tmp_path: Path) -> None:
    """Claude Code writes a hook's progress line under the tool_use line it
    runs for (2.1.42), and the result still names the call's line (found in
    review: the result branched)."""
    progress = [
        _claude(3 + n, "progress", uuid=f"p{n}", parentUuid="c2" if n == 0 else f"p{n - 1}", data={"n": n})
        for n in range(300)  # side lines do not count towards the reach
    ]
    lines = _parallel_calls(progress)
    do_import(store, "claude", write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", lines))
    loaded = load(store, f"claude-{CLAUDE_SID}")
    assert len(loaded.path()) == len(loaded.events)  # no branch
    assert [e.record["tool_call_id"] for e in loaded.path() if e.kind == "tool_result"] == ["toolu_1", "toolu_2"]


def test_codex_subagent_names_the_thread_that_spawned_it(store: Store, tmp_path: Path) -> None:
    origin = "0199a000-0000-7000-8000-000000000003"
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": origin, "depth": 1}}}
    lines = [{"timestamp": _ts(0), "type": "session_meta", "payload": {"id": CODEX_SID, "source": spawn}}]
    do_import(store, "codex", write_lines(tmp_path / f"rollout-{CODEX_SID}.jsonl", lines))
    assert load(store, f"codex-{CODEX_SID}").meta["parent_session"] == f"codex-{origin}"


def test_pi_entry_repeating_an_id_with_other_content_is_kept_and_named(store: Store, tmp_path: Path) -> None:
    """Two entries of one file claim one id (seen in a pi file): the first
    keeps it, the second is kept beside the timeline and reported, where it
    used to be counted as a duplicate and dropped without a word."""
    lines = [
        *_pi_start("pi-dup"),
        _pi_entry(2, "e2", "e1", {"role": "assistant", "content": [{"type": "text", "text": "first"}]}),
        _pi_entry(3, "e2", "e1", {"role": "assistant", "content": [{"type": "text", "text": "second"}]}),
    ]
    lines.append(lines[1])  # an exact repeat: a duplicate, as before
    report = do_import(store, "pi", write_lines(tmp_path / "s.jsonl", lines))
    (session,) = report.sessions
    assert session.duplicates == 1
    warnings = [(n, text) for fr in report.files for n, text in fr.warnings]
    assert [n for n, text in warnings if "pi-dup:e2" in text] == [4]
    loaded = load(store, "pi-pi-dup")
    texts = [e.record["content"][0]["text"] for e in loaded.path() if e.role == "assistant"]
    assert texts == ["first"]
    (kept,) = [e for e in loaded.events if e.kind == "custom" and "error" in (e.record or {})]
    assert kept.record["error"].startswith("has the id 'pi-dup:e2' of line 3")
    assert "second" in str(kept.record)
    assert kept.record["source"]["side"] is True  # later entries never take it as their parent


def test_a_follow_poll_between_a_replys_call_lines_keeps_one_reply(store: Store, tmp_path: Path) -> None:
    """Claude Code writes a reply's blocks as they finish streaming, often
    seconds apart, so a --follow poll lands between two call lines. The
    second call could not join the reply already written: it became a
    message of its own, and the first result branched (the provider view
    then said that call never ran)."""
    from agentlog.importers import FORMATS
    from agentlog.importers.following import Follower

    lines = _parallel_calls([]) + [_claude(6, "assistant", uuid="a2", parentUuid="r2", message=REPLY)]
    path = tmp_path / f"{CLAUDE_SID}.jsonl"
    with Follower(store, FORMATS["claude"], [str(path)]) as follower:
        for end in (2, 3, 4, 5, 6):  # a poll after each line from the first call on
            write_lines(path, lines[:end])
            follower.poll([str(path)])
    loaded = load(store, f"claude-{CLAUDE_SID}")
    kinds = [e.kind for e in loaded.path()]
    assert kinds == ["message", "message", "tool_call", "tool_call", "tool_result", "tool_result", "message"]
    assert len(loaded.path()) == len(loaded.events)  # no branch
    second = [e for e in loaded.path() if e.kind == "tool_call"][1]
    assert second.record["source"]["line"] == 3  # the line it came from, kept on the call


def test_an_import_run_between_a_replys_call_lines_keeps_one_reply(store: Store, tmp_path: Path) -> None:
    """The same as a --follow poll, across two separate imports (a periodic
    import that ran while Claude Code was writing the reply): the second
    run finds the reply the stored session ends with."""
    lines = _parallel_calls([]) + [_claude(6, "assistant", uuid="a2", parentUuid="r2", message=REPLY)]
    path = tmp_path / f"{CLAUDE_SID}.jsonl"
    do_import(store, "claude", write_lines(path, lines[:2]))  # the prompt and the first call
    do_import(store, "claude", write_lines(path, lines))
    loaded = load(store, f"claude-{CLAUDE_SID}")
    kinds = [e.kind for e in loaded.path()]
    assert kinds == ["message", "message", "tool_call", "tool_call", "tool_result", "tool_result", "message"]
    assert len(loaded.path()) == len(loaded.events)  # no branch


def test_a_codex_header_before_the_envelope_gives_its_directory_and_version(store: Store, tmp_path: Path) -> None:
    sid = "c27a914d-0000-4000-8000-000000000001"
    header = {"id": sid, "timestamp": "2025-08-20T13:20:47.060Z", "instructions": None, "git": {}}
    lines = [
        {**header, "cwd": "/home/u/proj", "cli_version": "0.30.0"},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    ]
    do_import(store, "codex", write_lines(tmp_path / f"rollout-2025-08-20T13-20-47-{sid}.jsonl", lines))
    meta = load(store, f"codex-{sid}").meta
    assert (meta["source_cwd"], meta["source_version"]) == ("/home/u/proj", "0.30.0")

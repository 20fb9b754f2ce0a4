"""pi sessions: v1 to v3, migrations, labels, models, titles, branches."""

from __future__ import annotations

import json

import pytest

from agentlog import Store
from agentlog.importers import FORMATS, run_import
from importers_support import copy_fixture, do_import, load, source_lines, write_lines

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores

SID = "5e551011-0000-4000-8000-000000000001"


def _ts(i):
    return f"2026-01-01T00:00:{i:02d}.000Z"


def _msg(i, role, content, **extra):
    return {"type": "message", "timestamp": _ts(i), "message": {"role": role, "content": content, **extra}}


def _v3(i, entry_id, parent, body):
    return {"id": entry_id, "parentId": parent, "timestamp": _ts(i), **body}


def test_v1_fixture_is_chained_in_file_order(store, tmp_path):
    path = copy_fixture("pi_v1_legacy_large-session_head45.jsonl", tmp_path)
    lines = source_lines(path)
    report = do_import(store, "pi", path)
    (s,) = report.sessions
    loaded = load(store, s.session_id)
    assert s.session_id == f"pi-{lines[0]['id']}"
    assert loaded.path() == loaded.events  # one chain, header first
    assert loaded.events[0].record["original"] == lines[0]
    messages = [o["message"] for o in lines if o["type"] == "message"]
    calls = [p for m in messages if m["role"] == "assistant" for p in m["content"] if p["type"] == "toolCall"]
    assert [
        (e.record["id"], e.record["name"], json.loads(e.record["arguments"]))
        for e in loaded.events
        if e.kind == "tool_call"
    ] == [(c["id"], c["name"], c["arguments"]) for c in calls]
    results = [m for m in messages if m["role"] == "toolResult"]
    assert [
        (e.record["tool_call_id"], e.record["name"], e.record["is_error"])
        for e in loaded.events
        if e.kind == "tool_result"
    ] == [(m["toolCallId"], m["toolName"], m["isError"]) for m in results]
    assert loaded.kinds()["message"] == sum(1 for m in messages if m["role"] in ("user", "assistant"))
    (change,) = [e for e in loaded.events if e.kind == "custom" and e.record["type"] == "model_change"]
    assert change.record["model"] == {"provider": "anthropic", "id": "claude-sonnet-4-5", "role": None}
    assert loaded.meta["model"] == "claude-sonnet-4-5"
    assert loaded.meta["source_cwd"] == lines[0]["cwd"]
    for e in loaded.events:
        if e.kind == "tool_result":
            line = lines[e.record["source"]["line"] - 1]
            if "details" in line["message"]:
                assert e.record["source"]["message"]["details"] == line["message"]["details"]


def test_v1_compaction_index_and_bash_execution(store, tmp_path):
    lines = [
        {
            "type": "session",
            "id": SID,
            "timestamp": _ts(0),
            "cwd": "/w",
            "branchedFrom": "/old/session.jsonl",
            "provider": "anthropic",
            "modelId": "m1",
        },
        _msg(1, "user", [{"type": "text", "text": "one"}]),
        _msg(2, "assistant", [{"type": "text", "text": "ONE"}], model="m1"),
        "{ not json",
        _msg(3, "user", [{"type": "text", "text": "two"}]),
        _msg(4, "bashExecution", None, command="ls", output="a b", exitCode=0),
        {
            "type": "compaction",
            "timestamp": _ts(5),
            "summary": "so far",
            "firstKeptEntryIndex": 3,
            "tokensBefore": 1234,
        },
        _msg(6, "user", [{"type": "text", "text": "three"}]),
    ]
    path = write_lines(tmp_path / "s.jsonl", lines)
    report = do_import(store, "pi", path)
    assert [(n, e.split(":")[0]) for _, n, e in report.malformed] == [(4, "invalid JSON")]
    loaded = load(store, f"pi-{SID}")
    (compaction,) = [e for e in loaded.events if e.kind == "compaction"]
    # pi counts parsed entries with the header as 0, skipping the bad line:
    # index 3 is the user message "two" (line 5)
    kept = loaded.by_id[compaction.record["first_kept_event_id"]]
    assert kept.record["content"][0]["text"] == "two"
    assert compaction.record["tokens_before"] == 1234 and compaction.record["summary"] == "so far"
    # pi sends the model a command the user ran as the user's message: so does the context.
    bash = next(
        e for e in loaded.events if e.record.get("source", {}).get("message", {}).get("role") == "bashExecution"
    )
    assert (bash.kind, bash.role, bash.record["content"]) == ("message", "user", "Ran `ls`\n```\na b\n```")
    assert bash.record["source"]["message"]["command"] == "ls"
    assert loaded.meta["parent_session"] == "/old/session.jsonl"
    with store.open(f"pi-{SID}", readonly=True) as s:
        context = s.context()
    assert context[0].id == compaction.id
    assert [text_of(e) for e in context if e.kind == "message"] == ["two", bash.record["content"], "three"]


def text_of(event) -> str:
    content = event.record["content"]
    return content if isinstance(content, str) else content[0]["text"]


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"output": "", "exitCode": 0}, "Ran `make`\n(no output)"),
        ({"output": "boom", "exitCode": 2}, "Ran `make`\n```\nboom\n```\n\nCommand exited with code 2"),
        ({"output": "part", "cancelled": True, "exitCode": None}, "Ran `make`\n```\npart\n```\n\n(command cancelled)"),
        (
            {"output": "head", "exitCode": 0, "truncated": True, "fullOutputPath": "/tmp/out.log"},
            "Ran `make`\n```\nhead\n```\n\n[Output truncated. Full output: /tmp/out.log]",
        ),
    ],
    ids=["no-output", "failed", "cancelled", "truncated"],
)
def test_a_command_the_user_ran_reads_as_pi_sent_it(store, tmp_path, fields, text):
    lines = [
        {"type": "session", "version": 3, "id": SID, "timestamp": _ts(0), "cwd": "/w"},
        _v3(1, "aaaa0001", None, _msg(1, "bashExecution", None, command="make", **fields)),
        _v3(
            2,
            "aaaa0002",
            "aaaa0001",
            _msg(2, "bashExecution", None, command="env", output="SECRET=1", excludeFromContext=True),
        ),
    ]
    do_import(store, "pi", write_lines(tmp_path / "s.jsonl", lines))
    k = load(store, f"pi-{SID}").by_key()
    ran, hidden = k[f"{SID}:aaaa0001"], k[f"{SID}:aaaa0002"]
    assert (ran.kind, ran.role, ran.record["content"]) == ("message", "user", text)
    # ``!!env`` was kept out of pi's context: it stays out of agentlog's.
    assert hidden.kind == "custom" and hidden.record["original"]["message"]["command"] == "env"
    with store.open(f"pi-{SID}", readonly=True) as s:
        assert [e.id for e in s.context() if e.kind == "message"] == [ran.id]


def test_v2_hook_message_and_v3_tree(store, tmp_path):
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": SID,
            "timestamp": _ts(0),
            "cwd": "/w",
            "parentSession": "/p/parent.jsonl",
        },
        _v3(1, "aaaa0001", None, _msg(1, "user", "hello")),
        _v3(2, "aaaa0002", "aaaa0001", _msg(2, "assistant", [{"type": "text", "text": "hi"}])),
        _v3(3, "aaaa0003", "aaaa0002", _msg(3, "user", "first try")),
        _v3(4, "aaaa0004", "aaaa0002", _msg(4, "user", "second try")),
        _v3(
            5,
            "aaaa0005",
            "aaaa0004",
            {"type": "branch_summary", "fromId": "aaaa0003", "summary": "tried first"},
        ),
        _v3(6, "aaaa0006", "aaaa0005", {"type": "label", "targetId": "aaaa0001", "label": "start"}),
        _v3(7, "aaaa0007", "aaaa0006", {"type": "model_change", "model": "openai/gpt-5", "role": "default"}),
        _v3(
            8,
            "aaaa0008",
            "aaaa0007",
            {"type": "model_change", "provider": "anthropic", "modelId": "claude-x"},
        ),
        _v3(9, "aaaa0009", "aaaa0008", {"type": "session_info", "name": "My session"}),
        _v3(10, "aaaa000a", "aaaa0009", _msg(10, "hookMessage", "from a hook")),
        _v3(11, "aaaa000b", "aaaa000a", {"type": "thinking_level_change", "thinkingLevel": "high"}),
        _v3(
            12,
            "aaaa000c",
            "aaaa000b",
            {"type": "custom_message", "customType": "note", "content": "from ext", "display": True},
        ),
    ]
    path = write_lines(tmp_path / "s.jsonl", lines)
    do_import(store, "pi", path)
    loaded = load(store, f"pi-{SID}")
    k = loaded.by_key()
    first, second = k[f"{SID}:aaaa0003"], k[f"{SID}:aaaa0004"]
    assert first.parent_id == second.parent_id == k[f"{SID}:aaaa0002"].id
    assert second.branch_from == second.parent_id
    summary = k[f"{SID}:aaaa0005"]
    assert summary.kind == "branch_summary" and summary.record["abandoned_head"] == first.id
    label = k[f"{SID}:aaaa0006"]
    assert label.kind == "label" and label.record == {
        **label.record,
        "name": "start",
        "target": k[f"{SID}:aaaa0001"].id,
    }
    models = [e.record["model"] for e in loaded.events if e.record.get("type") == "model_change"]
    assert models == [
        {"provider": "openai", "id": "gpt-5", "role": "default"},
        {"provider": "anthropic", "id": "claude-x", "role": None},
    ]
    assert loaded.meta["model"] == "claude-x"
    assert loaded.meta["name"] == "My session"
    assert loaded.meta["parent_session"] == "/p/parent.jsonl"
    hook = k[f"{SID}:aaaa000a"]  # sent to the model as the user's, as pi does
    assert (hook.kind, hook.role, hook.record["content"]) == ("message", "user", "from a hook")
    assert hook.record["source"]["message"]["role"] == "hookMessage"
    assert loaded.head == k[f"{SID}:aaaa000c"].id
    note = k[f"{SID}:aaaa000c"]
    assert (note.kind, note.role, note.record["content"], note.record["custom_type"]) == (
        "message",
        "user",
        "from ext",
        "note",
    )
    assert k[f"{SID}:aaaa0001"].parent_id == loaded.events[0].id  # the header event


def test_oh_my_pi_title_slot_rewritten_in_place(store, tmp_path):
    def slot(title):
        body = {"type": "title", "v": 1, "title": title, "updatedAt": _ts(0), "pad": ""}
        text = json.dumps(body)
        body["pad"] = " " * (256 - len(text) - 1)
        return json.dumps(body)

    header = {
        "type": "session",
        "version": 3,
        "id": SID,
        "timestamp": _ts(0),
        "cwd": "/w",
        "title": "auto title",
    }
    lines = [slot("first title"), header, _v3(1, "b1", None, _msg(1, "user", "hi"))]
    path = write_lines(tmp_path / "s.jsonl", lines)
    assert len(path.read_text().splitlines()[0]) == 255
    do_import(store, "pi", path)
    assert load(store, f"pi-{SID}").meta["name"] == "first title"
    text = path.read_text().splitlines(keepends=True)
    text[0] = slot("renamed") + "\n"
    text.append(json.dumps(_v3(2, "b2", "b1", _msg(2, "user", "more"))) + "\n")
    path.write_text("".join(text))
    report = do_import(store, "pi", path)
    assert report.errors == [] and report.events == 1
    loaded = load(store, f"pi-{SID}")
    assert loaded.meta["name"] == "renamed"
    assert [e.record["content"] for e in loaded.path() if e.kind == "message"] == ["hi", "more"]


def test_default_location_honours_pi_agent_dir(tmp_path, monkeypatch):
    write_lines(
        tmp_path / "agent" / "sessions" / "--w--" / "s.jsonl",
        [{"type": "session", "version": 3, "id": SID, "timestamp": _ts(0), "cwd": "/w"}],
    )
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    report = run_import(Store.memory(), FORMATS["pi"])
    assert [s.session_id for s in report.sessions] == [f"pi-{SID}"]


def test_pi_session_dir_overrides_the_agent_dir(tmp_path, monkeypatch):
    write_lines(
        tmp_path / "elsewhere" / "s.jsonl",
        [{"type": "session", "version": 3, "id": SID, "timestamp": _ts(0), "cwd": "/w"}],
    )
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "elsewhere"))
    report = run_import(Store.memory(), FORMATS["pi"])
    assert [s.session_id for s in report.sessions] == [f"pi-{SID}"]


def test_paths_may_start_with_a_tilde(tmp_path, monkeypatch):
    write_lines(
        tmp_path / "sessions" / "s.jsonl",
        [{"type": "session", "version": 3, "id": SID, "timestamp": _ts(0), "cwd": "/w"}],
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    report = run_import(Store.memory(), FORMATS["pi"], ["~/sessions"])
    assert [s.session_id for s in report.sessions] == [f"pi-{SID}"]


def test_v1_compaction_arriving_in_a_later_poll(store, tmp_path):
    from agentlog.importers import follow

    head = [
        {"type": "session", "id": SID, "timestamp": _ts(0), "cwd": "/w"},
        _msg(1, "user", [{"type": "text", "text": "one"}]),
        _msg(2, "assistant", [{"type": "text", "text": "ONE"}]),
        _msg(3, "user", [{"type": "text", "text": "two"}]),
    ]
    path = write_lines(tmp_path / "s.jsonl", head)
    later = [{"type": "compaction", "timestamp": _ts(4), "summary": "s", "firstKeptEntryIndex": 2}]

    def grow(_interval):
        with path.open("a") as f:
            for o in later:
                f.write(json.dumps(o) + "\n")
        later.clear()

    total = follow(store, FORMATS["pi"], [str(path)], interval=0, max_polls=2, sleep=grow)
    assert total.errors == [] and total.kinds["compaction"] == 1
    loaded = load(store, f"pi-{SID}")
    (compaction,) = [e for e in loaded.events if e.kind == "compaction"]
    assert loaded.by_id[compaction.record["first_kept_event_id"]].record["content"][0]["text"] == "ONE"


def test_branch_summary_as_pi_writes_it_names_the_branch_it_left(store, tmp_path):
    # pi's branchWithSummary writes fromId == parentId (the entry it branches
    # from) and "root" for a new root; the branch it leaves ends at the entry
    # it wrote just before.
    lines = [
        {"type": "session", "version": 3, "id": SID, "timestamp": _ts(0), "cwd": "/w"},
        _v3(1, "bb000001", None, _msg(1, "user", "try A")),
        _v3(2, "bb000002", "bb000001", _msg(2, "assistant", [{"type": "text", "text": "A fails"}])),
        _v3(3, "bb000003", "bb000002", _msg(3, "user", "why?")),
        _v3(4, "bb000004", "bb000003", _msg(4, "assistant", [{"type": "text", "text": "because"}])),
        _v3(5, "bb000005", "bb000001", {"type": "branch_summary", "fromId": "bb000001", "summary": "A failed"}),
        _v3(6, "bb000006", "bb000005", _msg(6, "user", "try B")),
        _v3(7, "bb000007", None, {"type": "branch_summary", "fromId": "root", "summary": "B abandoned"}),
        _v3(8, "bb000008", "bb000007", _msg(8, "user", "start over")),
    ]
    do_import(store, "pi", write_lines(tmp_path / "s.jsonl", lines))
    k = load(store, f"pi-{SID}").by_key()
    first = k[f"{SID}:bb000005"].record
    assert first["abandoned_head"] == k[f"{SID}:bb000004"].id
    assert first["common_ancestor"] == k[f"{SID}:bb000001"].id
    second = k[f"{SID}:bb000007"].record
    assert second["abandoned_head"] == k[f"{SID}:bb000006"].id
    assert second["common_ancestor"] == "00000000-0000-0000-0000-000000000000"


def test_labels_reach_the_session_labels(tmp_path, store):
    """pi's labels are the session's labels too, so 'agentlog label' lists
    them and a ref names them; pi keeps one label an entry, and a label
    entry with no label clears it. A name a ref cannot be (spaces, HEAD)
    stays a label event only."""
    lines = [
        {"type": "session", "version": 3, "id": SID, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        _v3(1, "aaaa0001", None, _msg(1, "user", "hello")),
        _v3(2, "aaaa0002", "aaaa0001", _msg(2, "assistant", [{"type": "text", "text": "hi"}])),
        _v3(3, "aaaa0003", "aaaa0002", {"type": "label", "targetId": "aaaa0001", "label": "start"}),
        _v3(4, "aaaa0004", "aaaa0003", {"type": "label", "targetId": "aaaa0002", "label": "reply"}),
        _v3(5, "aaaa0005", "aaaa0004", {"type": "label", "targetId": "aaaa0002", "label": "answer"}),
        _v3(6, "aaaa0006", "aaaa0005", {"type": "label", "targetId": "aaaa0001", "label": "before refactor"}),
    ]
    path = write_lines(tmp_path / "s.jsonl", lines)
    do_import(store, "pi", path)
    loaded = load(store, f"pi-{SID}")
    k = loaded.by_key()
    # "reply" was replaced by "answer"; "start" by a name no ref can type.
    assert loaded.meta["labels"] == {"answer": k[f"{SID}:aaaa0002"].id}
    assert [e.record["name"] for e in loaded.events if e.kind == "label"] == [
        "start",
        "reply",
        "answer",
        "before refactor",
    ]
    more = [  # pi clears a label: an entry with no label
        _v3(7, "aaaa0007", "aaaa0006", {"type": "label", "targetId": "aaaa0002"}),
        _v3(8, "aaaa0008", "aaaa0007", {"type": "label", "targetId": "aaaa0001", "label": "v1"}),
    ]
    with path.open("a") as f:
        f.writelines(json.dumps(line) + "\n" for line in more)
    do_import(store, "pi", path)
    loaded = load(store, f"pi-{SID}")
    assert loaded.meta["labels"] == {"v1": loaded.by_key()[f"{SID}:aaaa0001"].id}

"""Importer edge cases, with files built from the tools' current formats:
a UTF-8 byte order mark before a file's first line, where a reply's tool
calls sat among its text (Claude Code and pi), and the note an unfinished
last line gets from a one-shot ``agentlog import``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentlog import Store
from agentlog.importers import FORMATS, run_import
from agentlog.providers_anthropic import to_anthropic_input
from cli_support import run
from importers_support import copy_fixture, do_import, load, write_lines

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores

BOM = b"\xef\xbb\xbf"
CLAUDE_SID = "dec04000-0000-4000-8000-000000000001"
PI_SID = "dec04000-0000-4000-8000-000000000002"


def _with_bom(path: Path) -> Path:
    path.write_bytes(BOM + path.read_bytes())
    return path


# --- a byte order mark -------------------------------------------------------------------
def test_a_pi_file_starting_with_a_byte_order_mark_is_imported_and_says_so(store: Store, tmp_path: Path) -> None:
    # Before, the header line was malformed, so the file named no session and
    # was refused whole ("no pi session id in any line").
    path = _with_bom(copy_fixture("pi_v1_legacy_large-session_head45.jsonl", tmp_path / "src"))
    plain = Store.memory()
    expected = do_import(plain, "pi", copy_fixture("pi_v1_legacy_large-session_head45.jsonl", tmp_path / "plain"))
    report = do_import(store, "pi", path)
    assert report.errors == [] and report.malformed == []
    assert report.events == expected.events and dict(report.kinds) == dict(expected.kinds)
    assert [(n, w) for _, n, w in report.warnings] == [(1, "a UTF-8 byte order mark before the line was left out")]
    loaded = load(store, report.sessions[0].session_id)
    header = loaded.events[0].record
    assert header["type"] == "session" and header["source"]["repaired"].startswith("a UTF-8 byte order mark")
    assert loaded.meta["source_cwd"] == "/Users/badlogic/workspaces/pi-mono"
    again = do_import(store, "pi", path)  # the consumed prefix (BOM included) is unchanged
    assert again.events == 0 and again.errors == [] and again.warnings == []


def test_a_codex_rollouts_session_meta_after_a_byte_order_mark_is_read(store: Store, tmp_path: Path) -> None:
    fixture = copy_fixture("codex_rollout_0.104_redacted_019c8bfe.jsonl", tmp_path / "src")
    path = _with_bom(fixture.rename(tmp_path / "src" / "rollout-2026-02-23T20-34-25-x.jsonl"))
    report = do_import(store, "codex", path)
    assert report.malformed == [] and len(report.warnings) == 1
    loaded = load(store, report.sessions[0].session_id)
    assert loaded.events[0].record["type"] == "session_meta"
    assert loaded.meta["source_version"] == "0.104.0-alpha.1"


def test_a_byte_order_mark_only_counts_before_the_first_line(store: Store, tmp_path: Path) -> None:
    user = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": CLAUDE_SID, "message": {"content": "hi"}}
    path = write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", [user])
    with open(path, "ab") as f:
        f.write(BOM + b'{"type": "user", "uuid": "u2", "parentUuid": "u1", "sessionId": "x"}\n')
    report = do_import(store, "claude", path)
    # Inside a file it is no writer's habit but damage: malformed, kept, reported.
    assert [(n, e.split(":")[0]) for _, n, e in report.malformed] == [(2, "invalid JSON")]


# --- where a reply's tool calls sat ------------------------------------------------------
def _claude_reply(uuid: str, parent: str, block: dict[str, Any], second: int) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": CLAUDE_SID,
        "timestamp": f"2026-03-01T10:00:{second:02d}.000Z",
        "message": {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-6", "content": [block]},
    }


THINK = {"type": "thinking", "thinking": "both files", "signature": "sig"}
TEXT_A = {"type": "text", "text": "First main.py."}
TEXT_B = {"type": "text", "text": "Then run it."}
CALL_1 = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "main.py"}}
CALL_2 = {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "python main.py"}}


def _claude_user(uuid: str = "u") -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "parentUuid": None, "sessionId": CLAUDE_SID, "message": {"content": "go"}}


def _reply_lines(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A prompt, then a reply whose blocks Claude Code wrote a line each."""
    lines = [_claude_user()]
    for i, block in enumerate(blocks):
        lines.append(_claude_reply(f"a{i}", lines[-1]["uuid"], block, i + 1))
    return lines


def _reply_events(store: Store) -> tuple[dict[str, Any], list[str]]:
    loaded = load(store, f"claude-{CLAUDE_SID}")
    message = next(e.record for e in loaded.events if e.kind == "message" and e.role == "assistant")
    calls = [e.record["id"] for e in loaded.events if e.kind == "tool_call"]
    return message, calls


def test_a_tool_use_between_text_blocks_keeps_its_place(store: Store, tmp_path: Path) -> None:
    # Claude Code writes each block of a reply as a line of its own.
    blocks = [THINK, TEXT_A, CALL_1, TEXT_B, CALL_2]
    lines = _reply_lines(blocks)
    do_import(store, "claude", write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", lines))
    message, calls = _reply_events(store)
    assert message["content"] == [THINK, TEXT_A, TEXT_B] and calls == ["toolu_1", "toolu_2"]
    # toolu_1 came after two parts (the thinking and the first text), toolu_2 after three
    assert message["source"]["calls_at"] == [2, 3]


def test_the_anthropic_view_gives_the_reply_back_with_its_calls_in_place(store: Store, tmp_path: Path) -> None:
    # The request Claude Code sent next held the reply block for block:
    # thinking, text, a call, text, a call (the calls followed all the text).
    blocks = [THINK, TEXT_A, CALL_1, TEXT_B, CALL_2]
    lines = _reply_lines(blocks)
    do_import(store, "claude", write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", lines))
    with store.open(f"claude-{CLAUDE_SID}", readonly=True) as session:
        reply = session.to_anthropic_input()["messages"][1]
    assert reply["role"] == "assistant"
    assert [(b["type"], b.get("id") or b.get("text") or b.get("thinking")) for b in reply["content"]] == [
        ("thinking", "both files"),
        ("text", "First main.py."),
        ("tool_use", "toolu_1"),
        ("text", "Then run it."),
        ("tool_use", "toolu_2"),
    ]


def test_calls_read_later_by_a_follow_go_after_the_parts(store: Store, tmp_path: Path) -> None:
    # An import that follows the file read the reply up to its second text,
    # then its last call: calls_at names the first call alone.
    blocks = [THINK, TEXT_A, CALL_1, TEXT_B, CALL_2]
    lines = _reply_lines(blocks)
    path = tmp_path / f"{CLAUDE_SID}.jsonl"
    do_import(store, "claude", write_lines(path, lines[:5]))
    do_import(store, "claude", write_lines(path, lines))
    with store.open(f"claude-{CLAUDE_SID}", readonly=True) as session:
        reply = session.to_anthropic_input()["messages"][1]["content"]
        path_events = session.transcript()
    assert [b.get("id") or b["type"] for b in reply] == ["thinking", "text", "toolu_1", "text", "toolu_2"]
    # A path that ends inside the reply's calls holds the first of them, in place.
    upto = next(i for i, e in enumerate(path_events) if e.kind == "tool_call") + 1
    reply = to_anthropic_input(path_events[:upto])["messages"][1]["content"]
    assert [b.get("id") or b["type"] for b in reply] == ["thinking", "text", "toolu_1", "text"]


def test_the_place_is_kept_when_the_blocks_share_one_line(store: Store, tmp_path: Path) -> None:
    reply = _claude_reply("a", "u", THINK, 1)
    reply["message"]["content"] = [TEXT_A, CALL_1, TEXT_B, CALL_2]
    do_import(store, "claude", write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", [_claude_user(), reply]))
    message, calls = _reply_events(store)
    assert message["content"] == [TEXT_A, TEXT_B] and calls == ["toolu_1", "toolu_2"]
    assert message["source"]["calls_at"] == [1, 2]


def test_calls_after_all_of_the_text_note_nothing(store: Store, tmp_path: Path) -> None:
    lines = _reply_lines([THINK, TEXT_A, CALL_1, CALL_2])
    do_import(store, "claude", write_lines(tmp_path / f"{CLAUDE_SID}.jsonl", lines))
    message, calls = _reply_events(store)
    assert calls == ["toolu_1", "toolu_2"] and "calls_at" not in message["source"]


def test_a_pi_reply_keeps_where_its_tool_calls_sat(store: Store, tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": PI_SID, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/p"}
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}
    content = [{"type": "text", "text": "Reading a."}, call, {"type": "text", "text": "Done."}]
    reply = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-03-01T10:00:01.000Z",
        "message": {"role": "assistant", "content": content, "model": "m", "provider": "anthropic"},
    }
    plain = {**reply, "id": "e2", "parentId": "e1", "message": {**reply["message"], "content": content[:2]}}
    do_import(store, "pi", write_lines(tmp_path / f"x_{PI_SID}.jsonl", [header, reply, plain]))
    messages = [e.record for e in load(store, f"pi-{PI_SID}").events if e.kind == "message"]
    assert messages[0]["source"]["calls_at"] == [1]
    assert "calls_at" not in messages[1]["source"]


# --- an unfinished last line -------------------------------------------------------------
CUT = '{"type": "user", "uuid": "u2", "parentUuid": "u1", "message": {"con'


def test_a_one_shot_import_names_an_unfinished_last_line(tmp_path: Path) -> None:
    user = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": CLAUDE_SID, "message": {"content": "hi"}}
    path = write_lines(tmp_path / "src" / f"{CLAUDE_SID}.jsonl", [user])
    with open(path, "a") as f:
        f.write(CUT)  # cut short: no newline
    result = run(tmp_path / "home", "import", "--from", "claude", str(path))
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"agentlog: note: {path}: an unfinished last line ({len(CUT)} bytes, no newline and not whole JSON)"
        " is left for the next import"
    ]
    report = run_import(Store(tmp_path / "home"), FORMATS["claude"], [str(path)])
    assert report.files[0].pending_bytes == len(CUT) and report.warnings == []


def test_a_file_ending_in_a_newline_gets_no_note(tmp_path: Path) -> None:
    user = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": CLAUDE_SID, "message": {"content": "hi"}}
    path = write_lines(tmp_path / "src" / f"{CLAUDE_SID}.jsonl", [user])
    result = run(tmp_path / "home", "import", "--from", "claude", str(path))
    assert result.exit_code == 0 and result.stderr == ""

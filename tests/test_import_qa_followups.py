"""Follow-ups of a QA pass over the importers with files built from the
tools' current formats: a hook's progress lines between parallel calls and
their results, Claude Code's ``<synthetic>`` model, and the state marker a
legacy Codex rollout repeats after every turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentlog import Store
from importers_support import do_import, load, write_lines


def _claude(uuid: str, parent: str | None, kind: str, message: dict[str, Any], second: int) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "par",
        "timestamp": f"2026-02-17T10:00:{second:02d}.000Z",
        "message": message,
    }


def _call(uuid: str, parent: str, call_id: str, second: int, model: str = "claude-opus-4-6") -> dict[str, Any]:
    message = {
        "id": "msg_1",
        "role": "assistant",
        "model": model,
        "content": [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"n": call_id}}],
    }
    return _claude(uuid, parent, "assistant", message, second)


def _result(uuid: str, parent: str, call_id: str, second: int) -> dict[str, Any]:
    message = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": f"out {call_id}"}],
    }
    return _claude(uuid, parent, "user", message, second)


def _progress(uuid: str, parent: str, second: int) -> dict[str, Any]:
    return {
        "type": "progress",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "par",
        "timestamp": f"2026-02-17T10:00:{second:02d}.000Z",
        "data": {"type": "hook_progress", "hookEvent": "PostToolUse"},
    }


def test_progress_lines_between_parallel_calls_and_their_results_add_no_branch(store: Store, tmp_path: Path) -> None:
    lines = [
        _claude("u", None, "user", {"role": "user", "content": "go"}, 1),
        _call("c1", "u", "t1", 2),
        _call("c2", "c1", "t2", 3),
        _call("c3", "c2", "t3", 4),
        _progress("p1", "c1", 5),  # a hook's progress under the first call, after all three
        _progress("p2", "c2", 6),
        _result("r1", "c1", "t1", 7),
        _result("r2", "c2", "t2", 8),
        _result("r3", "c3", "t3", 9),
        _claude("d", "r3", "assistant", {"id": "msg_2", "role": "assistant", "content": "done"}, 10),
    ]
    do_import(store, "claude", write_lines(tmp_path / "par.jsonl", lines))
    loaded = load(store, "claude-par")
    assert not any(e.branch_from for e in loaded.events)  # one chain
    with store.open("claude-par", readonly=True) as s:
        path = [e for e in s.transcript() if e.kind in ("tool_call", "tool_result")]
        chat = s.to_chat_messages()
    assert [(e.kind, e.record["tool_call_id"] if e.kind == "tool_result" else e.record["id"]) for e in path] == [
        ("tool_call", "t1"),
        ("tool_call", "t2"),
        ("tool_call", "t3"),
        ("tool_result", "t1"),
        ("tool_result", "t2"),
        ("tool_result", "t3"),
    ]
    assert [m["content"] for m in chat if m["role"] == "tool"] == ["out t1", "out t2", "out t3"]


def test_the_stand_in_for_a_failed_reply_does_not_name_the_model(store: Store, tmp_path: Path) -> None:
    failed = {
        "id": "msg_0",
        "role": "assistant",
        "model": "<synthetic>",
        "content": [{"type": "text", "text": "API Error"}],
    }
    real = {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-6", "content": "hello"}
    lines = [
        _claude("u", None, "user", {"role": "user", "content": "hi"}, 1),
        {**_claude("e", "u", "assistant", failed, 2), "isApiErrorMessage": True},
        _claude("a", "e", "assistant", real, 3),
    ]
    do_import(store, "claude", write_lines(tmp_path / "par.jsonl", lines))
    assert store.info("claude-par").model == "claude-opus-4-6"


def test_a_legacy_codex_rollouts_state_marker_repeated_after_every_turn_is_no_warning(
    store: Store, tmp_path: Path
) -> None:
    session = "0c000000-0000-4000-8000-00000000abcd"
    lines: list[Any] = [{"id": session, "timestamp": "2025-05-01T10:00:00.000Z", "instructions": "be good"}]
    for turn in range(3):
        lines += [
            {"record_type": "state"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"prompt {turn}"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"answer {turn}"}]},
        ]
    path = write_lines(tmp_path / f"rollout-2025-05-01-{session}.jsonl", lines)
    report = do_import(store, "codex", path)
    assert report.warnings == []
    with store.open(f"codex-{session}", readonly=True) as s:
        texts = [m["content"] for m in s.to_chat_messages()]
    assert texts[-1] == [{"type": "text", "text": "answer 2"}] or texts[-1] == "answer 2"


def test_thinking_text_is_searched_and_exported_as_reasoning_is(store: Store, tmp_path: Path) -> None:
    import io

    from agentlog.export import export_session

    with store.create(session_id="t") as s:
        s.append("message", {"content": "why?"}, role="user")
        thought = {"type": "thinking", "thinking": "pondering the zeugma carefully", "signature": "sig"}
        s.append("message", {"content": [thought, {"type": "text", "text": "because"}]}, role="assistant")
        s.append("message", {"content": "and codex?", "reasoning": "a quokka reasons"}, role="assistant")
        [hit] = store.search("zeugma")
        assert hit.kind == "message" and hit.role == "assistant"
        assert len(store.search("quokka")) == 1
        for fmt in ("md", "html"):
            out = io.BytesIO()
            export_session(s, fmt, out)
            text = out.getvalue().decode()
            assert "pondering the zeugma carefully" in text and "a quokka reasons" in text, fmt


def test_follow_waits_for_the_files_of_a_directory_that_has_none_yet(store: Store, tmp_path: Path) -> None:
    from agentlog.importers import Follower, get_importer

    watched = tmp_path / "projects"
    watched.mkdir()
    with Follower(store, get_importer("claude"), [str(watched)]) as follower:
        assert follower.poll() is None  # nothing yet, and no error
        lines = [_claude("u", None, "user", {"role": "user", "content": "late"}, 1)]
        write_lines(watched / "late.jsonl", lines)
        report = follower.poll()
    assert report is not None and report.events == 1 and store.exists("claude-par")  # named by its sessionId


def test_a_reply_line_whose_message_is_not_an_object_is_reported(store: Store, tmp_path: Path) -> None:
    lines = [
        _claude("u", None, "user", {"role": "user", "content": "hi"}, 1),
        {**_claude("a", "u", "assistant", {}, 2), "message": "just a string"},
    ]
    report = do_import(store, "claude", write_lines(tmp_path / "par.jsonl", lines))
    [(where, reason)] = [(n, r) for f in report.files for n, r in f.malformed]
    assert where == 2 and "the message of a 'assistant' line is str, not an object" in reason
    [kept] = [e for e in load(store, "claude-par").events if e.kind == "custom"]
    assert "not an object" in kept.record["error"]  # kept whole, saying why

"""A Claude Code summary written before the conversation it names.

Claude Code starts a resumed session's file with the summary line, then
copies the history it resumes: the summary's ``leafUuid`` is a line further
down the same file. It used to be looked up only among the lines before it,
so it stayed a ``custom`` event at the root, the session was named after its
first prompt, and a resume copy gained a root of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentlog import Store
from importers_support import do_import, load, write_lines

pytest_plugins = ["importers_store"]

A = "cccccccc-1111-4222-8333-00000000000a"
B = "cccccccc-1111-4222-8333-00000000000b"


def _line(sid: str, uuid: str, parent: str | None, role: str, text: str, second: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": text}
    if role == "assistant":
        message = {"id": f"msg_{uuid}", "type": "message", "role": role, "model": "claude-sonnet-4-20250514",
                   "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}  # fmt: skip
    when = f"2025-09-20T10:00:{second:02d}.000Z"
    return {"parentUuid": parent, "isSidechain": False, "cwd": "/p", "sessionId": sid, "version": "1.0.120",
            "type": role, "message": message, "uuid": uuid, "timestamp": when}  # fmt: skip


def _summary(text: str, leaf: str) -> dict[str, Any]:
    return {"type": "summary", "summary": text, "leafUuid": leaf}


def test_a_summary_before_its_leaf_labels_it_and_names_the_session(store: Store, tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / f"{A}.jsonl",
        [
            _summary("Greeting exchange", "a2"),
            _line(A, "a1", None, "user", "hi", 0),
            _line(A, "a2", "a1", "assistant", "hello", 1),
            _line(A, "a3", "a2", "user", "thanks", 2),
        ],  # fmt: skip
    )
    report = do_import(store, "claude", path)
    assert report.errors == [] and report.kinds.get("custom", 0) == 0
    loaded = load(store, f"claude-{A}")
    (label,) = [e for e in loaded.events if e.kind == "label"]
    assert label.record["name"] == "Greeting exchange"
    assert loaded.by_id[label.record["target"]].record["content"][0]["text"] == "hello"
    assert loaded.meta["name"] == "Greeting exchange"
    assert [e.parent_id for e in loaded.events if e.kind == "message"][0] == "00000000-0000-0000-0000-000000000000"
    assert do_import(store, "claude", path).events == 0  # nothing twice


def test_a_resumed_copy_has_one_root(store: Store, tmp_path: Path) -> None:
    first = [_line(A, "a1", None, "user", "hi", 0), _line(A, "a2", "a1", "assistant", "hello", 1)]
    resumed = [_summary("Friendly greeting", "a2"), *({**o, "sessionId": B} for o in first),
               _line(B, "b3", "a2", "user", "continue please", 5)]  # fmt: skip
    write_lines(tmp_path / f"{A}.jsonl", first)
    write_lines(tmp_path / f"{B}.jsonl", resumed)
    assert do_import(store, "claude", tmp_path).errors == []
    loaded = load(store, f"claude-{B}")
    roots = [e for e in loaded.events if e.parent_id == "00000000-0000-0000-0000-000000000000"]
    assert len(roots) == 1 and roots[0].kind == "message"
    assert loaded.meta["name"] == "Friendly greeting"
    assert [e.kind for e in loaded.events].count("label") == 1


def test_a_summary_whose_leaf_never_comes_is_kept_as_before(store: Store, tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / f"{A}.jsonl",
        [_summary("Elsewhere", "not-here"), _line(A, "a1", None, "user", "hi", 0)],
    )
    do_import(store, "claude", path)
    loaded = load(store, f"claude-{A}")
    (kept,) = [e for e in loaded.events if e.kind == "custom"]
    assert kept.record["original"] == _summary("Elsewhere", "not-here")
    assert loaded.meta["name"] == "hi"  # named after its first prompt, as before

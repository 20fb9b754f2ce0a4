"""Issue 11 audit: the adapters used the way their frameworks' own tests and
docs use a session, and the importers fed files the way the tools write them."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from agentlog import SessionClosed, Store
from importers_support import do_import, load, write_lines

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores


# --- OpenAI Agents SDK ----------------------------------------------------------------------


def test_agents_session_from_several_event_loops_does_not_deadlock(tmp_path: Path) -> None:
    # The SDK's own test_sqlite_session_concurrent_access: one session object,
    # add_items from five threads, each with its own event loop. An
    # asyncio.Lock shared across loops deadlocked here.
    pytest.importorskip("agents.memory", reason="LOUD SKIP: openai-agents is not installed")
    from agentlog.integrations.openai_agents import AgentlogSession

    session = AgentlogSession("concurrent", store=Store(tmp_path / "home"))
    errors: list[BaseException] = []

    def add(n: int) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(session.add_items([{"role": "user", "content": f"m{n}"}]))
        except BaseException as exc:  # collected: the assertion below names it
            errors.append(exc)
        finally:
            loop.close()

    threads = [threading.Thread(target=add, args=(n,), daemon=True) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not [t for t in threads if t.is_alive()], "add_items from several event loops deadlocked"
    assert errors == []
    items = asyncio.run(session.get_items())
    assert sorted(i["content"] for i in items) == sorted(f"m{n}" for n in range(10))
    session.close()


def test_agents_closed_session_refuses_an_empty_batch() -> None:
    # As SQLiteSession (the SDK's test_sqlite_session_closed_rejects_empty_add_items).
    pytest.importorskip("agents.memory", reason="LOUD SKIP: openai-agents is not installed")
    from agentlog.integrations.openai_agents import AgentlogSession

    session = AgentlogSession("closed", store=Store.memory())
    asyncio.run(session.add_items([{"role": "user", "content": "x"}]))
    session.close()
    with pytest.raises(SessionClosed):
        asyncio.run(session.add_items([]))


# --- Google ADK -------------------------------------------------------------------------------


def test_adk_state_without_a_json_form_is_stored_as_its_repr(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    # ADK's persistent services store such a value as its repr (with a
    # warning); ours raised PydanticSerializationError from create_session.
    pytest.importorskip("google.adk", reason="LOUD SKIP: google-adk is not installed")
    from agentlog.integrations.adk import AgentlogSessionService

    service = AgentlogSessionService(store)
    with caplog.at_level(logging.WARNING, logger="agentlog.integrations.adk"):
        created = asyncio.run(
            service.create_session(app_name="a", user_id="u", session_id="s", state={"fn": print, "n": 1})
        )
    assert created.state == {"fn": repr(print), "n": 1}
    assert "not JSON-serializable" in caplog.text
    got = asyncio.run(service.get_session(app_name="a", user_id="u", session_id="s"))
    assert got is not None and got.state == {"fn": repr(print), "n": 1}
    service.close()


def test_adk_padded_session_id_names_the_stored_session(store: Store) -> None:
    # get_session strips the id (as ADK's services do); the Session it
    # returned kept the padding, so appending through it raised SessionNotFoundError.
    pytest.importorskip("google.adk", reason="LOUD SKIP: google-adk is not installed")
    from google.adk.events.event import Event

    from agentlog.integrations.adk import AgentlogSessionService

    service = AgentlogSessionService(store)
    asyncio.run(service.create_session(app_name="a", user_id="u", session_id="s"))
    got = asyncio.run(service.get_session(app_name="a", user_id="u", session_id=" s "))
    assert got is not None and got.id == "s"
    asyncio.run(service.append_event(got, Event(author="user", timestamp=got.last_update_time + 1)))
    again = asyncio.run(service.get_session(app_name="a", user_id="u", session_id="s"))
    assert again is not None and len(again.events) == 1
    service.close()


# --- Codex --------------------------------------------------------------------------------------

CODEX_SID = "019d0000-aaaa-7bbb-8ccc-000000000001"


def _codex(i: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2026-04-01T10:00:{i:02d}.000Z", "type": kind, "payload": payload}


def _codex_turn(i: int, text: str) -> list[dict[str, Any]]:
    """One turn as Codex writes it: the user's item, then its user_message event."""
    return [
        _codex(
            i, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        ),
        _codex(i, "event_msg", {"type": "user_message", "message": text, "images": []}),
        _codex(
            i,
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "re " + text}]},
        ),
    ]


def test_codex_rollback_when_an_import_fell_between_a_turns_two_lines(store: Store, tmp_path: Path) -> None:
    # A poll of --follow (or any import) that ends right after the user's
    # item: the turn's start was then taken to be the user_message event, so
    # a later rollback left the dropped user message on the active path.
    lines = [
        _codex(0, "session_meta", {"id": CODEX_SID, "cwd": "/w", "cli_version": "0.130.0"}),
        *_codex_turn(1, "one"),
        *_codex_turn(2, "two"),
        _codex(3, "event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
        *_codex_turn(4, "three"),
    ]
    path = tmp_path / f"rollout-2026-04-01T10-00-00-{CODEX_SID}.jsonl"
    write_lines(path, lines[:5])  # up to and including the item of turn "two"
    do_import(store, "codex", path)
    write_lines(path, lines)
    do_import(store, "codex", path)
    loaded = load(store, f"codex-{CODEX_SID}")

    def texts(events: list[Any]) -> list[str]:
        return [e.record["content"][0]["text"] for e in events if e.kind == "message"]

    assert texts(loaded.path()) == ["one", "re one", "three", "re three"]
    assert "two" in texts(loaded.events)  # dropped from the path, not deleted


# --- pi -------------------------------------------------------------------------------------------


def test_pi_label_that_clears_a_label_is_kept_as_custom(store: Store, tmp_path: Path) -> None:
    # pi writes a label entry without `label` to clear one; it became a
    # `label` event with name None (the convention requires a string), shown
    # as "None -> ..." by `agentlog tree`.
    sid = "d703a1a9-1b7b-4fb1-b512-c97380000001"

    def entry(kind: str, eid: str, parent: str | None, **kw: Any) -> dict[str, Any]:
        return {"type": kind, "id": eid, "parentId": parent, "timestamp": "2026-05-01T10:00:00.000Z", **kw}

    path = write_lines(
        tmp_path / f"2026-05-01T10-00-00-000Z_{sid}.jsonl",
        [
            {"type": "session", "version": 3, "id": sid, "timestamp": "2026-05-01T10:00:00.000Z", "cwd": "/p"},
            entry("message", "u1", None, message={"role": "user", "content": "hi", "timestamp": 1}),
            entry("label", "l1", "u1", targetId="u1", label="start"),
            entry("label", "l2", "l1", targetId="u1"),  # cleared
        ],
    )
    do_import(store, "pi", path)
    loaded = load(store, f"pi-{sid}")
    labels = [e for e in loaded.events if e.kind == "label"]
    assert [(e.record["name"], loaded.by_id[e.record["target"]].kind) for e in labels] == [("start", "message")]
    cleared = [e for e in loaded.events if e.kind == "custom" and e.record.get("original", {}).get("id") == "l2"]
    assert len(cleared) == 1 and "label" not in cleared[0].record["original"]
    assert cleared[0].parent_id == labels[0].id  # threaded where it occurs


def test_adk_close_works_called_or_awaited(tmp_path: Path) -> None:
    import subprocess
    import sys
    import warnings

    from agentlog.integrations.adk import AgentlogSessionService

    home = str(tmp_path / "home")

    async def awaited() -> None:
        service = AgentlogSessionService(Store(home))
        await service.create_session(app_name="a", user_id="u", session_id="s1")
        await service.close()  # as ADK's SqliteSessionService is closed

    asyncio.run(awaited())
    # The lease is released: a writer in another process gets the session.
    code = "import sys; from agentlog import Store; s = Store(sys.argv[1]); s.open(s.list()[0].id).close()"
    subprocess.run([sys.executable, "-c", code, home], check=True, timeout=60)
    service = AgentlogSessionService(Store(home))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        service.close()


def test_adapter_options_out_of_range_are_invalid_option(store: Store) -> None:
    from agentlog import InvalidOption
    from agentlog.integrations.adk import AgentlogSessionService
    from agentlog.integrations.langgraph import AgentlogSaver

    with pytest.raises(InvalidOption, match="open writers"):
        AgentlogSessionService(store, max_open=0)
    with pytest.raises(InvalidOption, match="prune strategy"):
        AgentlogSaver(store).prune(["t"], strategy="everything")

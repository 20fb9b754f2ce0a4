"""Follow-ups of a QA pass over the framework adapters against the
frameworks' own reference stores: ADK's idempotent append, blank ids and
bytes in a state delta; the Agents SDK's reads taking no lease."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentlog import InvalidEvent, Store

pytest.importorskip("google.adk", reason="LOUD SKIP: google-adk is not installed (pip install agentlog[adk])")
from google.adk.events.event import Event as AdkEvent  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402

from agentlog.integrations.adk import AgentlogSessionService  # noqa: E402


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_adk_an_equal_event_appended_again_is_kept_once_and_applied_once(store: Store) -> None:
    service = AgentlogSessionService(store)
    session = run(service.create_session(app_name="a", user_id="u", session_id="dup"))
    event = AdkEvent(invocation_id="inv", author="user", actions=EventActions(state_delta={"counter": 1}))
    for again in (event, event, event.model_copy(deep=True)):
        run(service.append_event(session=session, event=again))
    # Two distinct events that merely share an id are both kept.
    run(service.append_event(session=session, event=AdkEvent(id="shared", invocation_id="i1", author="user")))
    run(service.append_event(session=session, event=AdkEvent(id="shared", invocation_id="i2", author="agent")))
    got = run(service.get_session(app_name="a", user_id="u", session_id="dup"))
    assert [e.id for e in got.events].count(event.id) == 1 and got.state["counter"] == 1
    assert [e.author for e in got.events if e.id == "shared"] == ["user", "agent"]
    assert len(session.events) == 3  # the caller's Session object did not take the repeats either
    service.close()


def test_adk_a_blank_session_id_gets_a_new_one(store: Store) -> None:
    service = AgentlogSessionService(store)
    made = run(service.create_session(app_name="a", user_id="u", session_id="   "))
    assert len(made.id) == 36 and made.id.strip() == made.id
    assert run(service.get_session(app_name="a", user_id="u", session_id=made.id)) is not None
    service.close()


def test_adk_bytes_in_a_state_delta_read_back_as_the_state_keeps_them(store: Store) -> None:
    service = AgentlogSessionService(store)
    session = run(service.create_session(app_name="a", user_id="u", session_id="b", state={"a": b"abc"}))
    delta = {"b": b"abc", "user:c": b"xyz"}
    run(service.append_event(session=session, event=AdkEvent(author="user", actions=EventActions(state_delta=delta))))
    got = run(service.get_session(app_name="a", user_id="u", session_id="b"))
    assert (got.state["a"], got.state["b"], got.state["user:c"]) == ("abc", "abc", "xyz")
    bad = AdkEvent(author="user", actions=EventActions(state_delta={"d": b"\xff\x00"}))
    with pytest.raises(InvalidEvent, match="cannot be stored"):
        run(service.append_event(session=got, event=bad))
    assert "d" not in run(service.get_session(app_name="a", user_id="u", session_id="b")).state
    service.close()


def test_agents_sdk_reads_take_no_lease_and_create_nothing(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    from agentlog.integrations.openai_agents import AgentlogSession

    home = tmp_path / "home"
    assert run(AgentlogSession("typo-id", store=Store(home)).get_items()) == []
    assert Store(home).list() == []  # a read created no session
    writer = AgentlogSession("chat", store=Store(home))
    run(writer.add_items([{"role": "user", "content": "hi"}]))
    reader = (
        "import asyncio, sys\n"
        "from agentlog import Store\n"
        "from agentlog.integrations.openai_agents import AgentlogSession\n"
        "items = asyncio.run(AgentlogSession('chat', store=Store(sys.argv[1])).get_items())\n"
        "print(items[0]['content'])\n"
    )
    other = subprocess.run([sys.executable, "-c", reader, str(home)], capture_output=True, text=True)
    assert other.returncode == 0 and other.stdout.strip() == "hi", other.stderr  # while the writer holds it
    writer.close()

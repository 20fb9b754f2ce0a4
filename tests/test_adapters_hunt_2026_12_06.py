"""Regressions of a hunt of the framework adapters in real use
(2026-12-06): LangGraph's copy of a thread onto itself emptied it, a
second saver of the process made delete and prune fail, ADK stored a
retried event twice once an older event came after it, and bad inputs
raised bare Python errors."""

from __future__ import annotations

import asyncio
import copy
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from agentlog import InvalidEvent, InvalidOption, InvalidSessionId, Store

pytest.importorskip("langgraph.graph", reason="LOUD SKIP: langgraph is not installed (pip install agentlog[langgraph])")
pytest.importorskip("google.adk", reason="LOUD SKIP: google-adk is not installed (pip install agentlog[adk])")
pytest.importorskip("agents", reason="LOUD SKIP: the Agents SDK is not installed (pip install agentlog[openai-agents])")

from google.adk.events.event import Event as AdkEvent  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from langgraph.graph import START, StateGraph  # noqa: E402

from agentlog.integrations.adk import AgentlogSessionService  # noqa: E402
from agentlog.integrations.langgraph import AgentlogSaver  # noqa: E402
from agentlog.integrations.openai_agents import AgentlogSession  # noqa: E402


@pytest.fixture(params=["files", "sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "files":
        return Store(tmp_path / "home")
    if request.param == "sqlite":
        return Store(f"sqlite://{tmp_path}/a.db")
    return Store.memory()


class Chat(TypedDict):
    messages: Annotated[list[str], operator.add]


def graph(saver: AgentlogSaver) -> Any:
    built = StateGraph(Chat)
    built.add_node("reply", lambda state: {"messages": ["r"]})
    built.add_edge(START, "reply")
    return built.compile(checkpointer=saver)


CONFIG: Any = {"configurable": {"thread_id": "t"}}


def test_copying_a_thread_onto_itself_keeps_it(store: Store) -> None:
    saver = AgentlogSaver(store)
    graph(saver).invoke({"messages": ["hi"]}, CONFIG)
    before = [c.checkpoint["id"] for c in saver.list(CONFIG)]
    assert before
    saver.copy_thread("t", "t")
    asyncio.run(saver.acopy_thread("t", "t"))
    assert [c.checkpoint["id"] for c in saver.list(CONFIG)] == before
    saver.close()


@pytest.mark.parametrize("operation", ["delete_thread", "prune", "delete_for_runs"])
def test_a_second_saver_of_the_process_lets_go_of_the_thread(store: Store, operation: str) -> None:
    writer, other = AgentlogSaver(store), AgentlogSaver(store)
    app = graph(writer)
    app.invoke({"messages": ["hi"]}, {"configurable": {"thread_id": "t", "run_id": "r1"}})
    app.invoke({"messages": ["again"]}, {"configurable": {"thread_id": "t", "run_id": "r2"}})
    kept = len(list(writer.list(CONFIG)))
    if operation == "delete_thread":
        other.delete_thread("t")
        assert list(writer.list(CONFIG)) == []
    elif operation == "prune":
        other.prune(["t"])
        assert 0 < len(list(writer.list(CONFIG))) < kept
    else:
        other.delete_for_runs(["r1"])
        left = list(writer.list(CONFIG))
        assert 0 < len(left) < kept
        assert all(c.metadata.get("run_id") != "r1" for c in left)
    # the first saver goes on writing the thread
    app.invoke({"messages": ["after"]}, {"configurable": {"thread_id": "t", "run_id": "r3"}})
    assert writer.get_tuple(CONFIG) is not None
    writer.close()
    other.close()


def test_adk_a_retried_event_is_stored_once_whatever_came_after(store: Store) -> None:
    async def stored(service: Any) -> list[bool]:
        session = await service.create_session(app_name="a", user_id="u", session_id="s")
        first = AdkEvent(author="agent", invocation_id="i", timestamp=10.0, actions=EventActions(state_delta={"n": 1}))
        earlier = AdkEvent(author="agent", invocation_id="i", timestamp=5.0)  # built first, appended later
        for event in (first, earlier, first):  # the last: a retried delivery
            await service.append_event(session, copy.deepcopy(event))
        got = await service.get_session(app_name="a", user_id="u", session_id="s")
        return [e.id == first.id for e in got.events]

    assert asyncio.run(stored(AgentlogSessionService(store))) == asyncio.run(stored(InMemorySessionService()))


def test_adk_get_session_of_no_id_is_none(store: Store) -> None:
    service = AgentlogSessionService(store)
    assert asyncio.run(service.get_session(app_name="a", user_id="u", session_id=None)) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("name", [123, None, 4.5])
def test_an_agents_sdk_session_named_by_no_string_is_refused(store: Store, name: Any) -> None:
    with pytest.raises(InvalidSessionId, match="must be a string"):
        AgentlogSession(name, store=store)


def test_agents_sdk_bad_limit_and_items(store: Store) -> None:
    session = AgentlogSession("s", store=store)
    asyncio.run(session.add_items([{"role": "user", "content": str(i)} for i in range(4)]))
    with pytest.raises(InvalidOption, match="limit"):
        asyncio.run(session.get_items(limit=2.5))  # type: ignore[arg-type]
    with pytest.raises(InvalidEvent, match="list of items"):
        asyncio.run(session.add_items(None))  # type: ignore[arg-type]
    assert len(asyncio.run(session.get_items())) == 4
    session.close()

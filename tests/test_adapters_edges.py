"""Edges of the three framework adapters as harnesses use them: several
adapter objects over one store in one process (they share the lease, so
they must share the truth too), concurrent tasks on one session, and
lifecycle. Each test names the reference behaviour it holds us to."""

from __future__ import annotations

import asyncio
import gc
import operator
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from agentlog import SessionClosed, Store
from agentlog._writers import WRITERS

pytest.importorskip("agents.memory", reason="LOUD SKIP: openai-agents is not installed")
pytest.importorskip("google.adk", reason="LOUD SKIP: google-adk is not installed")
pytest.importorskip("langgraph.checkpoint.memory", reason="LOUD SKIP: langgraph is not installed")
from agents.memory import SQLiteSession  # noqa: E402
from google.adk.events.event import Event as AdkEvent  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

from agentlog.integrations.adk import AgentlogSessionService  # noqa: E402
from agentlog.integrations.langgraph import AgentlogSaver  # noqa: E402
from agentlog.integrations.openai_agents import AgentlogSession  # noqa: E402


@pytest.fixture(params=["files", "sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "files":
        return Store(tmp_path / "home")
    if request.param == "sqlite":
        return Store(f"sqlite:///{tmp_path}/agentlog.db")
    return Store.memory()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# --- LangGraph --------------------------------------------------------------------------


class Chat(TypedDict):
    log: Annotated[list[str], operator.add]


def echo_graph(checkpointer: Any) -> Any:
    graph = StateGraph(Chat)
    graph.add_node("echo", lambda state: {"log": ["echo:" + state["log"][-1]]})
    graph.add_edge(START, "echo")
    graph.add_edge("echo", END)
    return graph.compile(checkpointer=checkpointer)


def test_langgraph_a_second_saver_in_the_process_is_seen_by_the_first(store: Store) -> None:
    # Two savers over one store share the thread's lease (one process), as two
    # SqliteSavers share one file: each must see the other's checkpoints. The
    # first one's index used to stay as it was, so its next turn resumed from
    # its own last checkpoint and the other saver's turn left the thread.
    first, second = AgentlogSaver(store), AgentlogSaver(store)
    config = {"configurable": {"thread_id": "t"}}
    echo_graph(first).invoke({"log": ["1"]}, config)
    echo_graph(second).invoke({"log": ["2"]}, config)
    final = echo_graph(first).invoke({"log": ["3"]}, config)
    expected = ["1", "echo:1", "2", "echo:2", "3", "echo:3"]
    assert final["log"] == expected
    assert echo_graph(second).get_state(config).values["log"] == expected
    first.close()
    second.close()
    fresh = AgentlogSaver(store)
    assert echo_graph(fresh).get_state(config).values["log"] == expected
    fresh.close()


# --- ADK --------------------------------------------------------------------------------


def adk_event(delta: dict[str, Any], at: float | None = None) -> AdkEvent:
    return AdkEvent(
        author="agent", invocation_id="inv", actions=EventActions(state_delta=delta), timestamp=at or time.time()
    )


def test_adk_two_services_in_the_process_lose_no_shared_state(store: Store) -> None:
    # The app and user scopes are read, changed and written again. Two services
    # over one store (two Runners, say) write the same scope sessions; each
    # used to lock only its own calls, so one's write could land between the
    # other's read and write, and acknowledged app:/user: keys were lost.
    async def main() -> tuple[set[str], dict[str, Any]]:
        services = [AgentlogSessionService(store), AgentlogSessionService(store)]
        sessions = [
            await svc.create_session(app_name="app", user_id="u", session_id=f"s{i}") for i, svc in enumerate(services)
        ]

        async def pump(svc: AgentlogSessionService, session: Any, tag: str) -> None:
            for i in range(40):
                await svc.append_event(session, adk_event({f"app:{tag}{i}": i, f"user:{tag}{i}": i}))

        pairs = enumerate(zip(services, sessions, strict=True))
        await asyncio.gather(*(pump(svc, s, f"t{n}") for n, (svc, s) in pairs))
        got = await services[0].get_session(app_name="app", user_id="u", session_id="s0")
        assert got is not None
        user = await services[1].get_user_state(app_name="app", user_id="u")
        for svc in services:
            svc.close()
        return {k for k in got.state if k.startswith("app:")}, user

    app_keys, user_state = run(main())
    assert len(app_keys) == 80
    assert len(user_state) == 80


def test_adk_appends_gathered_on_one_session_object_all_land(store: Store, tmp_path: Path) -> None:
    # Tasks appending through one Session object at once: ADK's in-memory and
    # SQLite services store every event (DatabaseSessionService too: it
    # updates the Session under its session lock). Ours refused all but a few
    # as stale: the object was brought up to date only after the lock was let go.
    async def script(service: Any) -> tuple[list[str], list[Any], dict[str, Any]]:
        session = await service.create_session(app_name="a", user_id="u", session_id="s")
        base = time.time()
        events = [adk_event({f"k{i}": i}, base + i / 1000) for i in range(8)]
        results = await asyncio.gather(*(service.append_event(session, e) for e in events), return_exceptions=True)
        stored = await service.get_session(app_name="a", user_id="u", session_id="s")
        return (
            [type(r).__name__ for r in results],
            sorted(e.actions.state_delta.popitem()[0] for e in stored.events),
            stored.state,
        )

    async def reference() -> Any:
        sqlite = SqliteSessionService(str(tmp_path / "adk.db"))
        try:
            return await script(InMemorySessionService()), await script(sqlite)
        finally:
            await sqlite.close()

    in_memory, sqlite = run(reference())
    ours = AgentlogSessionService(store)
    got = run(script(ours))
    ours.close()
    assert in_memory == sqlite
    assert got == in_memory
    assert got[0] == ["Event"] * 8


# --- OpenAI Agents SDK ------------------------------------------------------------------


def test_agents_two_objects_of_one_session_pop_each_item_once(tmp_path: Path) -> None:
    # Two AgentlogSession objects of one id write one timeline. Each used to
    # lock only its own calls, so two pops from threads found the same last
    # item: items came back twice and others stayed. SQLiteSession objects on
    # one file pop each row once (one DELETE ... RETURNING).
    def pops(make: Any) -> tuple[list[str], list[Any]]:
        first, second = make(), make()
        run(first.add_items([{"role": "user", "content": str(i)} for i in range(200)]))
        got: list[str] = []

        def popper(session: Any) -> None:
            async def go() -> None:
                for _ in range(100):
                    item = await session.pop_item()
                    got.append(item["content"])

            run(go())

        threads = [threading.Thread(target=popper, args=(s,)) for s in (first, second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        left = run(first.get_items())
        first.close()
        second.close()
        return sorted(got, key=int), left

    expected = pops(lambda: SQLiteSession("x", str(tmp_path / "sdk.db")))
    store = Store(tmp_path / "home")
    assert pops(lambda: AgentlogSession("x", store)) == expected == ([str(i) for i in range(200)], [])


# --- lifecycle ----------------------------------------------------------------------------


def test_adapters_dropped_without_close_release_their_leases(store: Store) -> None:
    # The SDK's examples make a session per request and never close it. Each
    # dropped adapter used to keep its sessions' leases (and, on a file
    # store, four file handles each) until the process ended: a server ran
    # out of file handles after a few hundred conversations, and no other
    # process could write those sessions. Now collecting the adapter closes them.
    agents_session = AgentlogSession("dropped", store)
    run(agents_session.add_items([{"role": "user", "content": "hi"}]))
    service = AgentlogSessionService(store)
    run(service.create_session(app_name="app", user_id="u", session_id="dropped"))
    saver = AgentlogSaver(store)
    echo_graph(saver).invoke({"log": ["hi"]}, {"configurable": {"thread_id": "dropped"}})
    ids = [agents_session.agentlog_id, service.session_id_for("app", "u", "dropped"), saver.session_id("dropped")]
    del agents_session, service, saver
    gc.collect()
    _join_release_threads()
    for sid in ids:
        store.delete(sid)  # SessionLocked while a writer of this process holds it
        assert not store.exists(sid)


def _join_release_threads() -> None:
    """Wait for the closes a collection started (each in a thread of its own)."""
    for thread in threading.enumerate():
        if thread.name == "agentlog-release":
            thread.join(10)


def test_collecting_an_adapter_inside_the_writers_registry_does_not_hang(store: Store) -> None:
    # A collection runs in whatever thread allocates at that moment, which
    # may be inside the registry of open writers (it opens a session under
    # its lock). Closing a collected adapter there took that lock again:
    # the thread waited on itself for ever. The close now runs in a thread.
    session = AgentlogSession("cycle", store)
    run(session.add_items([{"role": "user", "content": "hi"}]))
    sid = session.agentlog_id
    session.cycle = session  # type: ignore[attr-defined]  # a reference cycle, as frameworks' objects make
    del session
    collected = threading.Event()

    def collect_inside_the_registry() -> None:
        with WRITERS._lock:
            gc.collect()
        collected.set()

    gc.disable()  # the collection must happen in that thread, not before
    try:
        worker = threading.Thread(target=collect_inside_the_registry, daemon=True)
        worker.start()
        worker.join(10)
    finally:
        gc.enable()
    assert collected.is_set(), "collecting the adapter waited on a lock its own thread held"
    _join_release_threads()
    store.delete(sid)  # the lease was released: SessionLocked otherwise
    assert not store.exists(sid)


def test_close_twice_and_use_after_close(store: Store) -> None:
    # Closing twice is harmless everywhere. A closed AgentlogSession refuses
    # every call (SQLiteSession does too); the ADK service and the saver,
    # like ADK's services and LangGraph's savers, are reopened by their next call.
    session = AgentlogSession("closing", store)
    run(session.add_items([{"role": "user", "content": "hi"}]))
    session.close()
    session.close()
    with pytest.raises(SessionClosed):
        run(session.get_items())
    with pytest.raises(SessionClosed):
        run(session.pop_item())
    assert run(AgentlogSession("closing", store).get_items()) == [{"role": "user", "content": "hi"}]

    service = AgentlogSessionService(store)
    created = run(service.create_session(app_name="app", user_id="u", session_id="closing"))
    service.close()
    service.close()
    run(service.append_event(created, adk_event({"k": 1})))
    got = run(service.get_session(app_name="app", user_id="u", session_id="closing"))
    assert got is not None and got.state == {"k": 1} and len(got.events) == 1
    service.close()

    saver = AgentlogSaver(store)
    config = {"configurable": {"thread_id": "closing"}}
    echo_graph(saver).invoke({"log": ["1"]}, config)
    saver.close()
    saver.close()
    assert echo_graph(saver).invoke({"log": ["2"]}, config)["log"] == ["1", "echo:1", "2", "echo:2"]
    saver.close()

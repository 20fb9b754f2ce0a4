"""AgentlogSessionService against ADK's own InMemorySessionService: the same
calls, the same results; then scoped state, errors, and the writer lease."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

import pytest

from agentlog import CorruptionError, Store

pytest.importorskip("google.adk", reason="LOUD SKIP: google-adk is not installed (pip install agentlog[adk])")
from google.adk.errors import StaleSessionError  # noqa: E402
from google.adk.errors.already_exists_error import AlreadyExistsError  # noqa: E402
from google.adk.errors.session_not_found_error import SessionNotFoundError  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.adk.sessions.base_session_service import GetSessionConfig  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from google.genai import types  # noqa: E402

from agentlog.integrations.adk import AgentlogSessionService  # noqa: E402


@pytest.fixture(params=["files", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Store:
    return Store(tmp_path / "home") if request.param == "files" else Store.memory()


def text_event(author: str, text: str, ts: float, delta: dict[str, Any] | None = None, **kw: Any) -> Event:
    return Event(
        id=f"e-{author}-{ts}-{text[:8]}",
        invocation_id="inv-1",
        author=author,
        content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta or {}),
        timestamp=ts,
        **kw,
    )


T0 = 1_700_000_000.0
LATER = 4_000_000_000.0  # after any creation time in this run


def view(session: Any) -> Any:
    if session is None:
        return None
    return (
        session.app_name,
        session.user_id,
        session.id,
        session.state,
        [e.model_dump(mode="json", exclude_none=True) for e in session.events],
        # Events carry fixed times; a session without one was updated when created.
        session.last_update_time if session.last_update_time in (T0 + 5, LATER) else "at creation",
    )


async def script(service: Any, persistent: bool) -> list[Any]:
    """One sequence of calls; every observable result is collected."""
    seen: list[Any] = []
    t0 = T0
    s1 = await service.create_session(
        app_name="app", user_id="u1", session_id="s1", state={"k": 1, "app:theme": "dark", "user:lang": "fr"}
    )
    seen.append((s1.state, s1.id))
    try:
        await service.create_session(app_name="app", user_id="u1", session_id="s1")
    except AlreadyExistsError as exc:
        seen.append(("exists", type(exc).__name__))
    s2 = await service.create_session(app_name="app", user_id="u2", session_id="s2", state={"k": 2})
    seen.append(s2.state)
    events = [
        text_event("user", "hello", t0 + 1, {"temp:scratch": "x", "k": 10}),
        text_event("agent", "hi", t0 + 2, {"app:theme": "light", "user:lang": "de", "n": 1}),
        text_event("agent", "streaming...", t0 + 3, partial=True),
        text_event("user", "again", t0 + 4),
        text_event("agent", "done", t0 + 5, {"n": 2}),
    ]
    for event in events:
        returned = await service.append_event(s1, event)
        seen.append((returned.id, s1.state.get("temp:scratch"), s1.last_update_time, len(s1.events)))
    seen.append(view(await service.get_session(app_name="app", user_id="u1", session_id="s1")))
    if persistent:  # a stale Session object: the persistent services refuse it
        stale = await service.get_session(app_name="app", user_id="u2", session_id="s2")
        fresh = await service.get_session(app_name="app", user_id="u2", session_id="s2")
        # event times after the session's creation, so the stored update time moves past it
        await service.append_event(fresh, text_event("user", "first", LATER))
        try:
            await service.append_event(stale, text_event("user", "second", LATER + 1))
        except StaleSessionError as exc:
            seen.append(("stale", type(exc).__name__))
    for cfg in (
        GetSessionConfig(num_recent_events=2),
        GetSessionConfig(num_recent_events=0),
        GetSessionConfig(after_timestamp=t0 + 4),
        GetSessionConfig(num_recent_events=1, after_timestamp=t0 + 1),
    ):
        seen.append(view(await service.get_session(app_name="app", user_id="u1", session_id="s1", config=cfg)))
    seen.append(view(await service.get_session(app_name="app", user_id="u2", session_id="s2")))
    seen.append(await service.get_session(app_name="app", user_id="u1", session_id="nope"))
    for user in ("u1", None, "nobody"):
        listed = await service.list_sessions(app_name="app", user_id=user)
        seen.append([(s.user_id, s.id, s.state, s.events) for s in listed.sessions])
    seen.append(await service.get_user_state(app_name="app", user_id="u1"))
    seen.append(await service.get_user_state(app_name="app", user_id="nobody"))
    await service.delete_session(app_name="app", user_id="u1", session_id="s1")
    await service.delete_session(app_name="app", user_id="u1", session_id="s1")  # absent: no error
    seen.append(await service.get_session(app_name="app", user_id="u1", session_id="s1"))
    try:
        await service.append_event(s1, text_event("user", "late", t0 + 6))
    except SessionNotFoundError as exc:
        seen.append(("not found", type(exc).__name__))
    seen.append([s.id for s in (await service.list_sessions(app_name="app")).sessions])
    return seen


def test_same_results_as_inmemory_session_service(store: Store) -> None:
    expected = asyncio.run(script(InMemorySessionService(), persistent=False))
    ours = AgentlogSessionService(store)
    got = asyncio.run(script(ours, persistent=False))
    ours.close()
    assert len(got) == len(expected)
    for i, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert a == b, i


def test_same_results_as_sqlite_session_service(store: Store, tmp_path: Any) -> None:
    async def reference() -> list[Any]:
        service = SqliteSessionService(str(tmp_path / "adk.db"))
        try:
            return await script(service, persistent=True)
        finally:
            await service.close()

    expected = asyncio.run(reference())
    ours = AgentlogSessionService(store)
    got = asyncio.run(script(ours, persistent=True))
    ours.close()
    assert ("stale", "StaleSessionError") in expected
    assert len(got) == len(expected)
    for i, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert a == b, i


def test_scoped_state_and_what_is_not_persisted(tmp_path: Any) -> None:
    home = tmp_path / "home"
    service = AgentlogSessionService(Store(home))

    async def go() -> None:
        s = await service.create_session(app_name="app", user_id="u", session_id="a")
        await service.append_event(s, text_event("agent", "x", time.time(), {"temp:t": 1, "user:u": 2, "app:a": 3}))
        await service.append_event(s, text_event("agent", "partial", time.time(), {"k": 9}, partial=True))
        other = await service.create_session(app_name="app", user_id="u", session_id="b")
        assert other.state == {"user:u": 2, "app:a": 3}  # shared scopes reach the new session
        elsewhere = await service.create_session(app_name="app", user_id="v", session_id="c")
        assert elsewhere.state == {"app:a": 3}

    asyncio.run(go())
    service.close()
    # read back by a fresh service over the same files
    again = AgentlogSessionService(Store(home))
    s = asyncio.run(again.get_session(app_name="app", user_id="u", session_id="a"))
    assert s is not None and len(s.events) == 1
    assert "temp:t" not in s.state and "k" not in s.state
    assert "temp:t" not in (s.events[0].actions.state_delta or {})
    again.close()


def test_the_lease_refuses_a_second_writer(tmp_path: Any) -> None:
    home = tmp_path / "home"
    service = AgentlogSessionService(Store(home))
    session = asyncio.run(service.create_session(app_name="app", user_id="u", session_id="s"))
    asyncio.run(service.append_event(session, text_event("user", "one", time.time())))
    probe = (
        "import asyncio, sys, time\n"
        "from agentlog import Store, SessionLocked\n"
        "from agentlog.integrations.adk import AgentlogSessionService\n"
        "from google.adk.events.event import Event\n"
        "svc = AgentlogSessionService(Store(sys.argv[1]))\n"
        "s = asyncio.run(svc.get_session(app_name='app', user_id='u', session_id='s'))\n"
        "assert len(s.events) == 1\n"
        "try:\n"
        "    asyncio.run(svc.append_event(s, Event(author='user', timestamp=time.time())))\n"
        "except SessionLocked:\n"
        "    sys.exit(3)\n"
    )
    other = subprocess.run([sys.executable, "-c", probe, str(home)], capture_output=True, text=True)
    assert other.returncode == 3, other.stderr
    service.close()
    other = subprocess.run([sys.executable, "-c", probe, str(home)], capture_output=True, text=True)
    assert other.returncode == 0, other.stderr  # once released, the other writer may append


def test_a_service_deletes_a_session_another_service_of_the_process_holds(tmp_path: Any) -> None:
    # Two services over one home (a web app's and an admin task's): the one
    # that appended holds the session open for writing, and the other's
    # delete failed with SessionLocked, where ADK's database service deletes.
    home = tmp_path / "home"
    first, second = AgentlogSessionService(Store(home)), AgentlogSessionService(Store(home))
    session = asyncio.run(first.create_session(app_name="app", user_id="u", session_id="s"))
    asyncio.run(first.append_event(session, text_event("user", "one", time.time())))
    asyncio.run(second.delete_session(app_name="app", user_id="u", session_id="s"))
    assert asyncio.run(first.get_session(app_name="app", user_id="u", session_id="s")) is None
    with pytest.raises(SessionNotFoundError):  # as ADK's services: the session is gone
        asyncio.run(first.append_event(session, text_event("user", "two", time.time())))
    again = asyncio.run(first.create_session(app_name="app", user_id="u", session_id="s"))
    asyncio.run(first.append_event(again, text_event("user", "three", time.time())))
    got = asyncio.run(second.get_session(app_name="app", user_id="u", session_id="s"))
    assert got is not None and [e.content.parts[0].text for e in got.events] == ["three"]
    first.close()
    second.close()


def test_a_real_runner_keeps_the_same_history(store: Store) -> None:
    from collections.abc import AsyncGenerator

    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner

    def remember(topic: str, tool_context: Any) -> str:
        """Remember a topic for this user."""
        tool_context.state["user:topic"] = topic
        tool_context.state["temp:scratch"] = "never stored"
        return f"remembered {topic}"

    class Scripted(BaseLlm):
        """Calls the tool on a user's first message, then answers in text."""

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            last = llm_request.contents[-1]
            if last.role == "user" and last.parts and last.parts[0].text:
                call = types.FunctionCall(name="remember", args={"topic": last.parts[0].text})
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
            else:
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="noted")]))

    async def converse(service: Any) -> tuple[Any, ...]:
        agent = LlmAgent(name="helper", model=Scripted(model="scripted"), tools=[remember])
        runner = Runner(app_name="app", agent=agent, session_service=service)
        await service.create_session(app_name="app", user_id="ann", session_id="s")
        for text in ("tea", "cake"):
            message = types.Content(role="user", parts=[types.Part(text=text)])
            async for _ in runner.run_async(user_id="ann", session_id="s", new_message=message):
                pass
        session = await service.get_session(app_name="app", user_id="ann", session_id="s")
        shape = [
            (
                e.author,
                [p.model_dump(mode="json", exclude_none=True) for p in (e.content.parts if e.content else [])],
            )
            for e in session.events
        ]
        for part in shape:  # tool call ids are random per run
            for p in part[1]:
                for key in ("function_call", "function_response"):
                    if key in p:
                        p[key].pop("id", None)
        user_state = await service.get_user_state(app_name="app", user_id="ann")
        return shape, session.state, user_state

    expected = asyncio.run(converse(InMemorySessionService()))
    ours = AgentlogSessionService(store)
    got = asyncio.run(converse(ours))
    ours.close()
    assert got == expected
    assert got[2] == {"topic": "cake"} and "temp:scratch" not in got[1]
    assert [author for author, _ in got[0]] == ["user", "helper", "helper", "helper"] * 2


def test_a_damaged_event_is_reported_not_skipped(store: Store) -> None:
    service = AgentlogSessionService(store)
    session = asyncio.run(service.create_session(app_name="app", user_id="u", session_id="s"))
    asyncio.run(service.append_event(session, text_event("user", "one", T0)))
    service.close()
    with store.open(AgentlogSessionService.session_id_for("app", "u", "s")) as raw:
        bad = raw.append("adk.event", {"author": 5, "timestamp": "not a time"}, "user")
    again = AgentlogSessionService(store)
    with pytest.raises(CorruptionError, match=bad.id):
        asyncio.run(again.get_session(app_name="app", user_id="u", session_id="s"))
    again.close()


def test_an_event_whose_state_write_was_lost_is_replayed(store: Store) -> None:
    service = AgentlogSessionService(store)
    session = asyncio.run(service.create_session(app_name="app", user_id="u", session_id="s", state={"n": 1}))
    asyncio.run(service.append_event(session, text_event("user", "one", T0, {"n": 2})))
    service.close()
    # What a crash between an event's append and the metadata write leaves behind:
    lost = text_event("agent", "two", T0 + 1, {"n": 3, "m": "new"})
    with store.open(AgentlogSessionService.session_id_for("app", "u", "s")) as raw:
        raw.append("adk.event", lost.model_dump(mode="json", exclude_none=True), "assistant")
    again = AgentlogSessionService(store)
    got = asyncio.run(again.get_session(app_name="app", user_id="u", session_id="s"))
    assert got is not None
    assert got.state == {"n": 3, "m": "new"} and got.last_update_time == T0 + 1
    assert [e.id for e in got.events][-1] == lost.id
    again.close()

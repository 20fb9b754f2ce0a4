"""Regressions from running ADK's own session-service tests against
AgentlogSessionService: a Session whose ``last_update_time`` drifted behind
storage, but which holds the stored history's latest event, is current, not
stale (as ADK's ``DatabaseSessionService`` decides); a Session that missed an
append is still refused, with ADK's database service's words."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentlog import Store

pytest.importorskip("google.adk", reason="LOUD SKIP: google-adk is not installed (pip install agentlog[adk])")
from google.adk.errors import StaleSessionError  # noqa: E402
from google.adk.events.event import Event as AdkEvent  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402

from agentlog.integrations.adk import AgentlogSessionService  # noqa: E402


@pytest.fixture(params=["files", "memory"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    store = Store(tmp_path / "home") if request.param == "files" else Store.memory()
    svc = AgentlogSessionService(store)
    yield svc
    svc.close()
    store.close()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def event(invocation: str, ts: float, **delta: Any) -> AdkEvent:
    return AdkEvent(invocation_id=invocation, author="user", timestamp=ts, actions=EventActions(state_delta=delta))


def invocations(service: AgentlogSessionService, session_id: str) -> list[str]:
    got = run(service.get_session(app_name="app", user_id="u", session_id=session_id))
    assert got is not None
    return [e.invocation_id for e in got.events]


def test_drifted_last_update_time_of_a_current_session_is_not_stale(service: AgentlogSessionService) -> None:
    session = run(service.create_session(app_name="app", user_id="u", session_id="s"))
    first = event("inv1", session.last_update_time + 10, k=1)
    run(service.append_event(session, first))
    # A float round trip or a caller's adjustment: the Session still holds the
    # stored history's latest event, so appending through it loses nothing.
    session.last_update_time -= 0.0001
    run(service.append_event(session, event("inv2", first.timestamp + 10, k=2)))
    assert invocations(service, "s") == ["inv1", "inv2"]
    got = run(service.get_session(app_name="app", user_id="u", session_id="s"))
    assert got is not None and got.state == {"k": 2}
    assert got.last_update_time == first.timestamp + 10


def test_drifted_session_without_events_is_current_while_storage_has_none(service: AgentlogSessionService) -> None:
    session = run(service.create_session(app_name="app", user_id="u", session_id="s"))
    session.last_update_time -= 0.0001
    run(service.append_event(session, event("inv1", session.last_update_time + 10)))
    assert invocations(service, "s") == ["inv1"]


def test_session_that_missed_an_append_is_still_stale(service: AgentlogSessionService) -> None:
    original = run(service.create_session(app_name="app", user_id="u", session_id="s"))
    now = original.last_update_time
    run(service.append_event(original, event("inv1", now + 1, sk1="v1")))
    updated = run(service.get_session(app_name="app", user_id="u", session_id="s"))
    assert updated is not None
    run(service.append_event(updated, event("inv2", now + 2, sk2="v2")))
    # ``original`` holds inv1, storage's latest is inv2: a newer revision.
    with pytest.raises(StaleSessionError, match="modified in storage"):
        run(service.append_event(original, event("inv3", now + 3, sk3="v3")))
    assert invocations(service, "s") == ["inv1", "inv2"]


def test_eventless_session_is_stale_once_storage_has_an_event(service: AgentlogSessionService) -> None:
    first = run(service.create_session(app_name="app", user_id="u", session_id="s"))
    other = run(service.get_session(app_name="app", user_id="u", session_id="s"))
    assert other is not None
    run(service.append_event(other, event("inv1", first.last_update_time + 5)))
    # ``first`` holds no event while storage holds one: it did miss an append.
    with pytest.raises(StaleSessionError):
        run(service.append_event(first, event("inv2", first.last_update_time + 6)))
    assert invocations(service, "s") == ["inv1"]


def test_concurrent_appends_from_copies_of_one_revision_let_one_through(service: AgentlogSessionService) -> None:
    session = run(service.create_session(app_name="app", user_id="u", session_id="s"))

    async def race(i: int) -> list[Any]:
        latest = await service.get_session(app_name="app", user_id="u", session_id="s")
        assert latest is not None
        one, two = latest.model_copy(deep=True), latest.model_copy(deep=True)
        base = latest.last_update_time + 10
        return await asyncio.gather(
            service.append_event(one, event(f"inv{i}-1", base + 1)),
            service.append_event(two, event(f"inv{i}-2", base + 2)),
            return_exceptions=True,
        )

    for i in range(4):
        results = run(race(i))
        errors = [r for r in results if isinstance(r, Exception)]
        assert len(errors) == 1 and isinstance(errors[0], StaleSessionError), results
    assert len(invocations(service, session.id)) == 4

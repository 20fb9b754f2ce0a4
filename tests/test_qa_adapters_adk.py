"""QA regressions for the ADK session service: state or ids the store
cannot hold are agentlog's typed errors, and nothing is written."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from agentlog import InvalidEvent, InvalidSessionId, Store

pytest.importorskip("google.adk", reason="LOUD SKIP: google-adk is not installed (pip install agentlog[adk])")
from google.adk.events.event import Event as AdkEvent  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402

from agentlog.integrations.adk import AgentlogSessionService  # noqa: E402


@pytest.fixture(params=["files", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return Store(tmp_path / "home") if request.param == "files" else Store.memory()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# --- ADK -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "state",
    [
        {"k": b"\xff\xfe"},
        {"user:k": b"\xff"},
        {"k": "a\ud800"},
        {"user:k": "a\ud800"},  # the session is written before its scopes
        {"app:n": 2**70},
        {"a\ud800": 1},
    ],
    ids=["bytes", "user-bytes", "surrogate", "user-surrogate", "app-bigint", "surrogate-key"],
)
def test_adk_state_the_store_cannot_hold_is_refused_and_nothing_written(store: Store, state: Any) -> None:
    service = AgentlogSessionService(store)
    try:
        with pytest.raises(InvalidEvent, match="ADK state cannot be stored"):
            run(service.create_session(app_name="app", user_id="u", session_id="s", state=state))
        assert list(store.list(archived=True)) == []
        # The id is still free.
        created = run(service.create_session(app_name="app", user_id="u", session_id="s", state={"k": b"ok"}))
        assert created.state == {"k": "ok"}
    finally:
        service.close()


@pytest.mark.parametrize("where", ["app_name", "user_id", "session_id"])
def test_adk_ids_with_a_lone_surrogate_are_invalid_session_ids(store: Store, where: str) -> None:
    service = AgentlogSessionService(store)
    names = {"app_name": "app", "user_id": "u", "session_id": "s"}
    names[where] += "\ud800"
    try:
        with pytest.raises(InvalidSessionId):
            run(service.create_session(**names))
        with pytest.raises(InvalidSessionId):
            run(service.get_session(**names))
        assert list(store.list(archived=True)) == []
    finally:
        service.close()


def test_adk_append_with_unstorable_state_writes_nothing(store: Store) -> None:
    service = AgentlogSessionService(store)
    try:
        session = run(service.create_session(app_name="app", user_id="u", session_id="s"))
        event = AdkEvent(
            author="bot",
            invocation_id="i",
            actions=EventActions(state_delta={"user:k": "a\ud800"}),
            timestamp=time.time(),
        )
        with pytest.raises(InvalidEvent):
            run(service.append_event(session, event))
        again = run(service.get_session(app_name="app", user_id="u", session_id="s"))
        assert again is not None and again.events == [] and again.state == {}
        assert run(service.get_user_state(app_name="app", user_id="u")) == {}
    finally:
        service.close()

"""ADK's shared state scopes: ``app:`` state in one agentlog session per
app, ``user:`` state in one per (app, user).

Each change appends an ``adk.state`` event holding the whole scope's state,
so the current state is the HEAD event (one read) and its history stays on
the timeline. A scope's session is opened only for each write.
"""

from __future__ import annotations

import time
from typing import Any

from .. import NIL_ID, Session, SessionExists, SessionLocked, Store
from ._adk_events import FRAMEWORK
from ._ids import session_key

__all__ = ["STATE", "app_scope_id", "head_state", "update_scope", "user_scope_id"]

#: The kind of the agentlog event that holds a scope's whole state.
STATE = "adk.state"
_LOCK_WAIT = 5.0  # seconds a shared-state write waits for another writer to finish


def app_scope_id(app_name: str) -> str:
    """The agentlog session id of an app's ``app:`` state."""
    return session_key("adk-app", app_name)


def user_scope_id(app_name: str, user_id: str) -> str:
    """The agentlog session id of a user's ``user:`` state in an app."""
    return session_key("adk-user", app_name, user_id)


def head_state(session: Session) -> dict[str, Any]:
    """The scope's current state: the one its HEAD event holds ({} for none)."""
    if session.head == NIL_ID:
        return {}
    record = session.resolve(session.event(session.head)).record
    return dict(record["state"]) if isinstance(record, dict) else {}


def update_scope(store: Store, sid: str, delta: dict[str, Any], **meta: Any) -> None:
    """Apply ``delta`` to the scope ``sid`` (created with ``meta`` if new)."""
    if not delta:
        return
    deadline = time.monotonic() + _LOCK_WAIT
    while True:
        try:
            if store.exists(sid):
                session = store.open(sid)
            else:
                try:
                    session = store.create(session_id=sid, framework=FRAMEWORK, **meta)
                except SessionExists:
                    session = store.open(sid)
            break
        except SessionLocked:
            # Another process is writing this shared scope right now; its
            # write is short, so wait for it rather than fail the event.
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    try:
        state = head_state(session)
        state.update(delta)
        session.append(STATE, {"state": state, "delta": delta}, "system")
    finally:
        session.close()

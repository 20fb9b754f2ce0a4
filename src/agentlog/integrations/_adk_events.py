"""ADK events on an agentlog session's timeline: their stored form, reading
them back, and what the stored history says of a new one (whether it is
stored already, whether a ``Session`` object is current, the session's
own state replayed from the events its metadata does not include yet).
"""

from __future__ import annotations

import weakref
from typing import Any

from google.adk.events.event import Event as AdkEvent
from google.adk.sessions.session import Session as AdkSession
from pydantic import ValidationError

from .. import NIL_ID, CorruptionError, Event, Session
from ._adk_state import json_state, split_scopes

__all__ = [
    "EVENT",
    "FRAMEWORK",
    "decode_event",
    "event_record",
    "holds_latest_event",
    "own_state",
    "recent_events",
    "remember_stored",
    "stored_already",
]

#: The ``framework`` metadata of every session the adapter writes.
FRAMEWORK = "adk"
#: The kind of the agentlog event that holds one ADK event.
EVENT = "adk.event"


def event_record(event: AdkEvent) -> dict[str, Any]:
    """The stored form of an event. Its state delta is stored as the
    session's state is (``json_state``): bytes as their text, as ADK's
    SQL service keeps them, not the base64 the event's own JSON gives
    them, and bytes that are not UTF-8 refused before anything is written."""
    record: dict[str, Any] = event.model_dump(mode="json", exclude_none=True)
    if event.actions is not None and event.actions.state_delta:
        record["actions"]["state_delta"] = json_state(dict(event.actions.state_delta))
    return record


def decode_event(session: Session, event: Event) -> AdkEvent:
    """The ADK event an ``adk.event`` event holds; damage is a CorruptionError."""
    record = session.resolve(event).record
    try:
        return AdkEvent.model_validate(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        reason = f"event {event.id} is not an ADK event: {first['loc']}: {first['msg']}"
        raise CorruptionError(f"session {session.id}", None, reason) from None


def recent_events(session: Session, wanted: int | None, after: float | None) -> list[AdkEvent]:
    """The session's ADK events, oldest first: the last ``wanted`` (None:
    all) of those at or after ``after`` (None: all)."""
    events: list[AdkEvent] = []
    if wanted != 0:
        for event in session.walk():
            if event.kind != EVENT:
                continue
            adk_event = decode_event(session, event)
            if after is not None and adk_event.timestamp < after:
                break
            events.append(adk_event)
            if wanted is not None and len(events) >= wanted:
                break
    events.reverse()
    return events


def own_state(session: Session) -> tuple[dict[str, Any], float]:
    """The session-scoped state and last update time, replaying any event
    written after the metadata was (a crash between the two writes)."""
    meta = session.meta
    state = dict(meta.get("adk_state") or {})
    last = float(meta.get("adk_last_update") or 0.0)
    through = meta.get("adk_through", NIL_ID)
    newer: list[AdkEvent] = []
    for event in session.walk():
        if event.id == through:
            break
        if event.kind == EVENT:
            newer.append(decode_event(session, event))
    for adk_event in reversed(newer):
        state.update(split_scopes(adk_event.actions.state_delta or {})[2])
        last = adk_event.timestamp
    return state, last


def holds_latest_event(writer: Session, session: AdkSession) -> bool:
    """Whether the ``Session`` object holds the stored history's latest
    event (or both hold none). A ``last_update_time`` behind storage is
    then only a drifted float (a round trip, a caller's adjustment), not a
    newer revision: ADK's ``DatabaseSessionService`` accepts such a
    session, and so does this one."""
    mine = session.events[-1].id if session.events else None
    for event in writer.walk():
        if event.kind == EVENT:
            record = writer.resolve(event).record
            return isinstance(record, dict) and record.get("id") == mine
    return mine is None


#: Per open writer: the HEAD its ADK event ids were read at, and those ids
#: (each with the agentlog events that hold one). HEAD moves with each
#: append, so a writer whose HEAD is still the one kept has stored nothing
#: since; another process cannot append while this one holds the lease.
_STORED_IDS: weakref.WeakKeyDictionary[Session, tuple[str, dict[str, list[str]]]] = weakref.WeakKeyDictionary()


def stored_already(writer: Session, record: dict[str, Any]) -> bool:
    """Whether an equal event (same id, same fields) is stored: ADK's
    ``append_event`` is idempotent for an equal re-delivery (a retried
    call), and keeps distinct events that merely share an id. Every event
    of the path is looked at, whatever its time: events built in parallel
    branches are appended out of time order (the walk used to stop at the
    first older one, and stored a retried event twice)."""
    event_id = record.get("id")
    if not isinstance(event_id, str):
        return False
    for held_id in _stored_ids(writer).get(event_id, ()):
        if writer.resolve(writer.event(held_id)).record == record:
            return True
    return False


def remember_stored(writer: Session, stored: Event, record: dict[str, Any]) -> None:
    """Keep the id of an event just appended among the writer's known ids."""
    kept = _STORED_IDS.get(writer)
    if kept is not None and kept[0] == stored.parent_id and isinstance(record.get("id"), str):
        kept[1].setdefault(record["id"], []).append(stored.id)
        _STORED_IDS[writer] = (stored.id, kept[1])


def _stored_ids(writer: Session) -> dict[str, list[str]]:
    head = writer.head
    kept = _STORED_IDS.get(writer)
    if kept is not None and kept[0] == head:
        return kept[1]
    ids: dict[str, list[str]] = {}
    for stored in writer.walk():
        if stored.kind != EVENT:
            continue
        held = writer.resolve(stored).record
        if isinstance(held, dict) and isinstance(held.get("id"), str):
            ids.setdefault(held["id"], []).append(stored.id)
    _STORED_IDS[writer] = (head, ids)
    return ids
    return False

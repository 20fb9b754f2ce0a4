"""Google ADK ``BaseSessionService`` on agentlog sessions.

``AgentlogSessionService(store=None)``:

- One ADK session (app_name, user_id, session_id) is one agentlog session,
  id ``adk--h--<digest of the three>``; its metadata holds the names, the
  session-scoped state and ``last_update_time``. Each ADK event is one
  agentlog event of kind ``adk.event`` (role ``user`` for the user's
  events, ``assistant`` otherwise) whose record is the event's JSON form.
- ``app:`` state lives in one agentlog session per app and ``user:`` state
  in one per (app, user): each change appends an ``adk.state`` event holding
  the whole scope's state, so the current state is the HEAD event (one
  read) and its history stays on the timeline. ``temp:`` keys are never
  persisted; partial (streamed) events are not persisted.
- The session's state in metadata is written after its event, naming the
  last event it includes (``adk_through``); a reader that finds newer events
  (a crash between the two writes) replays their deltas, so nothing is lost.
- An append through a ``Session`` object older than the stored session
  (another append happened since it was read) raises ADK's
  ``StaleSessionError``, as ADK's persistent services do. A ``Session``
  whose ``last_update_time`` is behind storage but which holds the stored
  latest event (a drifted float) is current, as ADK's
  ``DatabaseSessionService`` decides.
- The service keeps each session it appends to open for writing, holding
  agentlog's writer lease until ``close()`` or ``delete_session`` (at most
  ``max_open`` at once; past that the least recently used is closed and
  reopened on its next append): a second
  service (another process) appending to the same session gets
  ``SessionLocked``, where ADK's reload-and-append design would let two
  writers interleave one history. The shared app and user state sessions
  are opened only for each write.

Requires the ``adk`` extra.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
import uuid
from collections.abc import Generator
from typing import Any

import orjson
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event as AdkEvent
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session as AdkSession
from google.adk.sessions.state import State
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .. import NIL_ID, CorruptionError, Event, InvalidEvent, Session, SessionExists, SessionLocked, Store
from ._ids import session_key
from ._locks import release_when_collected, shared_lock
from ._open_writers import OpenWriters

__all__ = ["AgentlogSessionService"]

FRAMEWORK = "adk"
EVENT = "adk.event"
STATE = "adk.state"
# The words of ADK's DatabaseSessionService (its _STALE_SESSION_ERROR_MESSAGE).
_STALE_MESSAGE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)
_LOCK_WAIT = 5.0  # seconds a shared-state write waits for another writer to finish
_log = logging.getLogger(__name__)


def _json_state(state: dict[str, Any]) -> dict[str, Any]:
    """State in its JSON form, as ADK's persistent services store it.

    Datetimes, models and so on become their JSON form. A value with none (a
    callable) is stored as its ``repr``, with a warning, as ADK's own services
    do (``make_json_safe_state``), rather than failing the whole session.

    State the store cannot hold (bytes that are not UTF-8, a lone surrogate,
    an integer beyond 64 bits) is ``InvalidEvent``. It is checked here, before
    anything is written: a session and its scopes are separate writes, so a
    value refused by the last of them would leave the first ones behind."""
    try:
        try:
            result: dict[str, Any] = to_jsonable_python(state)
        except PydanticSerializationError:
            _log.warning(
                "session state holds values that are not JSON-serializable (e.g. callables);"
                " they are stored as their repr, as ADK's persistent services store them",
                exc_info=True,
            )
            result = to_jsonable_python(state, serialize_unknown=True)
        # The store writes records and metadata with orjson: what it refuses,
        # every write of this state would refuse.
        orjson.dumps(result)
    except (UnicodeError, orjson.JSONEncodeError) as exc:
        raise InvalidEvent(f"ADK state cannot be stored: {exc}") from None
    return result


def _split(delta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(app, user, session) parts of a state delta; ``temp:`` keys dropped."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    own: dict[str, Any] = {}
    for key, value in delta.items():
        if key.startswith(State.APP_PREFIX):
            app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            user[key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            own[key] = value
    return app, user, own


def _delta_of(record: Any) -> dict[str, Any]:
    actions = record.get("actions") if isinstance(record, dict) else None
    delta = actions.get("state_delta") if isinstance(actions, dict) else None
    return delta if isinstance(delta, dict) else {}


class _Closed:
    """What ``close()`` returns: already done, and awaitable for callers that
    treat the service like ADK's (whose ``close`` is a coroutine). Not a
    coroutine itself, so a plain call leaves no "never awaited" warning."""

    def __await__(self) -> Generator[None, None, None]:
        return
        yield  # a generator that finishes at once


class AgentlogSessionService(BaseSessionService):
    """ADK sessions, events and scoped state kept in an agentlog store."""

    def __init__(self, store: Store | None = None, *, max_open: int = 256) -> None:
        self.store = store if store is not None else Store()
        # Sessions held open for writing; past ``max_open`` the least recently
        # used is closed (releasing its lease) and reopened on its next append.
        self._writers: OpenWriters[Session] = OpenWriters(max_open, Session.close)
        release_when_collected(self, self._writers.close_all)  # dropped without close()
        # Shared with every service over this store in the process: see _locks.
        self._lock = shared_lock(self.store, FRAMEWORK)

    # --- ids and sessions -------------------------------------------------------------
    @staticmethod
    def session_id_for(app_name: str, user_id: str, session_id: str) -> str:
        """The agentlog session id of an ADK session."""
        return session_key("adk", app_name, user_id, session_id)

    def _writer(self, sid: str) -> Session:
        session = self._writers.get(sid)
        if session is None:
            session = self.store.open(sid)
            self._writers.put(sid, session)
        return session

    def _read(self, sid: str) -> tuple[Session, bool]:
        """A session to read: ours if we hold it, else a read-only handle (close it)."""
        held = self._writers.get(sid)
        if held is not None:
            return held, False
        return self.store.open(sid, readonly=True), True

    def close(self) -> _Closed:
        """Release every writer lease this service holds, at once. ADK's own
        services have ``async def close()``, so the result may also be
        awaited (``await service.close()``); calling it plainly is enough."""
        with self._lock:
            self._writers.close_all()
        return _Closed()

    # --- shared (app / user) state ----------------------------------------------------------
    def _scope_state(self, sid: str) -> dict[str, Any]:
        if not self.store.exists(sid):
            return {}
        session, opened = self._read(sid)
        try:
            if session.head == NIL_ID:
                return {}
            record = session.resolve(session.event(session.head)).record
            return dict(record["state"]) if isinstance(record, dict) else {}
        finally:
            if opened:
                session.close()

    def _update_scope(self, sid: str, delta: dict[str, Any], **meta: Any) -> None:
        if not delta:
            return
        deadline = time.monotonic() + _LOCK_WAIT
        while True:
            try:
                if self.store.exists(sid):
                    session = self.store.open(sid)
                else:
                    try:
                        session = self.store.create(session_id=sid, framework=FRAMEWORK, **meta)
                    except SessionExists:
                        session = self.store.open(sid)
                break
            except SessionLocked:
                # Another process is writing this shared scope right now; its
                # write is short, so wait for it rather than fail the event.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        try:
            state = {}
            if session.head != NIL_ID:
                record = session.resolve(session.event(session.head)).record
                state = dict(record["state"]) if isinstance(record, dict) else {}
            state.update(delta)
            session.append(STATE, {"state": state, "delta": delta}, "system")
        finally:
            session.close()

    def _app_sid(self, app_name: str) -> str:
        return session_key("adk-app", app_name)

    def _user_sid(self, app_name: str, user_id: str) -> str:
        return session_key("adk-user", app_name, user_id)

    def _merged(
        self, app_name: str, user_id: str, own: dict[str, Any], seen: dict[str, dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Session state with the app and user scopes merged in, prefixed.
        ``seen`` shares scope reads between the sessions of one listing."""
        seen = {} if seen is None else seen
        state = dict(own)
        for prefix, sid in (
            (State.APP_PREFIX, self._app_sid(app_name)),
            (State.USER_PREFIX, self._user_sid(app_name, user_id)),
        ):
            if sid not in seen:
                seen[sid] = self._scope_state(sid)
            for key, value in seen[sid].items():
                state[prefix + key] = copy.deepcopy(value)
        return state

    # --- the service --------------------------------------------------------------------
    def _create(self, app_name: str, user_id: str, state: dict[str, Any] | None, session_id: str | None) -> AdkSession:
        # A blank id asks for a new one, as ADK's services read it.
        session_id = (session_id or "").strip() or str(uuid.uuid4())
        sid = self.session_id_for(app_name, user_id, session_id)
        app, user, own = _split(_json_state(state or {}))
        now = time.time()
        with self._lock:
            if self.store.exists(sid):
                raise AlreadyExistsError(f"Session with id {session_id} already exists.")
            try:
                created = self.store.create(
                    name=f"adk {app_name}/{user_id}/{session_id}",
                    session_id=sid,
                    framework=FRAMEWORK,
                    app_name=app_name,
                    user_id=user_id,
                    adk_session_id=session_id,
                    adk_state=own,
                    adk_through=NIL_ID,
                    adk_last_update=now,
                )
            except SessionExists:
                raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
            self._writers.put(sid, created)
            self._update_scope(self._app_sid(app_name), app, app_name=app_name)
            self._update_scope(self._user_sid(app_name, user_id), user, app_name=app_name, user_id=user_id)
            return AdkSession(
                app_name=app_name,
                user_id=user_id,
                id=session_id,
                state=self._merged(app_name, user_id, own),
                last_update_time=now,
            )

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> AdkSession:
        return await asyncio.to_thread(self._create, app_name, user_id, state, session_id)

    def _own_state(self, session: Session) -> tuple[dict[str, Any], float]:
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
                newer.append(self._decode(session, event))
        for adk_event in reversed(newer):
            state.update(_split(adk_event.actions.state_delta or {})[2])
            last = adk_event.timestamp
        return state, last

    def _get(self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None) -> AdkSession | None:
        # Ids are stored stripped (as by ADK's services), and the Session names
        # the stored id, so that appending through it finds the session.
        session_id = session_id.strip() if session_id else session_id
        sid = self.session_id_for(app_name, user_id, session_id)
        with self._lock:
            if not self.store.exists(sid):
                return None
            session, opened = self._read(sid)
            try:
                own, last = self._own_state(session)
                events: list[AdkEvent] = []
                wanted = config.num_recent_events if config else None
                after = config.after_timestamp if config else None
                if wanted != 0:
                    for event in session.walk():
                        if event.kind != EVENT:
                            continue
                        adk_event = self._decode(session, event)
                        if after is not None and adk_event.timestamp < after:
                            break
                        events.append(adk_event)
                        if wanted is not None and len(events) >= wanted:
                            break
                events.reverse()
            finally:
                if opened:
                    session.close()
            return AdkSession(
                app_name=app_name,
                user_id=user_id,
                id=session_id,
                state=self._merged(app_name, user_id, own),
                events=events,
                last_update_time=last,
            )

    @staticmethod
    def _decode(session: Session, event: Event) -> AdkEvent:
        """The ADK event an ``adk.event`` event holds; damage is a CorruptionError."""
        record = session.resolve(event).record
        try:
            return AdkEvent.model_validate(record)
        except ValidationError as exc:
            first = exc.errors()[0]
            reason = f"event {event.id} is not an ADK event: {first['loc']}: {first['msg']}"
            raise CorruptionError(f"session {session.id}", None, reason) from None

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> AdkSession | None:
        return await asyncio.to_thread(self._get, app_name, user_id, session_id, config)

    def _list(self, app_name: str, user_id: str | None) -> ListSessionsResponse:
        found = []
        scopes: dict[str, dict[str, Any]] = {}  # each scope read once per listing
        with self._lock:
            for info in self.store.list(archived=True):
                meta = info.meta or self.store.meta(info.id)
                if meta.get("framework") != FRAMEWORK or "adk_session_id" not in meta:
                    continue
                if meta.get("app_name") != app_name or (user_id is not None and meta.get("user_id") != user_id):
                    continue
                session, opened = self._read(info.id)
                try:
                    own, last = self._own_state(session)
                finally:
                    if opened:
                        session.close()
                found.append(
                    AdkSession(
                        app_name=app_name,
                        user_id=meta["user_id"],
                        id=meta["adk_session_id"],
                        state=self._merged(app_name, meta["user_id"], own, scopes),
                        last_update_time=last,
                    )
                )
        found.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=found)

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        return await asyncio.to_thread(self._list, app_name, user_id)

    def _delete(self, app_name: str, user_id: str, session_id: str) -> None:
        sid = self.session_id_for(app_name, user_id, session_id.strip() if session_id else session_id)
        with self._lock:
            held = self._writers.pop(sid)
            if held is not None:
                held.close()
            if self.store.exists(sid):
                self.store.delete(sid)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await asyncio.to_thread(self._delete, app_name, user_id, session_id)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self._scope_state, self._user_sid(app_name, user_id))

    @staticmethod
    def _is_current(writer: Session, session: AdkSession) -> bool:
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

    @staticmethod
    def _record(event: AdkEvent) -> dict[str, Any]:
        """The stored form of an event. Its state delta is stored as the
        session's state is (``_json_state``): bytes as their text, as ADK's
        SQL service keeps them, not the base64 the event's own JSON gives
        them, and bytes that are not UTF-8 refused before anything is written."""
        record: dict[str, Any] = event.model_dump(mode="json", exclude_none=True)
        if event.actions is not None and event.actions.state_delta:
            record["actions"]["state_delta"] = _json_state(dict(event.actions.state_delta))
        return record

    @staticmethod
    def _stored_already(writer: Session, record: dict[str, Any]) -> bool:
        """Whether an equal event (same id, same fields) is stored: ADK's
        ``append_event`` is idempotent for an equal re-delivery (a retried
        call), and keeps distinct events that merely share an id. The walk
        goes back only over events at or after this one's time: an equal
        event has the same time, and events are appended in time order."""
        timestamp = record.get("timestamp")
        for stored in writer.walk():
            if stored.kind != EVENT:
                continue
            held = writer.resolve(stored).record
            if not isinstance(held, dict):
                continue
            if held == record:
                return True
            at = held.get("timestamp")
            if isinstance(at, int | float) and isinstance(timestamp, int | float) and at < timestamp:
                return False
        return False

    def _persist(self, session: AdkSession, event: AdkEvent) -> bool:
        """Store ``event``; False when an equal one is stored already."""
        sid = self.session_id_for(session.app_name, session.user_id, session.id)
        record = self._record(event)
        with self._lock:
            if not self.store.exists(sid):
                raise SessionNotFoundError(f"Session {session.id} not found.")
            writer = self._writer(sid)
            if self._stored_already(writer, record):
                return False
            own, stored_last = self._own_state(writer)
            if stored_last > session.last_update_time and not self._is_current(writer, session):
                # As ADK's persistent services do: this Session object was read
                # before another append, and writing through it would lose that one.
                raise StaleSessionError(_STALE_MESSAGE)
            role = "user" if event.author == "user" else "assistant"
            stored = writer.append(EVENT, record, role)
            app, user, session_delta = _split(_delta_of(record))
            self._update_scope(self._app_sid(session.app_name), app, app_name=session.app_name)
            self._update_scope(
                self._user_sid(session.app_name, session.user_id),
                user,
                app_name=session.app_name,
                user_id=session.user_id,
            )
            own.update(session_delta)
            writer.update_meta(adk_state=own, adk_through=stored.id, adk_last_update=event.timestamp)
            # The Session object is brought up to date under the lock, as
            # DatabaseSessionService does under its session lock: another
            # append through the same object (tasks gathered on one session)
            # waiting for the lock must find it current, not stale.
            session.last_update_time = event.timestamp
            return True

    async def append_event(self, session: AdkSession, event: AdkEvent) -> AdkEvent:
        """Persist a final event; partial events and ``temp:`` keys are not persisted."""
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        if not await asyncio.to_thread(self._persist, session, copy.deepcopy(event)):
            return event  # an equal event was stored already: neither stored nor applied again
        return self._commit_event_to_session(session, event)

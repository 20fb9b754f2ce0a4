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

The service is here; what it stands on is in ``_adk_state`` (state's JSON
form and scopes), ``_adk_events`` (events' stored form, reading them back,
replaying the session's own state) and ``_adk_scopes`` (the app and user
state sessions).

Requires the ``adk`` extra.
"""

from __future__ import annotations

import asyncio
import copy
import time
import uuid
import weakref
from collections.abc import Generator
from typing import Any

try:
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
except ModuleNotFoundError as exc:  # the extra is not installed: say which
    from .._extras import extra_missing

    raise extra_missing(exc, extra="adk", module=__name__) from exc

from .. import NIL_ID, Session, SessionExists, Store
from ._adk_events import (
    EVENT,
    FRAMEWORK,
    event_record,
    holds_latest_event,
    own_state,
    recent_events,
    remember_stored,
    stored_already,
)
from ._adk_scopes import app_scope_id, head_state, update_scope, user_scope_id
from ._adk_state import json_state, split_scopes, state_delta_of
from ._ids import session_key
from ._locks import release_when_collected, shared_lock
from ._open_writers import OpenWriters

__all__ = ["AgentlogSessionService"]

# The words of ADK's DatabaseSessionService (its _STALE_SESSION_ERROR_MESSAGE).
_STALE_MESSAGE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)


class _Closed:
    """What ``close()`` returns: already done, and awaitable for callers that
    treat the service like ADK's (whose ``close`` is a coroutine). Not a
    coroutine itself, so a plain call leaves no "never awaited" warning."""

    def __await__(self) -> Generator[None, None, None]:
        return
        yield  # a generator that finishes at once


#: Every service of this process: a delete makes each of them over the same
#: store let go of the session first (``_delete``).
_SERVICES: weakref.WeakSet[AgentlogSessionService] = weakref.WeakSet()


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
        _SERVICES.add(self)

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
            return head_state(session)
        finally:
            if opened:
                session.close()

    def _merged(
        self, app_name: str, user_id: str, own: dict[str, Any], seen: dict[str, dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Session state with the app and user scopes merged in, prefixed.
        ``seen`` shares scope reads between the sessions of one listing."""
        seen = {} if seen is None else seen
        state = dict(own)
        for prefix, sid in (
            (State.APP_PREFIX, app_scope_id(app_name)),
            (State.USER_PREFIX, user_scope_id(app_name, user_id)),
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
        app, user, own = split_scopes(json_state(state or {}))
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
            update_scope(self.store, app_scope_id(app_name), app, app_name=app_name)
            update_scope(self.store, user_scope_id(app_name, user_id), user, app_name=app_name, user_id=user_id)
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
                own, last = own_state(session)
                wanted = config.num_recent_events if config else None
                after = config.after_timestamp if config else None
                events = recent_events(session, wanted, after)
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

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> AdkSession | None:
        if session_id is None:
            return None  # as ADK's own services answer it (no session has no id)
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
                    own, last = own_state(session)
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
            # Every service over this store in the process lets go of it: one
            # holding it open for writing made the delete fail (SessionLocked),
            # where ADK's database service deletes whatever another instance
            # read. The shared lock keeps them all out meanwhile; the next
            # append through another service finds no session, as ADK's does.
            for service in [s for s in list(_SERVICES) if s.store.url == self.store.url]:
                held = service._writers.pop(sid)
                if held is not None:
                    held.close()
            if self.store.exists(sid):
                self.store.delete(sid)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await asyncio.to_thread(self._delete, app_name, user_id, session_id)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self._scope_state, user_scope_id(app_name, user_id))

    def _persist(self, session: AdkSession, event: AdkEvent) -> bool:
        """Store ``event``; False when an equal one is stored already."""
        sid = self.session_id_for(session.app_name, session.user_id, session.id)
        record = event_record(event)
        with self._lock:
            if not self.store.exists(sid):
                raise SessionNotFoundError(f"Session {session.id} not found.")
            writer = self._writer(sid)
            if stored_already(writer, record):
                return False
            own, stored_last = own_state(writer)
            if stored_last > session.last_update_time and not holds_latest_event(writer, session):
                # As ADK's persistent services do: this Session object was read
                # before another append, and writing through it would lose that one.
                raise StaleSessionError(_STALE_MESSAGE)
            role = "user" if event.author == "user" else "assistant"
            stored = writer.append(EVENT, record, role)
            remember_stored(writer, stored, record)
            app, user, session_delta = split_scopes(state_delta_of(record))
            update_scope(self.store, app_scope_id(session.app_name), app, app_name=session.app_name)
            update_scope(
                self.store,
                user_scope_id(session.app_name, session.user_id),
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

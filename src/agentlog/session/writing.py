"""Writing a session: appends (one event, or a chain all or nothing), the
selection of the next append's parent, HEAD moved with no event, and the
lazy gate, which writes a session held in memory to its store once its
first assistant message comes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._writers import WRITERS
from ..errors import AgentlogError, EventNotFound, InvalidEvent, SessionClosed, SessionExists, SessionLocked
from ..event import NIL_ID, Event, check_event_id
from ..lifecycle import LAZY_IDS
from ..timeline import NewEventLike, as_new_event, check_draft
from .base import SessionBase

__all__ = ["SessionWriting"]


class SessionWriting(SessionBase):
    """Appending, selecting the next parent, moving HEAD, and the lazy gate."""

    def append(self, kind: str, record: Any = None, role: str | None = None) -> Event:
        """Append one event as a child of HEAD (or of the selected event).

        Returns once the event is durable (invariant 1)."""
        if self._closed:
            raise SessionClosed(self.id)
        check_draft(kind, record, role)
        with self._lock:
            if self._lazy and kind == "message" and role == "assistant":
                self.persist()
            selected, timeline = self._pending, self._timeline
            submitted = timeline.submit_one(kind, record, role, parent=selected)
            self._pending = None
        try:
            return timeline.run(submitted)[0]
        except BaseException:
            with self._lock:
                if self._pending is None:
                    self._pending = selected
            raise

    def append_many(self, items: Iterable[NewEventLike]) -> list[Event]:
        """Append a chain of events atomically: after a crash, all or none."""
        self._check_open()
        if isinstance(items, (str, bytes, dict)) or not isinstance(items, Iterable):
            raise InvalidEvent(f"append_many takes an iterable of events, not a {type(items).__name__}")
        drafts = [as_new_event(item) for item in items]
        if not drafts:
            return []
        with self._lock:
            if self._lazy and any(d.kind == "message" and d.role == "assistant" for d in drafts):
                self.persist()
            # Submitted under the lock that the lazy gate switches under, so
            # no append can land in a buffer that was already copied.
            selected, timeline = self._pending, self._timeline
            submitted = timeline.submit(drafts, parent=selected)
            self._pending = None  # a selection is used up by exactly this append
        try:
            # Outside the lock: threads sharing this Session share one sync.
            return timeline.run(submitted)
        except BaseException:
            with self._lock:
                if self._pending is None:
                    self._pending = selected  # the selection still stands for a retry
            raise

    def select(self, event_id: str | None) -> None:
        """Make ``event_id`` the parent of the next append, without moving HEAD.

        Two-phase branching: HEAD moves only when that append happens.
        ``select(None)`` drops the selection."""
        self._check_open()
        with self._lock:
            if event_id is None:
                self._pending = None
                return
            if event_id != NIL_ID:
                check_event_id(event_id)
                if not self.storage.contains(event_id):
                    raise EventNotFound(event_id, self.id)
            self._pending = event_id

    def checkout(self, event_id: str) -> None:
        """Move HEAD to ``event_id`` durably, appending no event."""
        self._check_open()
        with self._lock:
            self._timeline.checkout(event_id)
            self._pending = None

    @property
    def persisted(self) -> bool:
        """False while a lazily created session lives only in memory."""
        return not self._lazy

    def persist(self) -> None:
        """Write a lazily created session to its store now (idempotent).

        Everything buffered moves in one all-or-nothing commit with ids,
        parents, times and HEAD unchanged, then the sidecars follow; the
        switch happens under the lock every append is submitted under."""
        self._check_open()
        with self._lock:
            if not self._lazy:
                return
            buffer = self._timeline.storage
            events = [buffer.get(entry.id) for entry in buffer.entries()]
            try:
                real = self._store.create_timeline(self.id, buffer.read_meta(), events, buffer, buffer.head())
            except (SessionExists, SessionLocked) as exc:
                # Another process took the id meanwhile (this one's creates
                # are refused while the id is reserved): say where the events are.
                held = "1 event is" if len(events) == 1 else f"{len(events):,} events are"
                exc.add_note(
                    f"this lazy session's {held} still in memory, in this Session: "
                    "session.fork() stores them under a new id"
                )
                raise
            try:
                for name in buffer.sidecar_names():
                    real.storage.write_sidecar(name, buffer.read_sidecar(name))
            except BaseException:
                WRITERS.release(self._store.url, self.id, real)
                try:
                    # Half a session would make the retry fail with SessionExists.
                    self._store.delete(self.id)
                except AgentlogError:
                    pass  # the first failure is the one to report
                raise
            self._timeline = real
            self._lazy = False
            buffer.close()
            LAZY_IDS.release(self._store.url, self.id, self)

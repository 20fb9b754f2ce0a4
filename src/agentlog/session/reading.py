"""Reading a session: single events and their blobs, walks and paths back
to the root, the model's context, every event in append order, and
catching up with (or waiting for) a writer."""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from ..backends.base import IndexEntry
from ..context import assemble_context
from ..errors import CorruptionError, EventNotFound
from ..event import NIL_ID, Event, check_event_id, is_event_id
from .base import SessionBase

__all__ = ["SessionReading"]


#: How many events a walk reads at first, and at most, per bulk read.
_FIRST_PAGE, _LAST_PAGE = 16, 4096


class SessionReading(SessionBase):
    """Reading a session: events, blobs, paths, the context, the tree."""

    def event(self, event_id: str) -> Event:
        self._check_open()
        return self.storage.get(check_event_id(event_id))

    def __contains__(self, event_id: object) -> bool:
        self._check_open()
        return is_event_id(event_id) and self.storage.contains(str(event_id))

    def resolve(self, event: Event) -> Event:
        """The event with its blob payload loaded (and its digest verified)."""
        self._check_open()
        if event.loaded or event.digest is None:
            return event
        data = self.storage.get_blob(event.digest)
        try:
            return event.with_record(orjson.loads(data))
        except orjson.JSONDecodeError as exc:
            raise CorruptionError(f"blob {event.digest}", None, f"does not parse: {exc}") from None

    def walk(self, event_id: str | None = None) -> Iterator[Event]:
        """Events from ``event_id`` (default HEAD) back to the root, read in
        growing bulk pages so a short walk reads little and a long one few times."""
        self._check_open()
        current = self.head if event_id is None else check_event_id(event_id)
        page, seen, bound = _FIRST_PAGE, 0, len(self) + 1
        while current != NIL_ID:
            events = self.storage.ancestors(current, limit=page)
            if not events:
                raise EventNotFound(current, self.id)
            yield from events
            seen += len(events)
            if seen > bound:
                raise CorruptionError(
                    self.id, None, f"parent links loop at {current}, or the event count is wrong; see agentlog fsck"
                )
            current = events[-1].parent_id
            page = min(page * 2, _LAST_PAGE)

    def path(self, event_id: str | None = None) -> list[Event]:
        """Root to ``event_id`` (default HEAD), reading only that path."""
        self._check_open()
        current = self.head if event_id is None else check_event_id(event_id)
        if current == NIL_ID:
            return []
        events = self.storage.ancestors(current)
        events.reverse()
        return events

    def transcript(self) -> list[Event]:
        """The whole active path, root to HEAD: nothing dropped."""
        return self.path()

    def context(self, *, at: str | None = None, resolve: bool = False) -> list[Event]:
        """What the model gets: the latest compaction on the path (its summary),
        the events it kept, then everything after it. Without a compaction,
        the whole path. ``at`` is the path's last event (default: where the
        next append goes, ``next_parent``: HEAD, or the selected event).
        Blob payloads stay unloaded unless ``resolve``."""
        self._check_open()
        events = assemble_context(self.storage, self.next_parent if at is None else check_event_id(at), self.resolve)
        if resolve:
            events = [self.resolve(e) for e in events]
        return events

    def entries(self) -> list[IndexEntry]:
        """Every event's index entry (no payloads), in append order."""
        self._check_open()
        return list(self.storage.entries())

    def events(self) -> Iterator[Event]:
        """Every event of every branch, in append order, read as it goes
        (a payload kept in a blob stays unloaded: ``resolve`` loads one).
        What reads a whole session, as ``agentlog tree`` and the exports
        do, reads it in bulk this way rather than an ``event()`` at a time.
        Once the session is closed, the next step raises ``SessionClosed``,
        as every read does: the log is read no more."""
        self._check_open()
        return self._while_open(self.storage.events())

    def _while_open(self, events: Iterator[Event]) -> Iterator[Event]:
        while True:
            self._check_open()  # before the next read, which would open the log again
            event = next(events, None)
            if event is None:
                return
            yield event

    def children(self) -> dict[str, list[str]]:
        """Parent id -> child ids, for drawing the tree (reads the index only)."""
        tree: dict[str, list[str]] = {}
        for entry in self.entries():
            tree.setdefault(entry.parent_id, []).append(entry.id)
        return tree

    def refresh(self) -> None:
        """A read-only session catches up with its writer."""
        self._check_open()
        self.storage.refresh()

    def wait_for_commit(self, timeout: float) -> bool:
        """Block until a writer (in any process, on any machine the backend
        reaches) commits to this session, or ``timeout`` seconds pass; True
        if it did, and then this session has caught up. PostgreSQL is told
        (LISTEN); the other backends look every 50 ms."""
        self._check_open()
        changed = self.storage.wait_for_commit(timeout)
        if changed:
            self.storage.refresh()
        return changed

"""A session's core on the backend: creating its storage with its first
events (verbatim, in one atomic commit) and opening a writer's timeline,
each registered as the process's one writer of that session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._writers import WRITERS
from ..backends.base import Commit, SessionStorage
from ..errors import InvalidEvent
from ..event import NIL_ID, Event
from ..timeline import Timeline, stage_existing
from .continuing import StoreContinuing

__all__ = ["StoreTimelines"]


class StoreTimelines(StoreContinuing):
    """Timelines created or opened on the backend; ``Store`` wraps them in sessions."""

    def _initial(
        self, events: Sequence[Event], source: SessionStorage | None, head: str | None = None
    ) -> Commit | None:
        if not events and head in (None, NIL_ID):
            return None
        staged, blobs = stage_existing(events, source, self.blob_threshold)
        if head is None:
            head = staged[-1].id
        elif head != NIL_ID and head not in {e.id for e in staged}:
            # HEAD must name one of the events the session starts with: a
            # HEAD outside them is a session whose active path is broken.
            raise InvalidEvent(f"HEAD {head} is not one of the {len(staged)} events the session is created with")
        return Commit(tuple(staged), head, NIL_ID, blobs)

    def create_timeline(
        self,
        session_id: str,
        meta: dict[str, Any],
        events: Sequence[Event] = (),
        source: SessionStorage | None = None,
        head: str | None = None,
    ) -> Timeline:
        """Create a session on the backend with its first events (kept
        verbatim, in one atomic commit), register its writer, and leave its
        working directory's breadcrumb. ``Store.create`` and the lazy gate
        use it; HEAD ends on ``head`` (default: the last event)."""
        storage = self.backend.create(session_id, meta, self._initial(events, source, head))
        timeline = WRITERS.adopt(self.url, session_id, Timeline(storage, blob_threshold=self.blob_threshold))
        try:
            self._leave_breadcrumb(session_id, meta.get("working_dir"))
        except BaseException:
            WRITERS.release(self.url, session_id, timeline)
            raise
        return timeline

    def _timeline(self, session_id: str) -> Timeline:
        """A writer's core over a freshly opened storage (its lease released
        again if the core cannot start on it)."""
        storage = self.backend.open(session_id, readonly=False)
        try:
            return Timeline(storage, blob_threshold=self.blob_threshold)
        except BaseException:
            storage.close()
            raise

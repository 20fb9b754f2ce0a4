"""Session: the policy layer over one session's timeline.

HEAD selection, paths, context, compaction and lifecycle live here; the
core (``Timeline``) assigns ids and parents and frames commits; bytes live
in the backend. Safe to share between threads: appends are ordered by the
core and their syncs shared by the backend; the selection is guarded.

The parts, one concern a module, which ``Session`` combines: ``base``
(state, identity, the open checks), ``reading``, ``writing`` (with the
lazy gate), ``metadata``, ``sidecars`` and ``working`` (the working
context: compaction, checkpoints, provider views, sync); ``Session``
itself adds imports, forks and its lifetime.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._writers import WRITERS
from ..backends.base import SessionStorage
from ..errors import InvalidEvent
from ..event import NIL_ID, Event, check_event_id
from ..lifecycle import LAZY_IDS, fork_meta
from .sidecars import SessionSidecars
from .working import SessionWorkingContext

__all__ = ["Session"]


class Session(SessionWorkingContext, SessionSidecars):
    """One session's timeline, open for writing or read-only.

    Get one from ``Store.create`` or ``Store.open``; close it (or use it as
    a context manager) to release the writer's lease."""

    def import_events(self, events: Sequence[Event], source: Session | SessionStorage | None = None) -> list[Event]:
        """Append events that already have ids, parents and times (importers,
        bundles, copies between stores), as one all-or-nothing batch.

        Ids must sort after every id already in the session; a parent must
        be stored already or come earlier in ``events``. HEAD moves to the
        last one. Blob payloads (``record`` None with a digest) are read
        from ``source``, another session."""
        self._check_open()
        events = list(events)
        for event in events:
            if not isinstance(event, Event):
                raise InvalidEvent(f"import_events takes Event objects, not a {type(event).__name__}")
        storage = source.storage if isinstance(source, Session) else source
        with self._lock:
            return self._timeline.import_events(events, storage)

    def fork(self, at: str | None = None, *, name: str | None = None, session_id: str | None = None) -> Session:
        """A new session holding the path to ``at`` (default HEAD).

        Records ``forked_from`` in its metadata; blobs are shared (hard
        links on files) or copied once, never decoded."""
        self._check_open()  # a closed handle's storage is closed: its blobs cannot be copied
        at = self.head if at is None else check_event_id(at)
        events = self.path(at) if at != NIL_ID else []
        fork: Session = self._store.create(
            session_id=session_id, events=events, source=self.storage, **fork_meta(self, at, name)
        )
        return fork

    # --- lifetime ----------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._lazy:
                LAZY_IDS.release(self._store.url, self.id, self)
            if self.readonly or self._lazy:
                self._timeline.close()
            else:
                WRITERS.release(self._store.url, self.id, self._timeline)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "r" if self.readonly else "w"
        if self._closed:
            return f"<Session {self.id} {mode} closed>"
        return f"<Session {self.id} {mode} head={self.head[:13]}>"

"""What every part of a ``Session`` stands on: its state, its identity,
and the open and writable checks.

``Session`` is made of one class per concern (reading, writing and the
lazy gate, metadata, sidecars, the working context), each deriving from
``SessionBase`` and from the parts it calls, so that a type checker sees
every method a part uses.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..backends.base import SessionStorage
from ..compaction import CompactionPolicy
from ..errors import ReadOnlySession, SessionClosed
from ..summarize import Summarizer
from ..timeline import Timeline

if TYPE_CHECKING:
    from ..store import Store  # the store imports this package

__all__ = ["SessionBase"]


class SessionBase:
    """The state every part of a ``Session`` shares, what the session is
    (id, HEAD, the selection, its store and storage), and the checks that
    it is open (and writable) that every call makes first."""

    def __init__(self, store: Store, timeline: Timeline, *, lazy: bool = False) -> None:
        self._store = store
        self._timeline = timeline
        self._lock = threading.RLock()
        self._pending: str | None = None
        self._closed = False
        self._lazy = lazy
        #: Compaction policy and summarizer; set them to change the defaults.
        self.compaction = CompactionPolicy()
        self._summarizer: Summarizer | None = None
        # An event's checkpoint saved in its batch, once looked for (state()).
        self._saved_with: dict[str, str | None] = {}

    # --- identity ---------------------------------------------------------------
    @property
    def id(self) -> str:
        return self._timeline.session_id

    @property
    def readonly(self) -> bool:
        return self.storage.readonly

    @property
    def head(self) -> str:
        """The id HEAD names durably (NIL_ID while the session is empty)."""
        self._check_open()
        return self.storage.head()

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran; every call that reads or writes the
        session then raises SessionClosed (docs/sessions.md)."""
        return self._closed

    @property
    def pending(self) -> str | None:
        """The event selected to be the next append's parent, if any."""
        return self._pending

    @property
    def next_parent(self) -> str:
        """The event the next append continues: the selected one, else HEAD.
        What a model is sent (``context()``, the provider views, ``state()``)
        ends here, so a reply is stored on the path it answers."""
        pending = self._pending
        return self.head if pending is None else pending

    @property
    def store(self) -> Store:
        """The store this session was opened from."""
        return self._store

    @property
    def storage(self) -> SessionStorage:
        """The backend's storage under this session (for tools that inspect it)."""
        return self._timeline.storage

    @property
    def warnings(self) -> list[str]:
        """What opening this session repaired on its own (torn tail, index)."""
        return list(self.storage.warnings)

    def __len__(self) -> int:
        self._check_open()
        # A SQL store keeps the count in a column: a hand-edited negative one
        # must not make len() itself fail (fsck reports the count).
        return max(self.storage.event_count(), 0)

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed(self.id)

    def _check_writable(self) -> None:
        self._check_open()
        if self.readonly:
            raise ReadOnlySession(self.id)

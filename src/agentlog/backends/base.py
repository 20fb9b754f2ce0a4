"""The narrow storage seam under Store and Session.

A backend persists and finds bytes: it appends chains of events, moves
HEAD, finds an event by id, keeps blobs and per-session metadata, and holds
the writer's lease. Everything that is policy (which parent a new event
gets after ``select``, what ``context()`` means, compaction, the lazy gate,
listing order) lives above it, in ``Session`` and ``Store``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from ..event import Event

__all__ = ["Backend", "Draft", "IndexEntry", "Problem", "SessionStats", "SessionStorage"]

DEFAULT_BLOB_THRESHOLD = 16 * 1024
DEFAULT_CHUNK_SIZE = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Draft:
    """An event not yet stored: the backend gives it id, parent and time."""

    kind: str
    record: Any
    role: str | None = None


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """What the index knows of an event, without its payload."""

    id: str
    parent_id: str
    branch_from: str | None
    kind: str
    role: str | None
    timestamp: str
    digest: str | None


@dataclass(frozen=True, slots=True)
class SessionStats:
    """Listing facts a backend can give without reading event payloads."""

    event_count: int
    updated_ns: int


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing fsck found: where, and what."""

    session_id: str
    path: str
    offset: int | None
    message: str
    severity: str = "error"  # "error" fails fsck; "warning" does not

    def __str__(self) -> str:
        where = self.path if self.offset is None else f"{self.path}@{self.offset}"
        return f"{self.session_id}: {where}: {self.message}"


@dataclass
class RepairReport:
    session_id: str
    actions: list[str] = field(default_factory=list)


class SessionStorage(ABC):
    """One session's storage, open for reading or for writing."""

    session_id: str
    readonly: bool

    @abstractmethod
    def head(self) -> str:
        """The id HEAD names (NIL_ID for an empty session)."""

    @abstractmethod
    def append(
        self,
        drafts: Sequence[Draft],
        *,
        parent: str | None = None,
        branch_from: str | None = None,
    ) -> list[Event]:
        """Append ``drafts`` as one chain, all or nothing, and move HEAD to its end.

        The first event's parent is ``parent`` when given, else the current
        HEAD at the moment of commit; each later one's parent is the one
        before it. Following HEAD onto an event that already has children
        (after a checkout) sets the first event's ``branch_from`` to it. Returns only when the chain is as durable as the
        backend's durability mode promises (invariant 1)."""

    @abstractmethod
    def append_existing(self, events: Sequence[Event],
                        source: "SessionStorage | None" = None) -> list[Event]:
        """Append events keeping their ids, parents and timestamps, as one
        all-or-nothing batch (fork, migration, the lazy gate). Ids must sort
        after every id already stored. Blob payloads come from ``source``."""

    @abstractmethod
    def write_sidecar(self, name: str, data: bytes | None) -> None:
        """Replace ``name`` in the session's artifacts atomically (None removes)."""

    @abstractmethod
    def read_sidecar(self, name: str) -> bytes | None: ...

    def sidecar_names(self) -> list[str]:
        return []

    def artifacts_dir(self) -> str | None:
        """A directory for the session's sidecar files, if the backend has one."""
        return None

    @abstractmethod
    def set_head(self, event_id: str) -> None:
        """Move HEAD durably without appending an event."""

    @abstractmethod
    def get(self, event_id: str) -> Event:
        """The event, with ``record=None`` when its payload is in a blob."""

    @abstractmethod
    def contains(self, event_id: str) -> bool: ...

    @abstractmethod
    def has_children(self, event_id: str) -> bool: ...

    @abstractmethod
    def entries(self) -> Iterator[IndexEntry]:
        """Every event's index entry, in append order."""

    @abstractmethod
    def load_blob(self, digest: str) -> bytes:
        """A blob's bytes, verified against ``digest`` (invariant 9)."""

    @abstractmethod
    def event_count(self) -> int: ...

    @abstractmethod
    def read_meta(self) -> dict[str, Any]: ...

    @abstractmethod
    def write_meta(self, meta: dict[str, Any]) -> None:
        """Replace session metadata atomically."""

    def refresh(self) -> None:
        """A reader catches up with what the writer appended since."""

    @abstractmethod
    def close(self) -> None: ...


class Backend(ABC):
    """Where sessions live. One instance serves a Store."""

    durability: str

    @abstractmethod
    def create(self, session_id: str, meta: dict[str, Any], *,
               events: Sequence[Event] = (), source: SessionStorage | None = None) -> SessionStorage:
        """Create a session and return it open for writing (lease held).

        ``events`` (kept verbatim, blobs from ``source``) are in the session
        when it appears: after a crash it exists with all of them or not at all."""

    @abstractmethod
    def open(self, session_id: str, *, readonly: bool) -> SessionStorage: ...

    @abstractmethod
    def exists(self, session_id: str) -> bool: ...

    @abstractmethod
    def session_ids(self) -> Iterator[str]:
        """Ids of the sessions present, in no particular order."""

    @abstractmethod
    def read_meta(self, session_id: str) -> dict[str, Any]:
        """Metadata without opening the event log (for listing)."""

    @abstractmethod
    def write_meta(self, session_id: str, meta: dict[str, Any]) -> None:
        """Replace metadata atomically under the session's lease."""

    @abstractmethod
    def stats(self, session_id: str) -> SessionStats:
        """Event count and last update without reading payloads."""

    @abstractmethod
    def delete(self, session_id: str) -> None: ...

    @abstractmethod
    def verify(self, session_id: str) -> list[Problem]:
        """Check everything stored for a session (fsck); change nothing."""

    # Breadcrumbs: the latest session per working directory (--continue).
    # Kept in memory by default; the file backend keeps them on disk.
    def put_breadcrumb(self, working_dir: str, session_id: str) -> None:
        self.__dict__.setdefault("_breadcrumbs", {})[working_dir] = session_id

    def get_breadcrumb(self, working_dir: str) -> str | None:
        return self.__dict__.get("_breadcrumbs", {}).get(working_dir)

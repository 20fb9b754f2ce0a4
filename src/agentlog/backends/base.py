"""The seam: what a backend must do, and nothing it may decide.

Everything that is policy lives above this module, in the core
(``agentlog.timeline``: ids, parents, ``branch_from``, validation, the
inline-or-blob split, batch framing) and in ``Store`` / ``Session``
(HEAD selection, context, compaction, lifecycle, the lazy gate). A
backend stores what the core hands it and returns it unchanged. The
guarantees each primitive must give are written on it; the shared
conformance suite (``tests/conformance.py``) checks them on every backend.

Primitives of one session (``SessionStorage``):

1. ``commit(Commit) -> Ticket``: atomic, HEAD moved by compare-and-swap.
2. ``ancestors(from_id, ...)``: a whole path (or a bounded part) in one read.
3. ``get`` / ``contains`` / ``entries`` / ``has_children``: events and the tree.
4. ``get_blob``: a payload kept apart, verified against its digest.
5. ``read_meta`` / ``write_meta``: the session's metadata document.
6. ``read_sidecar`` / ``write_sidecar`` / ``sidecar_names``: small named files.
7. ``refresh``: a reader catches up with the writer.
8. ``close``: ends the writer's lease (taken by ``Backend.open``/``create``).

Primitives of a store (``Backend``): ``create``, ``open``, ``exists``,
``session_ids``, ``read_meta``, ``stats``, ``delete``, breadcrumbs,
``verify``, ``repair``, ``close``.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import AgentlogError, CorruptionError, InvalidOption, SessionNotFound
from ..event import NIL_ID, Event, digest_of

__all__ = [
    "DEFAULT_BLOB_THRESHOLD",
    "DURABILITY_MODES",
    "MAX_BLOB_THRESHOLD",
    "Backend",
    "BlobCopy",
    "Commit",
    "IndexEntry",
    "ListingRow",
    "SearchHit",
    "Problem",
    "SessionStats",
    "SessionStorage",
    "StagedEvent",
    "Ticket",
    "check_durability",
    "split_payload",
]

DEFAULT_BLOB_THRESHOLD = 16 * 1024
#: The largest ``blob_threshold`` a store takes: an inline record stays far
#: below what every backend holds in one place (a 32-bit length in the file
#: index, a 1 GB value in SQLite and PostgreSQL).
MAX_BLOB_THRESHOLD = 256 * 1024 * 1024
#: ``full``: an append is on disk before it is acknowledged; ``off``: the OS decides.
DURABILITY_MODES = ("full", "off")


def check_durability(durability: object) -> None:
    """Refuse a durability no backend knows (each backend's constructor
    calls this, so one built directly is checked as one opened by URL)."""
    if durability not in DURABILITY_MODES:
        raise InvalidOption(f"durability must be 'full' or 'off', not {durability!r}")


@dataclass(frozen=True, slots=True)
class StagedEvent:
    """An event framed by the core, ready to be stored verbatim.

    Exactly one of ``payload`` (the record's JSON bytes, kept inline) and
    ``digest`` (the record lives in a blob) is set."""

    id: str
    parent_id: str
    kind: str
    role: str | None
    timestamp: str
    payload: bytes | None
    digest: str | None = None
    branch_from: str | None = None

    def to_event(self) -> Event:
        """The event as a read returns it (a blob payload stays unloaded)."""
        record = None if self.payload is None else orjson.loads(self.payload)
        return Event(
            self.id,
            self.parent_id,
            self.kind,
            self.role,
            self.timestamp,
            record,
            self.digest,
            self.branch_from,
        )


@dataclass(frozen=True, slots=True)
class BlobCopy:
    """A blob to copy from another session's storage (forks, the lazy gate).

    A backend that recognizes ``source`` as its own kind may share the
    bytes instead of copying them (the file backend hard-links)."""

    source: SessionStorage


@dataclass(frozen=True, slots=True)
class Commit:
    """One atomic change to a session: events appended, HEAD moved.

    ``expected_head`` is the HEAD the core built the commit on; a backend
    applies the commit only if HEAD is still that (compare-and-swap), and
    raises ``HeadConflict`` otherwise. ``blobs`` are stored durably before
    any event that names them. A commit with no events moves HEAD only."""

    events: tuple[StagedEvent, ...]
    head: str
    expected_head: str
    blobs: Mapping[str, bytes | BlobCopy] = field(default_factory=dict)


class Ticket:
    """A submitted commit; ``wait()`` returns when it is durable or raises why not.

    Backends that commit synchronously return ``Ticket.done()``; the file
    backend returns one that its group-commit leader completes."""

    __slots__ = ("_error",)

    def __init__(self, error: BaseException | None = None) -> None:
        self._error = error

    @classmethod
    def done(cls) -> Ticket:
        return cls()

    def wait(self) -> None:
        if self._error is not None:
            raise self._error


def split_payload(
    payload: bytes, threshold: int, blobs: dict[str, bytes | BlobCopy]
) -> tuple[bytes | None, str | None]:
    """(inline payload, digest): a payload above ``threshold`` goes to ``blobs``.

    The core calls this with the store's threshold; the file backend's
    legacy upgrade, which runs below the core, with the default one."""
    if len(payload) <= threshold:
        return payload, None
    digest = digest_of(payload)
    blobs[digest] = payload
    return None, digest


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
    """Listing facts a backend gives without reading event payloads."""

    event_count: int
    updated_ns: int


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching event. ``snippet`` is plain text around the match;
    ``highlights`` are (start, end) character spans of matched words in
    it. ``score``: lower is a better match (FTS5's bm25, or minus PostgreSQL's ts_rank)."""

    session_id: str
    event_id: str
    kind: str
    role: str | None
    timestamp: str
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "event_id": self.event_id,
            "kind": self.kind,
            "role": self.role,
            "timestamp": self.timestamp,
            "snippet": self.snippet,
            "highlights": [list(span) for span in self.highlights],
            "score": self.score,
        }


@dataclass(frozen=True, slots=True)
class ListingRow:
    """One session as listing sees it: its metadata and counts, or why it
    could not be read (a damaged session is reported, never skipped)."""

    session_id: str
    meta: dict[str, Any]
    stats: SessionStats | None
    error: AgentlogError | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing fsck found: where, and what."""

    session_id: str
    path: str
    offset: int | None
    message: str
    severity: str = "error"  # "error" fails fsck; "warning" does not
    #: Whether repair (or the next writer) makes it go away; False for what
    #: stays true after any repair (a branch that starts at a quarantined
    #: record), so ``fsck --repair`` does not redo a repair every run.
    repairable: bool = True

    def __str__(self) -> str:
        where = self.path if self.offset is None else f"{self.path}@{self.offset}"
        return f"{self.session_id}: {where}: {self.message}"


class SessionStorage(ABC):
    """One session's storage, open for reading or (lease held) for writing."""

    session_id: str
    readonly: bool
    #: What opening repaired on its own (a torn tail cut, an index rebuilt).
    warnings: list[str]

    @abstractmethod
    def commit(self, commit: Commit) -> Ticket:
        """Submit ``commit``; it is applied after every commit submitted before it.

        Guarantees: all or nothing, across a crash too (invariant 6); HEAD
        moves only if it equals ``commit.expected_head`` (else the ticket
        raises ``HeadConflict`` and nothing is written); when a commit
        fails, every commit queued behind it fails too, so no stored record
        names a parent that was never stored; ``wait()`` returns only when
        the commit is as durable as the durability mode promises
        (invariant 1). Concurrent commits may share one sync."""

    @abstractmethod
    def head(self) -> str:
        """The id HEAD names (``NIL_ID`` for an empty session)."""

    @abstractmethod
    def last_id(self) -> str:
        """The newest event id stored ("" when there is none): ids only grow."""

    @abstractmethod
    def get(self, event_id: str) -> Event:
        """The event (``record`` None when its payload is in a blob), or EventNotFound."""

    def ancestors(
        self,
        from_id: str,
        *,
        limit: int | None = None,
        until_kind: str | None = None,
        until_id: str | None = None,
    ) -> list[Event]:
        """``from_id`` and its ancestors, newest first, in one read.

        Stops after ``limit`` events, or after the first event whose kind
        is ``until_kind`` or whose id is ``until_id`` (that event included),
        or at the root. SQL backends answer with one query; this default
        walks ``get``, which a local store does fast. A loop in the parent
        links is CorruptionError, never an endless read."""
        out: list[Event] = []
        current = from_id
        bound = self.event_count() + 1
        while current != NIL_ID and (limit is None or len(out) < limit):
            event = self.get(current)
            out.append(event)
            if event.kind == until_kind or event.id == until_id:
                break
            if len(out) > bound:
                raise CorruptionError(self.session_id, None, f"parent links loop at {current}")
            current = event.parent_id
        return out

    @abstractmethod
    def contains(self, event_id: str) -> bool: ...

    @abstractmethod
    def has_children(self, event_id: str) -> bool: ...

    @abstractmethod
    def entries(self) -> Iterator[IndexEntry]:
        """Every event's index entry, in append order, without payloads."""

    def events(self) -> Iterator[Event]:
        """Every event, in append order, each as ``get`` gives it (a blob's
        payload unloaded). This default gets them one by one; a backend
        whose log can be read in bulk reads it so (the file backend)."""
        for entry in self.entries():
            yield self.get(entry.id)

    @abstractmethod
    def event_count(self) -> int: ...

    @abstractmethod
    def get_blob(self, digest: str) -> bytes:
        """A blob's bytes, verified against ``digest`` (invariant 9)."""

    @abstractmethod
    def read_meta(self) -> dict[str, Any]: ...

    @abstractmethod
    def write_meta(self, meta: dict[str, Any]) -> None:
        """Replace the metadata document atomically (writers only)."""

    @abstractmethod
    def set_updated_ns(self, updated_ns: int) -> None:
        """Date the session's last change (what ``SessionStats.updated_ns``
        and listing report) to ``updated_ns``: a copy keeps its source's
        date. The next commit dates it again (writers only)."""

    @abstractmethod
    def read_sidecar(self, name: str) -> bytes | None:
        """A small named file kept with the session (a draft), or None."""

    @abstractmethod
    def write_sidecar(self, name: str, data: bytes | None) -> None:
        """Replace ``name`` atomically (None removes it). The core has
        validated ``name`` as one safe path component."""

    @abstractmethod
    def sidecar_names(self) -> list[str]: ...

    def artifacts_dir(self) -> str | None:
        """A directory for the session's own files, where the backend has one."""
        return None

    @abstractmethod
    def refresh(self) -> None:
        """A reader catches up with what the writer committed since."""

    def wait_for_commit(self, timeout: float) -> bool:
        """Block until a writer commits to this session, or ``timeout``
        seconds pass; True if something changed (then ``refresh``).

        This default polls every 50 ms; a backend that can be told
        (PostgreSQL's LISTEN) overrides it and never polls."""
        before = (self.head(), self.event_count())
        deadline = time.monotonic() + timeout
        while True:
            self.refresh()
            if (self.head(), self.event_count()) != before:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(0.05, remaining))

    @abstractmethod
    def close(self) -> None:
        """Wait for queued commits, then release the writer's lease."""


class Backend(ABC):
    """Where sessions live. One instance serves a Store."""

    #: The URL that names this store (``file:///...``, ``sqlite:///...``).
    url: str
    durability: str

    @property
    def home(self) -> str | None:
        """The store's local directory, where it has one."""
        return None

    @classmethod
    def missing_at(cls, url: str) -> str | None:
        """Where the store ``url`` names would be, as shown to people, when
        none is there yet; None when it is there, or when only opening can
        tell. Looks without creating anything: a read-only command on a
        mistyped location reports it rather than making an empty store
        (the file and SQLite stores are told apart by their paths, in the CLI)."""
        return None

    @abstractmethod
    def create(self, session_id: str, meta: dict[str, Any], initial: Commit | None = None) -> SessionStorage:
        """Create a session and return it open for writing, its lease held.

        The session appears with ``meta`` and all of ``initial`` (events
        kept verbatim) or, after a crash, not at all. SessionExists if the
        id is taken, SessionLocked if another writer holds its lease."""

    @abstractmethod
    def open(self, session_id: str, *, readonly: bool) -> SessionStorage:
        """Open a session; for writing, take its lease or raise SessionLocked
        at once (invariant 7). Within one process the core opens one writer
        per session and shares it."""

    @abstractmethod
    def exists(self, session_id: str) -> bool: ...

    @abstractmethod
    def session_ids(self) -> Iterator[str]:
        """Ids of the sessions present, in no particular order."""

    @abstractmethod
    def read_meta(self, session_id: str) -> dict[str, Any]:
        """Metadata without opening the event log (for listing)."""

    @abstractmethod
    def stats(self, session_id: str) -> SessionStats:
        """Event count and last update, without reading payloads."""

    def listing(self) -> Iterator[ListingRow]:
        """Every session's metadata and counts, without reading events.

        This default asks per session; SQL backends answer in one query."""
        for session_id in self.session_ids():
            try:
                yield ListingRow(session_id, self.read_meta(session_id), self.stats(session_id))
            except SessionNotFound:
                continue  # deleted between listing and reading it: not a session any more
            except AgentlogError as exc:
                yield ListingRow(session_id, {}, None, exc)

    @abstractmethod
    def delete(self, session_id: str) -> None:
        """Remove a session and everything of it, atomically, under its lease."""

    @abstractmethod
    def put_breadcrumb(self, working_dir: str, session_id: str) -> None:
        """Remember the latest session of a working directory (``--continue``),
        where every process of this store will find it."""

    @abstractmethod
    def get_breadcrumb(self, working_dir: str) -> str | None: ...

    @abstractmethod
    def verify(self, session_id: str) -> list[Problem]:
        """Check everything stored for a session (fsck); change nothing."""

    @abstractmethod
    def repair(self, session_id: str) -> list[str]:
        """Set damaged data aside (never deleting it) so the session opens;
        returns what was done."""

    def search(
        self,
        query: str,
        *,
        session: str | None = None,
        kind: str | None = None,
        role: str | None = None,
        since: str | None = None,
        cwd: str | None = None,
        limit: int = 20,
    ) -> list[SearchHit] | None:
        """Full-text search with the backend's own index, best first; None
        (the default) when it has none and agentlog's SQLite FTS5 index,
        derived from the events, answers instead (``agentlog.search``)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional: most backends hold nothing to release
        """Release what the backend holds (connections); sessions stay stored."""

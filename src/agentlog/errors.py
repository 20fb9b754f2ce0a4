"""Every error agentlog raises, in one tree.

::

    AgentlogError
     +-- InvalidSessionId          an id that could escape the store's home
     +-- InvalidEventId            an event id that is not a canonical UUID
     +-- InvalidEvent              a kind, role or record the store refuses
     |    `-- StreamedDeltaError   a live streaming delta sent to durable storage
     +-- InvalidName               a sidecar name that is not one safe path component
     +-- InvalidMeta               session metadata that cannot be stored
     +-- InvalidOption             an option out of its range (durability, a size, a limit)
     +-- AmbiguousRef              a ref (short id, name, label) naming more than one thing
     +-- BadRef                    a ref that cannot name anything
     +-- SearchError               a query that cannot run
     +-- UnknownFormat             an export or import format agentlog does not have
     +-- BundleError               a bundle that cannot be imported
     +-- RedactionUnavailable      --redact without detect-secrets installed
     +-- CopyDiverged              a copy's target differs from its source
     +-- ImportSourceError         a source file an import cannot use (nothing written)
     |    +-- SourceNotFound
     |    +-- NoSourceFiles
     |    `-- SourceChanged        the part an earlier import consumed was rewritten
     +-- SessionNotFound
     +-- NothingToContinue         no session to --continue in a directory
     +-- SessionExists
     +-- EventNotFound
     +-- SessionLocked             another process holds the writer's lease
     |    `-- LeaseLost            this writer's lease ended (connection lost, taken over)
     +-- HeadConflict              HEAD was not where a commit expected it
     +-- UnknownBackend            a store URL no installed backend serves
     +-- ReadOnlySession           a write through a session opened read-only
     +-- SessionClosed
     +-- ContextMismatch           sync() given messages whose prefix differs
     +-- SummarizerError           a summarizer failed; nothing was written
     +-- ModelError                a model backend failed (``status``: the HTTP status, or None)
     |    `-- ContextOverflow      the next request would not fit the window even after compacting
     +-- CorruptionError           stored bytes are damaged (file and offset)
     |    `-- BlobIntegrityError   a blob's bytes do not match its digest
     `-- StorageError              the operating system refused an operation
          `-- SessionPoisoned      an earlier I/O failure left state unknown

``SearchWarning`` (a UserWarning) names a session the search index could
not read. ``RecoveryWarning`` (a UserWarning, not an error) reports what opening a
session repaired on its own: a torn final record cut off, an index rebuilt.

A backend translates OS and driver errors into this tree in exactly one
place (for the file backend: ``agentlog._fs``).
"""

from __future__ import annotations

__all__ = [
    "AgentlogError",
    "AmbiguousRef",
    "BadRef",
    "BlobIntegrityError",
    "BundleError",
    "ContextMismatch",
    "CopyDiverged",
    "CorruptionError",
    "EventNotFound",
    "HeadConflict",
    "ImportSourceError",
    "InvalidEvent",
    "InvalidEventId",
    "InvalidMeta",
    "InvalidName",
    "InvalidOption",
    "InvalidSessionId",
    "LeaseLost",
    "ModelError",
    "NoSourceFiles",
    "NothingToContinue",
    "ReadOnlySession",
    "RecoveryWarning",
    "RedactionUnavailable",
    "SearchError",
    "SearchWarning",
    "SessionClosed",
    "SessionExists",
    "SessionLocked",
    "SessionNotFound",
    "SessionPoisoned",
    "SourceChanged",
    "SourceNotFound",
    "StorageError",
    "StreamedDeltaError",
    "SummarizerError",
    "UnknownBackend",
    "UnknownFormat",
]


class AgentlogError(Exception):
    """Base class of every error agentlog raises on purpose."""


class InvalidSessionId(AgentlogError, ValueError):
    def __init__(self, value: object, why: str = "use 1 to 128 of A-Z a-z 0-9 _ -") -> None:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"invalid session id {shown}: {why}")
        self.value = value


class InvalidEventId(AgentlogError, ValueError):
    def __init__(self, value: object) -> None:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"invalid event id {shown}: expected a lowercase UUID")
        self.value = value


class InvalidEvent(AgentlogError, ValueError):
    """The event itself is not acceptable (kind, role, record)."""


class InvalidName(AgentlogError, ValueError):
    """A sidecar name that is not one safe path component (invariant 8)."""


class InvalidMeta(AgentlogError, ValueError):
    """Session metadata that cannot be stored: not JSON, a field the store
    keeps itself (``id``, ``schema``), or a known field of the wrong type."""


class InvalidOption(AgentlogError, ValueError):
    """An option given to the store, a backend or a helper that is out of
    its range: an unknown durability, a negative size, a zero limit. A
    ``ValueError`` too, so code written before it existed still catches it;
    raised before anything is opened or written."""


class StreamedDeltaError(InvalidEvent):
    """Streaming deltas are live-only: they go to the hub, never to disk."""


class SessionNotFound(AgentlogError, LookupError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class NothingToContinue(AgentlogError, LookupError):
    def __init__(self, working_dir: str, moved: list[str] | None = None) -> None:
        hint = ""
        if moved:
            hint = (
                f"; session {moved[0]} was started in a directory of the same name "
                "that no longer exists: continue with reroot to adopt it"
            )
        super().__init__(f"no session to continue in {working_dir}{hint}")
        self.working_dir = working_dir
        self.moved = moved or []


class SessionExists(AgentlogError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} already exists")
        self.session_id = session_id


class EventNotFound(AgentlogError, LookupError):
    def __init__(self, event_id: str, session_id: str | None = None) -> None:
        where = f" in session {session_id!r}" if session_id else ""
        super().__init__(f"no event {event_id}{where}")
        self.event_id = event_id
        self.session_id = session_id


class SessionLocked(AgentlogError):
    def __init__(self, session_id: str, holder: str | None = None) -> None:
        who = f" (held by {holder})" if holder else ""
        super().__init__(f"session {session_id!r} is open for writing elsewhere{who}")
        self.session_id = session_id
        self.holder = holder


class LeaseLost(SessionLocked):
    """This writer no longer holds the session's lease (its database
    connection was lost, or the lease expired and another writer took it):
    it can commit nothing more. Reopen the session to write again."""

    def __init__(self, session_id: str, why: str) -> None:
        AgentlogError.__init__(self, f"session {session_id!r}: the writer's lease was lost ({why}); reopen it")
        self.session_id = session_id
        self.holder = None


class HeadConflict(AgentlogError):
    """A commit's compare-and-swap on HEAD failed: another writer moved HEAD,
    or a commit queued before this one failed (its parent was never stored).
    Nothing of the commit was written."""

    def __init__(self, session_id: str, expected: str, actual: str) -> None:
        super().__init__(f"session {session_id!r}: HEAD is {actual}, not {expected} as the commit expected")
        self.session_id = session_id
        self.expected = expected
        self.actual = actual


class UnknownBackend(AgentlogError, ValueError):
    """A store URL whose scheme no installed backend registers."""


class ReadOnlySession(AgentlogError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} was opened read-only")
        self.session_id = session_id


class SessionClosed(AgentlogError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} is closed")
        self.session_id = session_id


class ContextMismatch(AgentlogError):
    """sync() was given a message list whose saved prefix differs."""


class SummarizerError(AgentlogError):
    """The summarizer failed; the compaction wrote nothing and can be retried."""


class ModelError(AgentlogError):
    """A model backend failed (network, protocol or provider error).

    ``status`` is the provider's HTTP status when it answered with one, else
    None (a network or protocol failure, a model that is not HTTP)."""

    status: int | None = None


class ContextOverflow(ModelError):
    """The next request would not fit the model's context window even after
    compacting: nothing was sent (a harness may catch it apart, to start a
    new session or switch to a larger model)."""


class CorruptionError(AgentlogError):
    """Stored bytes are damaged. Says which file, where, and what is wrong."""

    def __init__(self, path: str, offset: int | None, reason: str) -> None:
        where = f"{path}" if offset is None else f"{path} at byte {offset}"
        super().__init__(f"corruption in {where}: {reason}")
        self.path = path
        self.offset = offset
        self.reason = reason


class BlobIntegrityError(CorruptionError):
    """A blob's bytes do not hash to the digest that names them."""


class StorageError(AgentlogError, OSError):
    """The operating system refused a file operation (ENOSPC, EIO, EROFS...)."""

    def __init__(self, op: str, path: str, errno_: int | None, detail: str) -> None:
        AgentlogError.__init__(self, f"{op} {path}: {detail}")
        self.errno = errno_
        self.op = op
        self.path = path
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.op} {self.path}: {self.detail}"


class SessionPoisoned(StorageError):
    """An I/O failure could not be rolled back; reopen the session."""

    def __init__(self, session_id: str, cause: BaseException) -> None:
        super().__init__(
            "write",
            session_id,
            getattr(cause, "errno", None),
            f"an earlier failure left the session in an unknown state ({cause}); close and reopen it",
        )


class CopyDiverged(AgentlogError):
    """The target has a session of that id whose events differ from the source's."""


class UnknownFormat(AgentlogError):
    """An export or import format agentlog does not have."""


class RedactionUnavailable(AgentlogError):
    """``--redact`` was asked for but detect-secrets is not installed."""


class BundleError(AgentlogError):
    """A bundle that cannot be imported: malformed, truncated, altered, or
    in conflict with the session already in the store."""


class SearchError(AgentlogError):
    """A search that cannot run: an empty or malformed query, or no index."""


class SearchWarning(UserWarning):
    """A session the index could not read (damaged): searched without it."""


class AmbiguousRef(AgentlogError):
    """A ref that names more than one session or event."""


class BadRef(AgentlogError):
    """A ref that cannot name anything (bad syntax, or past a root)."""


class ImportSourceError(AgentlogError):
    """A source file or format an import cannot use (nothing was written for it)."""


class SourceNotFound(ImportSourceError):
    def __init__(self, path: str, reason: str = "no such file or directory") -> None:
        # reason: also "not a regular file or a directory" (a device, a FIFO)
        super().__init__(f"{reason}: {path}")
        self.path = path


class NoSourceFiles(ImportSourceError):
    def __init__(self, path: str, fmt: str, pattern: str) -> None:
        super().__init__(f"no {fmt} session files ({pattern}) under {path}")
        self.path = path


class SourceChanged(ImportSourceError):
    """The part of a file an earlier import consumed is no longer the same.

    Appending is the only change an import follows; a rewritten prefix is
    reported instead of guessed at."""

    def __init__(self, path: str, session_id: str, consumed: int) -> None:
        super().__init__(
            f"{path}: the first {consumed} bytes changed since session {session_id!r} "
            "imported them; not importing it again (delete the session to re-import)"
        )
        self.path = path
        self.session_id = session_id


class RecoveryWarning(UserWarning):
    """Opening a session repaired a crash's leftovers (torn tail, stale index),
    or a cache (a breadcrumb) could not be read or written: nothing stored
    is affected."""

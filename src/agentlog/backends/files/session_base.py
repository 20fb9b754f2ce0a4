"""What every part of a file session stands on: its state, the warning of
what opening repaired, and the checks that it still exists and may write.

``FileSessionStorage`` (storage.py) is made of one class per concern:
applying the log's tail (log_tail.py), opening and recovery (recovery.py),
sidecars (sidecars.py) and group commit (groupcommit.py), each deriving
from this class, or from the part it calls, so that a type checker sees
every attribute and method a part uses.
"""

from __future__ import annotations

import threading
import warnings

from ..._fs import OsFs
from ...errors import ReadOnlySession, RecoveryWarning, SessionClosed, SessionNotFound, SessionPoisoned
from .blobs import BlobStore
from .chunklog import ChunkLog
from .index import Index
from .layout import Layout

__all__ = ["FileSessionBase"]


class FileSessionBase:
    """The state of one file session (``FileSessionStorage`` sets it) and
    the checks every part makes."""

    fs: OsFs
    layout: Layout
    session_id: str
    readonly: bool
    durable: bool
    dir: str
    warnings: list[str]
    blobs: BlobStore
    log: ChunkLog
    index: Index
    _chunk_size: int
    _state: threading.RLock
    _closed: bool
    _poisoned: BaseException | None
    _head: str
    _last_id: str  # the newest event applied: ids must increase (invariant 11)
    _scan_from: tuple[int, int]  # the end of the last record applied: the tail scan resumes there

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        warnings.warn(RecoveryWarning(f"{self.session_id}: {message}"), stacklevel=4)

    def _raise_if_deleted(self) -> None:
        """Deleted by another process while this reader had it open: a
        missing file then means the session is gone, not that it is damaged
        (``delete`` renames the whole directory away first)."""
        if not self.fs.exists(self.dir):
            raise SessionNotFound(self.session_id) from None

    # --- checks ------------------------------------------------------------
    # GroupCommit declares a stub of this check: FileSessionStorage lists
    # GroupCommit after its parts, so that this one is found first.
    def _check_writable(self) -> None:
        if self._closed:
            raise SessionClosed(self.session_id)
        if self.readonly:
            raise ReadOnlySession(self.session_id)
        if self._poisoned is not None:
            raise SessionPoisoned(self.session_id, self._poisoned)

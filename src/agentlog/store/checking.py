"""Checking a store (``fsck``: every problem found, nothing changed) and
repairing one session (damaged bytes quarantined, derived files rebuilt)."""

from __future__ import annotations

import builtins

from ..backends.base import Problem
from ..errors import CorruptionError, SessionNotFound, StorageError
from ..event import check_session_id
from .listing import StoreListing

__all__ = ["StoreChecking"]


class StoreChecking(StoreListing):
    """fsck and repair."""

    def fsck(self, session_id: str | None = None) -> builtins.list[Problem]:
        """Verify one session or all; returns every problem found (changes nothing)."""
        ids = [check_session_id(session_id)] if session_id is not None else sorted(self.backend.session_ids())
        problems: builtins.list[Problem] = []
        if session_id is None:
            # What listing reports but no session holds (a file where a
            # session's directory should be) is a problem too.
            known = set(ids)
            problems += [Problem(b.id, self.home, None, b.reason) for b in self.broken() if b.id not in known]
        for sid in ids:
            if not self.backend.exists(sid):
                raise SessionNotFound(sid)
            try:
                problems += self.backend.verify(sid)
            except CorruptionError as exc:
                problems.append(Problem(sid, exc.path, exc.offset, exc.reason))
            except StorageError as exc:
                # The OS refused a read (a directory where a chunk should be,
                # EIO): report it for this session, and check the others.
                problems.append(Problem(sid, exc.path or sid, None, f"cannot be checked: {exc}"))
        return problems

    def repair(self, session_id: str) -> builtins.list[str]:
        """Quarantine damaged bytes and rebuild derived files (explicit; see fsck)."""
        self._not_open_here(session_id)
        if not self.backend.exists(session_id):
            raise SessionNotFound(session_id)
        return self.backend.repair(session_id)

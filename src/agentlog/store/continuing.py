"""A working directory's latest session (``--continue``): the breadcrumb
each session created or opened for writing leaves, and finding the
session by directory when the breadcrumb is missing, damaged or stale,
or when the project was moved."""

from __future__ import annotations

import builtins
import os
import warnings
from typing import Any

from ..errors import CorruptionError, RecoveryWarning, StorageError
from .listing import SessionInfo, StoreListing

__all__ = ["StoreContinuing"]


class StoreContinuing(StoreListing):
    """Breadcrumbs, and the sessions of a working directory."""

    def _leave_breadcrumb(self, session_id: str, working_dir: Any) -> None:
        """Remember the session as its directory's latest. A breadcrumb is a
        cache of what listing finds: failing to write one is said, never
        fatal (it comes after a commit, which must not then look failed)."""
        if not isinstance(working_dir, str) or not working_dir:
            return  # none, or a hand-edited session.json's odd value: nothing to remember
        try:
            # Under the directory's name as given and as it resolves: a
            # symlinked project is one directory, whichever way it is named.
            for name in dict.fromkeys((working_dir, os.path.realpath(working_dir))):
                self.backend.put_breadcrumb(name, session_id)
        except StorageError as exc:
            warnings.warn(
                RecoveryWarning(f"cannot record {session_id} as the latest session of {working_dir}: {exc}"),
                stacklevel=3,
            )

    def latest_for(self, working_dir: str) -> str | None:
        """The id of the latest session of ``working_dir``, if any."""
        working_dir = os.path.abspath(working_dir)
        real = os.path.realpath(working_dir)  # a symlinked directory is the one it names
        # The resolved name first: every session leaves its crumb there,
        # under whichever name it was given (an older one, under that alone).
        for name in dict.fromkeys((real, working_dir)):
            try:
                crumb = self.backend.get_breadcrumb(name)
            except (CorruptionError, StorageError) as exc:
                # A breadcrumb is a cache of what listing can find; say it is
                # damaged or unreadable, then find the session the slow way.
                warnings.warn(RecoveryWarning(f"{exc}; looking the session up by listing"), stacklevel=2)
                crumb = None
            # Archived sessions are hidden from --continue as from ls.
            if crumb is not None and self.backend.exists(crumb) and not self._archived(crumb):
                return crumb
        for row in self.list():
            if row.working_dir and (row.working_dir == working_dir or os.path.realpath(row.working_dir) == real):
                return row.id
        return None

    def _archived(self, session_id: str) -> bool:
        try:
            return self.backend.read_meta(session_id).get("archived") is True
        except CorruptionError:
            return False  # listing reports it; the breadcrumb still names it

    def find_moved(self, working_dir: str) -> builtins.list[SessionInfo]:
        """Sessions whose working directory no longer exists and whose last
        path component matches ``working_dir``'s: a project that was moved."""
        name = os.path.basename(os.path.abspath(working_dir))
        return [
            row
            for row in self.list(archived=True)
            if row.working_dir and not os.path.isdir(row.working_dir) and os.path.basename(row.working_dir) == name
        ]

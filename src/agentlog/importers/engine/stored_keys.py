"""Source keys that sessions already in the store hold (written by earlier
imports, not by this run): where a line continues a source id that no
session of the run holds (a resume or fork of an older session), the path
to it is copied from there."""

from __future__ import annotations

from collections.abc import Container

from ...session import Session
from ...store import Store
from ..base import Importer
from ..builder import META_KEY
from ..stored import keyed_events

__all__ = ["StoredKeys"]


class StoredKeys:
    """The index of stored source keys of one run's format, built once and
    only when asked, and the read-only sessions opened to copy from
    (``close`` them)."""

    def __init__(self, store: Store, importer: Importer, running: Container[str], failed: Container[str]) -> None:
        self.store = store
        self.importer = importer
        self.running = running  # the run's own sessions, which the run itself finds,
        self.failed = failed  # except those it left out (a lease held elsewhere): read from here
        self.index: dict[str, str] | None = None
        self.readers: dict[str, Session] = {}

    def sessions(self) -> dict[str, str]:
        """Source key -> session, over this format's sessions already in the
        store (built once per run, and only when a line continues a source
        id that no session of this run holds)."""
        if self.index is None:
            index: dict[str, str] = {}
            for info in self.store.list(archived=True):
                sid = info.id
                if (sid in self.running and sid not in self.failed) or not sid.startswith(self.importer.prefix + "-"):
                    continue
                imported = self.store.meta(sid).get(META_KEY)
                if not isinstance(imported, dict) or imported.get("format") != self.importer.name:
                    continue
                with self.store.open(sid, readonly=True) as s:
                    for _, keys in keyed_events(s):
                        for k in keys:
                            index.setdefault(k, sid)
            self.index = index
        return self.index

    def find(self, key: str, session_id: str) -> tuple[Session, str] | None:
        """The stored session other than ``session_id`` that holds ``key``,
        open for reading, and the event there that holds it."""
        sid = self.sessions().get(key)
        if sid is None or sid == session_id:
            return None
        reader = self.readers.get(sid)
        if reader is None:
            reader = self.readers[sid] = self.store.open(sid, readonly=True)
        for event_id, keys in keyed_events(reader):
            if key in keys:
                return reader, event_id
        return None

    def close(self) -> None:
        for r in self.readers.values():
            r.close()

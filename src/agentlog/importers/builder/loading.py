"""Loading what an earlier import wrote: the files' states from the
session's metadata, and the maps rebuilt from its events (every imported
record names its source keys), read from the import cache where it holds
them."""

from __future__ import annotations

import uuid
from typing import Any

from ...errors import CorruptionError, SessionLocked
from ..stored import slim_rows
from .base import META_KEY
from .lines import BuilderLines
from .pending import source_line_of, stamp_ns

__all__ = ["BuilderLoading"]


class BuilderLoading(BuilderLines):
    """An existing session's bookkeeping and maps, read back."""

    def read_state(self) -> None:
        """Read what earlier imports recorded (the files' states) from the
        session's metadata, without opening it: an import that finds
        nothing new writes nothing and takes no lease."""
        self.existing = True
        self.files = self._file_states(self.store.meta(self.session_id))

    def ensure_loaded(self) -> None:
        """Open the existing session for writing and rebuild the maps from
        its events (every imported record names its source keys), reading
        from the index cache what it holds."""
        if not self.existing or self.session is not None:
            return
        if self.released:  # maps loaded before: only the session is opened again
            session = self.store.open(self.session_id)
            if session.storage.last_id() != self.released_at:
                # Another writer (an import running beside this one) appended
                # while the session was closed: the maps no longer say what it
                # holds, and converting against them would be wrong.
                session.close()
                holder = "another writer, which wrote to it while this import had it closed"
                raise SessionLocked(self.session_id, holder)
            self.session = session
            self.released = False
            return
        self.session = self.store.open(self.session_id)
        stored_meta = self.session.meta
        self.files = self._file_states(stored_meta)
        updated = stored_meta.get("updated_at")
        stored = stamp_ns(updated, 0) if isinstance(updated, str) else 0
        self.dated_ns = max(stored, self.store.backend.stats(self.session_id).updated_ns)
        latest = 0
        last_imported = None
        for entry, slim in slim_rows(self.session):
            self._observe(entry.id, entry.parent_id, entry.kind, slim)
            if _imported(slim):
                last_imported = entry.id
            self.rows.append([entry.id, entry.parent_id, entry.kind, slim])
            self.ids.last = max(self.ids.last, uuid.UUID(entry.id).int)
            latest = max(latest, stamp_ns(entry.timestamp, 0))
        self.last_ts = max(self.last_ts, latest)
        # The chain goes on from the event of the last line imported, as a
        # fresh import's would, not from HEAD: a checkout since, or events
        # the user appended, are no part of the source's conversation, and
        # lines without parent links (Codex, pi v1) take the cursor's.
        self.cursor = last_imported or self.session.head

    def _file_states(self, meta: dict[str, Any]) -> dict[str, Any]:
        """The per-file states an earlier import recorded (each is checked
        when used: reader.check_state); the wrong shape is a CorruptionError."""
        imported = meta.get(META_KEY)
        files = imported.get("files") if isinstance(imported, dict) else None
        if not isinstance(imported, (dict, type(None))) or not isinstance(files, (dict, type(None))):
            bad = files if isinstance(imported, dict) else imported
            raise CorruptionError(
                f"session {self.session_id} metadata ({META_KEY})",
                None,
                f"the import state holds a {type(bad).__name__} where an object belongs;"
                " delete the session to import its files again",
            )
        return dict(files or {})

    def _observe(self, event_id: str, parent_id: str, kind: str, record: Any) -> None:
        self.kind_of[event_id] = kind
        self.parent_of[event_id] = parent_id
        self.parents_with_children.add(parent_id)
        source = record.get("source") if isinstance(record, dict) else None
        if isinstance(record, dict) and kind == "tool_call":
            self.remember_tool(record.get("id"), record.get("name"))
        if isinstance(source, dict):
            # ``turn_start`` is True on the event that starts a turn, or names
            # an earlier event that does (one a previous import wrote).
            start = source.get("turn_start")
            if start is True:
                self.turn_starts.append(event_id)
            elif isinstance(start, str):
                self.turn_starts.append(start)
        if isinstance(source, dict):
            at = source_line_of(source)
            if at is not None:
                self.first_of_line.setdefault(at, event_id)
            for key in source.get("keys") or ():
                if isinstance(key, str):
                    self.keys[key] = event_id
                    self.first_keys.setdefault(key, self.first_of_line.get(at, event_id) if at else event_id)
            if "copied_from" not in source and isinstance(source.get("file"), str):
                lines = [source.get("line"), *(m.get("line") for m in source.get("merged") or ())]
                if isinstance(source.get("summary_line"), dict):
                    lines.append(source["summary_line"].get("line"))
                self.seen_lines.update((source["file"], n) for n in lines if isinstance(n, int))
            if source.get("side"):
                self.alias[parent_id] = event_id
                return
        self.has_chain = True


def _imported(slim: Any) -> bool:
    """Whether an event was written by an import (made from a line of a
    file, or copied for a resume), not appended by hand."""
    source = slim.get("source") if isinstance(slim, dict) else None
    return isinstance(source, dict) and (isinstance(source.get("file"), str) or "copied_from" in source)

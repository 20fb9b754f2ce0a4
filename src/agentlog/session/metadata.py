"""A session's metadata: the document, changed atomically, and what is
kept in it (title, archived, status, the session summary)."""

from __future__ import annotations

import time
from typing import Any

from ..event import format_timestamp
from ..lifecycle import check_meta, ensure_summary_text, meta_with_defaults, render_summary
from .reading import SessionReading
from .writing import SessionWriting

__all__ = ["SessionMetadata"]


class SessionMetadata(SessionWriting, SessionReading):
    """The metadata document and the fields kept in it. Reading and writing
    are its bases because the fallback summary reads the session through
    ``SessionView``, which appends too."""

    @property
    def meta(self) -> dict[str, Any]:
        self._check_open()
        return self.storage.read_meta()

    def update_meta(self, **changes: Any) -> dict[str, Any]:
        """Change metadata fields atomically (unknown fields are kept);
        ``InvalidMeta`` before anything is written if one cannot be stored."""
        self._check_writable()
        check_meta(changes)
        with self._lock, self._timeline.meta_lock:
            meta = self.storage.read_meta()
            meta.update(changes)
            meta["updated_at"] = format_timestamp(time.time_ns())
            self.storage.write_meta(meta)
        return meta

    @property
    def meta_with_defaults(self) -> dict[str, Any]:
        return meta_with_defaults(self.meta)

    @property
    def title(self) -> str | None:
        meta = self.meta
        title = meta.get("title") or meta.get("name")
        return title if isinstance(title, str) else None

    def set_title(self, title: str | None) -> None:
        self.update_meta(title=title)

    def archive(self) -> None:
        self.update_meta(archived=True)

    def unarchive(self) -> None:
        self.update_meta(archived=False)

    def set_status(self, status: str) -> None:
        self.update_meta(status=status)

    def set_summary(
        self,
        summary: str | None = None,
        *,
        goal: str | None = None,
        completed: list[str] | str | None = None,
        decisions: list[str] | str | None = None,
        remaining: list[str] | str | None = None,
    ) -> str:
        """Replace the session summary (goal, completed work, decisions,
        remaining work); an agent tool can call this."""
        text, structured = render_summary(goal, completed, decisions, remaining)
        if summary is not None:
            text = summary
        self.update_meta(summary=text, summary_structured=structured if summary is None else None)
        return text

    def ensure_summary(self) -> str:
        """Set the fallback summary when none is set; return the summary."""
        current = self.meta.get("summary")
        if isinstance(current, str) and current:
            return current
        text = ensure_summary_text(self)
        if text:
            self.update_meta(summary=text)
        return text

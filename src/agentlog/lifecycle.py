"""Session lifecycle: the lazy gate, forks, drafts, titles, summaries."""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

import orjson

from ._text import content_text
from .errors import InvalidMeta, SessionLocked
from .event import NIL_ID, format_timestamp
from .metafields import DEFAULT_META, field_problem
from .view import SessionView

__all__ = [
    "DEFAULT_META",
    "LAZY_IDS",
    "LazyIds",
    "check_meta",
    "ensure_summary_text",
    "fork_meta",
    "meta_with_defaults",
    "render_summary",
]

#: Fields the store writes itself: a caller's value would make session.json
#: contradict the session it sits in.
RESERVED_META = frozenset({"id", "schema"})

SUMMARY_MESSAGES = 6
SUMMARY_CHARS = 2000


def meta_with_defaults(meta: dict[str, Any]) -> dict[str, Any]:
    """Fill fields an older session.json lacks; unknown fields are kept."""
    merged = dict(DEFAULT_META)
    merged.update(meta)
    return merged


def check_meta(changes: Mapping[str, Any]) -> None:
    """Refuse metadata that cannot be stored as given, before anything is
    written, the same on every backend: a value JSON cannot hold (a set,
    an integer beyond 64 bits), a reserved field, or a known field that
    breaks its rule (``metafields``: a title that is not text would break
    every listing, a working directory no path can be, a time that is not
    one). A read applies the same rule to what is stored, so what this
    lets through reads back. NaN becomes null, as in records."""
    for key, value in changes.items():
        if key in RESERVED_META:
            raise InvalidMeta(f"metadata field {key!r} is kept by the store and cannot be set")
        why = field_problem(key, value)
        if why is not None:
            raise InvalidMeta(f"metadata field {key!r} {why}")
    try:
        orjson.dumps(dict(changes))
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        for key, value in changes.items():  # name the field (a read names it too)
            try:
                orjson.dumps({key: value})
            except TypeError as why:
                raise InvalidMeta(f"metadata field {key!r} is not JSON: {why}") from None
        raise InvalidMeta(f"metadata is not JSON: {exc}") from None


def text_of(record: Any) -> str:
    """The visible text of a message record (string or list of parts)."""
    return content_text(record.get("content")) if isinstance(record, dict) else ""


def ensure_summary_text(session: SessionView) -> str:
    """The fallback summary: the last six user/assistant messages with
    content, oldest first, at most 2000 characters."""
    picked: list[str] = []
    for event in session.walk():
        if event.kind != "message" or event.role not in ("user", "assistant"):
            continue
        text = text_of(session.resolve(event).record).strip()
        if text:
            picked.append(f"{event.role}: {' '.join(text.split())}")
            if len(picked) == SUMMARY_MESSAGES:
                break
    picked.reverse()
    return "\n".join(picked)[:SUMMARY_CHARS]


def render_summary(
    goal: str | None = None,
    completed: list[str] | str | None = None,
    decisions: list[str] | str | None = None,
    remaining: list[str] | str | None = None,
) -> tuple[str, dict[str, Any]]:
    """A session summary as text plus its structured form."""

    def as_list(value: list[str] | str | None) -> list[str]:
        if value is None:
            return []
        return [value] if isinstance(value, str) else [str(v) for v in value]

    structured = {
        "goal": goal or "",
        "completed": as_list(completed),
        "decisions": as_list(decisions),
        "remaining": as_list(remaining),
    }
    lines = []
    if structured["goal"]:
        lines.append(f"Goal: {structured['goal']}")
    for key, label in (("completed", "Completed"), ("decisions", "Decisions"), ("remaining", "Remaining")):
        if structured[key]:
            lines.append(f"{label}: " + "; ".join(structured[key]))
    return "\n".join(lines), structured


def fork_meta(session: SessionView, at: str, name: str | None) -> dict[str, Any]:
    """A fork's metadata. Without a name of its own, a fork of a named
    session is named "<name> (fork)": the same name on both would make it
    name no session (a name is a ref, docs/cli.md)."""
    meta = session.meta
    source_name = meta.get("name")
    if name is None and isinstance(source_name, str) and source_name:
        name = f"{source_name} (fork)"
    return {
        "name": name,
        "working_dir": meta.get("working_dir"),
        "model": meta.get("model"),
        "forked_from": {
            "session": session.id,
            "event": at if at != NIL_ID else None,
            "at": format_timestamp(time.time_ns()),
        },
    }


class LazyIds:
    """The ids this process's lazy sessions hold while they live in memory.

    A lazy session writes nothing until it persists, so nothing on disk
    reserves its id: without this, a ``create`` of the same id would take
    it and the lazy session could then never be stored. Keyed by store URL
    and id; a session dropped without ``close()`` frees its id with it (a
    weak reference). Another process cannot see these: there, the lazy
    session's ``persist()`` fails and its events stay in memory (see
    docs/sessions.md)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], weakref.ref[Any]] = {}

    def _holder(self, key: tuple[str, str]) -> Any:
        ref = self._held.get(key)
        return None if ref is None else ref()

    def check(self, url: str, session_id: str) -> None:
        """SessionLocked if a live lazy session of this process holds the id."""
        with self._lock:
            if self._holder((url, session_id)) is not None:
                raise SessionLocked(session_id, f"pid {os.getpid()} (this process), a lazy session not stored yet")

    def reserve(self, url: str, session_id: str, owner: object) -> None:
        with self._lock:
            if self._holder((url, session_id)) is not None:
                raise SessionLocked(session_id, f"pid {os.getpid()} (this process), a lazy session not stored yet")
            self._held[(url, session_id)] = weakref.ref(owner)

    def release(self, url: str, session_id: str, owner: object) -> None:
        with self._lock:
            if self._holder((url, session_id)) in (owner, None):
                self._held.pop((url, session_id), None)


#: The process-wide registry.
LAZY_IDS = LazyIds()

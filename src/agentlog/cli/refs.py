"""Refs a person can type: every command resolves sessions and events here.

A session is named by its full id, its short form, a unique prefix of its
id, or its name or title where exactly one session has it. An event is
named by ``HEAD``, a label, its full id, its short form or a unique prefix
of at least 4 hex digits, each optionally followed by ``~N`` (N parents
up) or ``^`` (one parent up), as in git.

The short form of a UUID is taken from its *end*: UUIDv7 ids begin with a
timestamp, so ids made a second apart share their first 10 hex digits,
while the last 8 are random. ``short_ids`` gives each id the last 8 hex
digits, lengthened (towards the front) until no other id in the scope
ends with them or begins with them, so it can be typed back unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import click

from ..errors import AgentlogError, EventNotFound, SessionNotFound
from ..event import NIL_ID, check_session_id
from ..session import Session
from ..store import Store

__all__ = [
    "AmbiguousRef",
    "MIN_EVENT_PREFIX",
    "SHORT_LEN",
    "BadRef",
    "labels_of",
    "resolve_event",
    "resolve_session",
    "short_ids",
]

SHORT_LEN = 8
MIN_EVENT_PREFIX = 4
_SHOWN = 4
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_HEX = re.compile(r"[0-9a-f]+\Z")
_ANCESTRY = re.compile(r"(?P<base>.+?)(?P<steps>(?:~\d*|\^)+)\Z")
_STEP = re.compile(r"~(\d*)|\^")


class AmbiguousRef(AgentlogError):
    """A ref that names more than one session or event."""


class BadRef(AgentlogError):
    """A ref that cannot name anything (bad syntax, or past a root)."""


class _HasParent(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def parent_id(self) -> str: ...


def _hex(value: str) -> str:
    return value.replace("-", "")


def short_ids(ids: Iterable[str], min_len: int = SHORT_LEN) -> dict[str, str]:
    """Each UUID's shortest unique tail (at least ``min_len`` hex digits).

    Ids that are not UUIDs (a session made with ``--id demo``) are their
    own short form. The tail is unique both as a tail and as a prefix of
    any other id, because a ref is matched either way."""
    uuids = sorted({i for i in ids if _UUID.match(i)}, key=lambda i: _hex(i)[::-1])
    out: dict[str, str] = {i: i for i in ids if not _UUID.match(i)}
    reversed_hex = [_hex(i)[::-1] for i in uuids]
    need = [min_len] * len(uuids)
    for n in range(1, len(uuids)):  # neighbours in reversed order share the longest tails
        a, b = reversed_hex[n - 1], reversed_hex[n]
        common = 0
        while common < len(a) and a[common] == b[common]:
            common += 1
        need[n - 1] = max(need[n - 1], common + 1)
        need[n] = max(need[n], common + 1)
    prefixes: dict[int, set[str]] = {}
    for uid, length in zip(uuids, need):
        digits = _hex(uid)
        while length < len(digits):
            starts = prefixes.get(length)
            if starts is None:
                starts = prefixes[length] = {_hex(u)[:length] for u in uuids}
            tail = digits[-length:]
            if tail not in starts or digits.startswith(tail) and _only_start(uuids, tail, uid):
                break
            length += 1
        out[uid] = digits[-length:]
    return out


def _only_start(uuids: list[str], text: str, uid: str) -> bool:
    return all(u == uid or not _hex(u).startswith(text) for u in uuids)


def _matches(ids: Iterable[str], text: str) -> list[str]:
    """Ids ``text`` names as a full id, a tail (short form) or a prefix."""
    digits = _hex(text.lower())
    found = []
    for i in ids:
        h = _hex(i)
        if i == text or h.startswith(digits) or (_HEX.match(digits) and h.endswith(digits)):
            found.append(i)
    return found


def _some(ids: list[str]) -> str:
    shown = ", ".join(ids[:_SHOWN])
    more = len(ids) - _SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


# --- sessions ---------------------------------------------------------------------
def resolve_session(store: Store, text: str) -> str:
    """The id of the one session ``text`` names (see the module docstring)."""
    text = text.strip()
    if not text:
        raise SessionNotFound(text)
    as_id = _valid_session_id(text)
    if as_id and store.exists(text):
        return text
    ids = list(store.backend.session_ids())
    by_id = _matches(ids, text) if as_id else []
    if len(by_id) == 1:
        return by_id[0]
    if len(by_id) > 1:
        raise AmbiguousRef(f"session {text!r} is ambiguous: it could be {_some(sorted(by_id))}")
    named = sorted({info.id for info in store.list(archived=True)
                    if text in (info.meta.get("name"), info.meta.get("title"))})
    if len(named) == 1:
        return named[0]
    if named:
        raise AmbiguousRef(f"several sessions are named {text!r}: {_some(named)}")
    if not as_id:
        check_session_id(text)  # says why it cannot be an id
    raise SessionNotFound(text)


def _valid_session_id(text: str) -> bool:
    try:
        check_session_id(text)
    except AgentlogError:
        return False
    return True


# --- events -----------------------------------------------------------------------
def labels_of(meta: Mapping[str, Any]) -> dict[str, str]:
    """A session's labels (name -> event id) from its metadata."""
    labels = meta.get("labels")
    if not isinstance(labels, dict):
        return {}
    return {str(k): v for k, v in labels.items() if isinstance(v, str)}


def resolve_event(session: Session, text: str, *, allow_root: bool = False) -> str:
    """The id of the event ``text`` names in ``session``; ``NIL_ID`` for
    ``root`` when ``allow_root``."""
    text = text.strip()
    if allow_root and text.lower() == "root":
        return NIL_ID
    base, steps = text, 0
    labels = labels_of(session.meta)
    if text not in labels:
        found = _ANCESTRY.match(text)
        if found:
            base = found["base"]
            for step in _STEP.finditer(found["steps"]):
                steps += int(step[1]) if step[1] else 1
    current = _resolve_base(session, base, labels)
    for _ in range(steps):
        parent = session.event(current).parent_id
        if parent == NIL_ID:
            raise BadRef(f"{text!r} goes past the root of session {session.id}")
        current = parent
    return current


def _resolve_base(session: Session, text: str, labels: dict[str, str]) -> str:
    if text.upper() == "HEAD":
        if session.head == NIL_ID:
            raise BadRef(f"session {session.id} is empty: HEAD names no event")
        return session.head
    if text in labels:
        target = labels[text]
        if target not in session:
            raise EventNotFound(target, session.id)
        return target
    value = text.lower()
    if _UUID.match(value):
        if value not in session:
            raise EventNotFound(value, session.id)
        return value
    digits = _hex(value)
    if not (MIN_EVENT_PREFIX <= len(digits) <= 32 and _HEX.match(digits)):
        raise click.BadParameter(
            f"{text!r} is not HEAD, a label, an event id, or a short id or prefix of "
            f"at least {MIN_EVENT_PREFIX} hex digits", param_hint="'EVENT'")
    found = _matches((e.id for e in session.entries()), value)
    if len(found) == 1:
        return found[0]
    if not found:
        raise EventNotFound(text, session.id)
    raise AmbiguousRef(f"event {text!r} is ambiguous in session {session.id}: "
                       f"it could be {_some(found)}")


def ancestors(entries: Iterable[_HasParent], start: str) -> list[str]:
    """``start`` and its ancestors, nearest first (from index entries)."""
    parent = {e.id: e.parent_id for e in entries}
    out = []
    current = start
    while current in parent and current not in out:
        out.append(current)
        current = parent[current]
    return out

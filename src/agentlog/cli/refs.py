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
from typing import Any

import click

from ..errors import AmbiguousRef, BadRef, EventNotFound, InvalidSessionId, SessionNotFound
from ..event import NIL_ID, is_session_id
from ..metafields import labels_of
from ..session import Session
from ..shortid import SHORT_LEN, is_uuid, short_ids
from ..shortid import hex_digits as _hex
from ..store import Store

__all__ = [
    "AmbiguousRef",
    "MIN_EVENT_PREFIX",
    "SHORT_LEN",
    "BadRef",
    "check_text",
    "labels_of",
    "no_events",
    "resolve_event",
    "resolve_session",
    "short_ids",
]

MIN_EVENT_PREFIX = 4
_SHOWN = 4
_HEX = re.compile(r"[0-9a-f]+\Z")
_ANCESTRY = re.compile(r"(?P<base>.+?)(?P<steps>(?:~\d*|\^)+)\Z")
_STEP = re.compile(r"~(\d*)|\^")


def _matches(ids: Iterable[str], text: str) -> list[str]:
    """Ids ``text`` names: the id itself, a prefix (hyphens ignored), or
    for a UUID a tail (its short form) in either case. Ids that are not
    UUIDs (``--id My-Session``) are matched case-sensitively, as stored."""
    digits = _hex(text)
    low = digits.lower()
    tail = _HEX.match(low) is not None
    # The start of a short form as printed (its last SHORT_LEN digits):
    # "814c" of "814c19a4", which every listing shows.
    short_start = tail and len(low) < SHORT_LEN
    found = []
    for i in ids:
        h = _hex(i)
        if i == text or h.startswith(digits):
            found.append(i)
        elif (
            is_uuid(i)
            and (
                h.startswith(low)
                # a tail as long as a short id is one (lengthened ones included);
                # a shorter one is only the start of one, as printed
                or (tail and not short_start and h.endswith(low))
                or (short_start and h[-SHORT_LEN:].startswith(low))
            )
        ):
            found.append(i)
    return found


def _some(ids: list[str]) -> str:
    shown = ", ".join(ids[:_SHOWN])
    more = len(ids) - _SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def check_text(text: str, what: str, why: str = "") -> str:
    """``text`` if it is valid Unicode, else a one-line error naming
    ``what`` (and saying ``why`` it matters, if given).

    Arguments arrive decoded with surrogateescape, so bytes that are not
    UTF-8 (a Latin-1 directory name) become lone surrogates, which no
    JSON document, and so no session's metadata, can hold."""
    try:
        text.encode()
    except UnicodeEncodeError:
        shown = text.encode(errors="surrogateescape").decode(errors="backslashreplace")
        raise click.ClickException(f"{what} '{shown}' is not valid UTF-8{'; ' + why if why else ''}") from None
    return text


# --- sessions ---------------------------------------------------------------------
def _names(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """A session's name and title as a ref matches them: without the spaces
    around them, which a typed ref loses too (" spaced " was listed as
    "spaced" and could be named neither way)."""
    return tuple(v.strip() for v in (meta.get("name"), meta.get("title")) if isinstance(v, str))


def resolve_session(store: Store, text: str) -> str:
    """The id of the one session ``text`` names (see the module docstring)."""
    text = text.strip()
    if not text:
        raise SessionNotFound(text)
    as_id = is_session_id(text)
    if as_id and store.exists(text):
        return text
    ids = list(store.backend.session_ids())
    by_id = _matches(ids, text) if as_id else []
    if len(by_id) > 1:
        raise AmbiguousRef(f"session {text!r} is ambiguous: it could be {_some(sorted(by_id))}")
    # A ref shorter than a short id ("42", "cafe") may as well be a name:
    # then both are looked for, and a name and an id that disagree are an
    # error, never one of them picked (a session created later would
    # otherwise change, unseen, which session `rm --yes 42` deletes). A
    # longer one is taken as an id without listing every session's metadata.
    if len(by_id) == 1 and len(_hex(text)) >= SHORT_LEN:
        return by_id[0]
    named = sorted({info.id for info in store.list(archived=True) if text in _names(info.meta)})
    if by_id and named and named != by_id:
        raise AmbiguousRef(
            f"session {text!r} is ambiguous: it is the name of {_some(named)}"
            f" and matches the id of {_some(by_id)}; use a longer id"
        )
    if by_id:
        return by_id[0]
    if len(named) == 1:
        return named[0]
    if named:
        raise AmbiguousRef(f"several sessions are named {text!r}: {_some(named)}")
    if not as_id:
        # Most often a name with a typo ("task 5000"): say that no session
        # has it, and why it cannot be an id either.
        raise InvalidSessionId(text, "no session has that name, and an id is 1 to 128 of A-Z a-z 0-9 _ -")
    raise SessionNotFound(text)


# --- events -----------------------------------------------------------------------
def resolve_event(session: Session, text: str, *, allow_root: bool = False) -> str:
    """The id of the event ``text`` names in ``session``; ``NIL_ID`` for
    ``root`` (or the nil id itself, as the API and --json write it) when
    ``allow_root``."""
    text = text.strip()
    if allow_root and (text.lower() == "root" or text == NIL_ID):
        return NIL_ID
    base, steps = text, 0
    labels = labels_of(session.meta)
    if text not in labels:
        found = _ANCESTRY.match(text)
        if found:
            base = found["base"]
            for step in _STEP.finditer(found["steps"]):
                steps += _count(step[1])
    current = _resolve_base(session, base, labels)
    for _ in range(steps):
        parent = session.event(current).parent_id
        if parent == NIL_ID:
            shown = text if len(text) <= 40 else f"{text[:30]}...{text[-6:]}"
            raise BadRef(f"{shown!r} goes past the root of session {session.id}")
        current = parent
    return current


def _count(digits: str) -> int:
    """The N of ``~N`` (``~`` alone is 1). A count of more than 18 digits
    is more steps than any session has events, so it walks past the root,
    as it should, without converting thousands of digits (which Python
    refuses past 4,300)."""
    if not digits:
        return 1
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10**18


def no_events(session: Session) -> str:
    """Why the active path of ``session`` is empty: no events at all, or
    HEAD checked out at the root while the events sit on branches."""
    count = len(session)
    if session.head != NIL_ID or not count:
        return f"session {session.id} has no events"
    noun = "event" if count == 1 else "events"
    return (
        f"HEAD of session {session.id} is at the root: no active path ({count} {noun} on other "
        f"branches; 'agentlog tree {session.id}' shows them, 'agentlog checkout {session.id} EVENT' picks one)"
    )


def _resolve_base(session: Session, text: str, labels: dict[str, str]) -> str:
    if text.upper() == "HEAD":
        if session.head == NIL_ID:
            if len(session):
                raise BadRef(no_events(session))
            raise BadRef(f"session {session.id} is empty: HEAD names no event")
        return session.head
    if text in labels:
        target = labels[text]
        if target not in session:
            raise EventNotFound(target, session.id)
        return target
    value = text.lower()
    if is_uuid(value):
        if value not in session:
            raise EventNotFound(value, session.id)
        return value
    digits = _hex(value)
    if not (MIN_EVENT_PREFIX <= len(digits) <= 32 and _HEX.match(digits)):
        raise click.BadParameter(
            f"{text!r} is not HEAD, a label, an event id, or a short id or prefix of "
            f"at least {MIN_EVENT_PREFIX} hex digits",
            param_hint="'EVENT'",
        )
    found = _matches((e.id for e in session.entries()), value)
    if len(found) == 1:
        return found[0]
    if not found:
        raise EventNotFound(text, session.id)
    raise AmbiguousRef(f"event {text!r} is ambiguous in session {session.id}: it could be {_some(found)}")

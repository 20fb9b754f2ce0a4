"""A session's metadata document: its known fields, their defaults, and
the one rule for what each may hold.

The rule is written once and used on both sides of storage: a write
refuses a value it breaks (``lifecycle.check_meta``, ``InvalidMeta``),
and a read refuses a stored document that breaks it (the file backend's
``session.json``, a SQL row: ``CorruptionError``). The two must agree, or
what one write stores the next read would call damaged. Fields the rule
does not know are kept as they are and never checked, except that their
values must come back exactly as they were written (see ``unkeepable``).

This module sits below the seam (backends import it), so it knows no
store, session or path: callers say whose document it is and where.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import orjson

from .errors import CorruptionError
from .event import is_event_id, is_session_id, is_timestamp

__all__ = [
    "label_name_problem",
    "labels_of",
    "DEFAULT_META",
    "META_SCHEMA",
    "MetaProblem",
    "checked_meta",
    "document_problems",
    "field_problem",
    "meta_problems",
    "unkeepable",
]

#: The ``schema`` this build writes and reads.
META_SCHEMA = 1

#: Fields every metadata document has; older documents get these when read
#: (a missing known field reads as its default, and ``created_at`` /
#: ``updated_at`` as null: unknown).
DEFAULT_META: dict[str, Any] = {
    "schema": META_SCHEMA,
    "name": None,
    "title": None,
    "working_dir": None,
    "model": None,
    "archived": False,
    "status": "active",
    "summary": "",
    "summary_structured": None,
    "forked_from": None,
}

#: orjson reads an integer literal beyond these as a float, without a word,
#: and writes none beyond them: such a value would change at the next write.
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
#: orjson writes a document at most 254 levels deep: a field's value, one
#: level below the document, may nest at most 253.
_MAX_DEPTH = 253
#: orjson reads an integer beyond 64 bits as a float at least this large:
#: without such a float (or deep nesting) its parse is exact, and no second
#: parse is needed.
_HUGE = 2.0**63


class MetaProblem(NamedTuple):
    """One thing wrong with a stored metadata document."""

    #: The field at fault, or None for the whole document.
    field: str | None
    #: What is wrong, as a predicate: "must be text or null, not a number (5)".
    why: str
    #: False where no rewrite is safe (a schema newer than this build's).
    repairable: bool = True
    #: "error": a read refuses the document; "warning": it reads, and fsck
    #: says so (an ``id`` naming another session: a copy made by hand).
    severity: str = "error"

    def text(self, subject: str) -> str:
        """The problem said of ``subject`` ("session.json", "metadata of session s")."""
        if self.field is None:
            return f"{subject} {self.why}"
        return f"{subject}, field {self.field!r}: {self.why}"


def _shown(value: Any) -> str:
    """A value as a message names it: its JSON type, and a short repr."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    kind = (
        "a number"
        if isinstance(value, int | float)
        else "text"
        if isinstance(value, str)
        else "a list"
        if isinstance(value, list)
        else "an object"
        if isinstance(value, dict)
        else type(value).__name__
    )
    text = repr(value)
    return f"{kind} ({text if len(text) <= 40 else text[:37] + '...'})"


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return None
    return f"must be text or null, not {_shown(value)}"


def _path_text(value: Any) -> str | None:
    if isinstance(value, str) and "\x00" in value:
        return "holds a NUL character (U+0000), which no path can"
    return _text(value)


def _time(value: Any) -> str | None:
    if value is None or is_timestamp(value):
        return None
    return f"must be an RFC 3339 time in UTC (2026-01-31T09:30:00Z) or null, not {_shown(value)}"


def _flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, not {_shown(value)}"


def _object(value: Any) -> str | None:
    return None if value is None or isinstance(value, dict) else f"must be an object or null, not {_shown(value)}"


def _forked_from(value: Any) -> str | None:
    """A fork's origin (``lifecycle.fork_meta``): which session, at which event, when."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"must be an object or null, not {_shown(value)}"
    if "session" in value and not is_session_id(value["session"]):
        return f"must name its session by a session id, not {_shown(value['session'])}"
    event = value.get("event")
    if event is not None and not is_event_id(event):
        return f"must name its event by an event id or null (the root), not {_shown(event)}"
    if value.get("at") is not None and not is_timestamp(value["at"]):
        return f"must date the fork ('at') by an RFC 3339 time, not {_shown(value['at'])}"
    return None


_LABEL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,63}\Z")
_HEXISH = re.compile(r"[0-9a-fA-F-]+\Z")


def label_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a label a ref can name (None: it can). A
    label is typed back wherever an event is taken, so it must not read as
    HEAD, the root or an event id, whose short ids it would hide."""
    if not _LABEL_NAME.match(name):
        return "use 1-64 of A-Z a-z 0-9 _ . / -, not starting with . / or -"
    if name.upper() == "HEAD" or name.lower() == "root":
        return "it is reserved"
    if _HEXISH.match(name):
        return "it looks like an event id; it would hide short ids"
    return None


def labels_of(meta: Mapping[str, Any]) -> dict[str, str]:
    """A session's labels (name -> event id) from its metadata."""
    labels = meta.get("labels")
    if not isinstance(labels, dict):
        return {}
    return {str(k): v for k, v in labels.items() if isinstance(v, str)}


def _labels(value: Any) -> str | None:
    """``agentlog label``'s names: label -> the event id it names."""
    if not isinstance(value, dict):
        return f"must be an object (label: event id), not {_shown(value)}"
    for name, target in value.items():
        if not is_event_id(target):
            return f"label {name!r} must name an event id, not {_shown(target)}"
    return None


def _migrations(value: Any) -> str | None:
    """The names of the upgrades a session went through (``files/migrate.py``)."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return None
    return f"must be a list of migration names, not {_shown(value)}"


#: The known fields a caller may set, and the check of each. ``id`` and
#: ``schema`` are the store's own (``meta_problems`` checks them).
_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "name": _text,
    "title": _text,
    "model": _text,
    "status": _text,
    "summary": _text,
    "working_dir": _path_text,
    "created_at": _time,
    "updated_at": _time,
    "archived": _flag,
    "summary_structured": _object,
    "forked_from": _forked_from,
    "labels": _labels,
    "migrations": _migrations,
}


#: Fields whose rule takes any text (``_text``), and those that take null.
_PLAIN_TEXT = frozenset(key for key, check in _CHECKS.items() if check is _text)
_NULLABLE = frozenset(key for key, check in _CHECKS.items() if check(None) is None)


def field_problem(key: str, value: Any) -> str | None:
    """Why ``value`` cannot be the known field ``key``; None if it can, or
    if ``key`` is a field this rule does not know."""
    check = _CHECKS.get(key)
    return None if check is None else check(value)


def meta_problems(meta: Mapping[str, Any], session_id: str) -> list[MetaProblem]:
    """Every problem of the stored document ``meta`` of session
    ``session_id``, in the document's order: a known field of the wrong
    type, an ``id`` that names another session, a ``schema`` this build
    does not read. A missing field is none: it reads as its default."""
    schema = meta.get("schema", META_SCHEMA)
    if type(schema) is int and schema > META_SCHEMA:
        # A newer agentlog's document: its other fields may follow rules
        # this build does not know, so none is judged, and none rewritten.
        newer = f"has schema {schema}; this agentlog reads schema {META_SCHEMA} only (a newer agentlog wrote it)"
        return [MetaProblem(None, newer, repairable=False)]
    problems = []
    for key, value in meta.items():
        # Listing reads every session's document: the sound values most
        # fields hold (null, or text where text is the rule) pass here.
        if (value is None and key in _NULLABLE) or (type(value) is str and key in _PLAIN_TEXT):
            continue
        why: str | None
        if key == "schema":
            why = None if type(value) is int and value == META_SCHEMA else f"must be {META_SCHEMA}, not {_shown(value)}"
        elif key == "id":
            if value == session_id:
                continue
            if is_session_id(value):
                # A session directory copied by hand: its name decides which
                # session it is (nothing reads the id from here), so the
                # document still reads, and fsck says so.
                why = f"says {value!r}, but the session is {session_id!r} (its directory's name decides: a copy?)"
                problems.append(MetaProblem(key, why, severity="warning"))
                continue
            why = f"must be the session's own id {session_id!r}, not {_shown(value)}"
        else:
            why = field_problem(key, value)
        if why is not None:
            problems.append(MetaProblem(key, why))
    return problems


def unkeepable(value: Any) -> str | None:
    """Why ``value`` would not come back as it is after a write and a read
    (orjson's), or None: text that is not valid Unicode (a lone surrogate),
    an integer beyond 64 bits (read as a float), NaN or an infinity (not
    JSON), nesting deeper than a document may go."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode()
                except UnicodeEncodeError:
                    return "holds text that is not valid Unicode (a lone surrogate, or bytes that are not UTF-8)"
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not _INT_MIN <= item <= _INT_MAX:
                digits = str(item)
                shown = digits if len(digits) <= 24 else f"{digits[:20]}... ({len(digits.lstrip('-'))} digits)"
                return (
                    f"holds the integer {shown}, beyond the 64 bits agentlog reads exactly (it would read as a float)"
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "holds a number JSON cannot hold (NaN, or an infinity: a literal beyond a double's range)"
        elif isinstance(item, dict | list):
            if depth > _MAX_DEPTH:
                return f"is nested more than {_MAX_DEPTH} levels deep"
            children = list(item.items()) if isinstance(item, dict) else [(None, v) for v in item]
            for key, child in children:
                if key is not None:
                    stack.append((key, depth + 1))
                stack.append((child, depth + 1))
    return None


def _flat(meta: dict[str, Any]) -> bool:
    """Whether no value of ``meta`` is a float, a list or an object: then it
    can hide neither deep nesting nor an integer read as a float (most
    documents: listing takes this look instead of the two below)."""
    for value in meta.values():
        kind = type(value)
        if kind is float or kind is dict or kind is list:
            return False
    return True


def _huge_float(meta: dict[str, Any]) -> bool:
    """Whether ``meta`` holds a float as large as an integer beyond 64 bits
    (which orjson reads as one without a word): then the lenient parse
    tells an integer literal from a float one (1e30, which is sound)."""
    stack = list(meta.values())
    while stack:
        value = stack.pop()
        if type(value) is float:
            if not -_HUGE < value < _HUGE:
                return True
        elif type(value) is dict:
            stack.extend(value.values())
        elif type(value) is list:
            stack.extend(value)
    return False


def _lenient(data: bytes) -> Any:
    """The document read by the standard library: integers exactly, and
    what orjson refuses (a lone surrogate, a number beyond a double's
    range, bytes that are not UTF-8) as values ``unkeepable`` names, so
    that the one field holding them is found. Raises ValueError or
    RecursionError when even this cannot read it."""
    return json.loads(data.decode("utf-8", "surrogateescape"))


def checked_meta(meta: dict[str, Any] | None, problems: list[MetaProblem], where: str, subject: str) -> dict[str, Any]:
    """What a read returns of a checked document: ``meta`` itself, or a
    CorruptionError at ``where`` naming every error of ``subject`` (a
    warning does not stop the read; fsck says it)."""
    errors = [p for p in problems if p.severity == "error"]
    if errors or meta is None:
        raise CorruptionError(where, None, "; ".join(p.text(subject) for p in errors))
    return meta


def document_problems(data: bytes, session_id: str) -> tuple[dict[str, Any] | None, list[MetaProblem]]:
    """Read a stored metadata document and check it: (the document, every
    problem). The document is None when it is not a JSON object at all;
    otherwise it holds every field as stored, so that a repair can keep
    the sound ones. No problem means it is exactly what a read returns.

    Fast on a sound document (one orjson parse and a look at each field);
    only a document that orjson refuses, or that may hide an integer
    beyond 64 bits or deep nesting, is read a second time, leniently, to
    name the field at fault."""
    failure: str | None = None
    try:
        fast: Any = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        fast, failure = None, f"does not parse: {exc}"
    else:
        if type(fast) is dict and (
            _flat(fast) or (data.count(b"[") + data.count(b"{") <= _MAX_DEPTH and not _huge_float(fast))
        ):
            return fast, meta_problems(fast, session_id)
    try:
        meta = _lenient(data)
    except (ValueError, RecursionError):
        return None, [MetaProblem(None, failure or "does not parse")]
    if not isinstance(meta, dict):
        return None, [MetaProblem(None, failure or f"is not a JSON object but {_shown(meta)}")]
    problems = []
    for key, value in meta.items():
        why = unkeepable(key) or unkeepable(value)
        if why is not None:
            problems.append(MetaProblem(key, why))
    bad = {p.field for p in problems}
    problems += meta_problems({k: v for k, v in meta.items() if k not in bad}, session_id)
    if not problems and failure is not None:
        problems.append(MetaProblem(None, failure))  # what orjson refused, the lenient read took whole
    order = {key: n for n, key in enumerate(meta)}
    problems.sort(key=lambda p: -1 if p.field is None else order[p.field])
    return meta, problems

"""session.json: the metadata document of a file session, read, checked
and repaired.

Every read checks the whole document against the one rule of
``agentlog.metafields`` (the rule a write is held to), so a hand edit
that breaks it (``"name": 5``, a time that is none, ``"id"`` of another
session) is a ``CorruptionError`` naming the file and each field, never
a value shown wrong or dropped without a word. ``fsck`` reports each
field apart; ``fsck --repair`` rewrites the document without the
fields at fault (``repair_meta_file``).
"""

from __future__ import annotations

import errno
import os
from typing import Any

import orjson

from ..._fs import OsFs
from ...errors import CorruptionError, StorageError
from ...metafields import DEFAULT_META, META_SCHEMA, MetaProblem, checked_meta, document_problems
from ..base import Problem

__all__ = ["encode_meta", "meta_file_problems", "parse_meta", "read_meta_file", "repair_meta_file"]

_SUBJECT = "session.json"


def read_meta_file(fs: OsFs, path: str, session_id: str) -> dict[str, Any]:
    try:
        data = fs.read_file(path)
    except StorageError as exc:
        if exc.errno != errno.ENOENT:
            raise  # the OS failed (EIO...): say so, not that the file is damaged
        raise CorruptionError(path, None, f"cannot read session.json: {exc.detail}") from None
    return parse_meta(path, data, session_id)


def parse_meta(path: str, data: bytes, session_id: str) -> dict[str, Any]:
    """The document of session ``session_id`` kept at ``path``, checked:
    CorruptionError naming every field at fault."""
    meta, problems = document_problems(data, session_id)
    return checked_meta(meta, problems, path, _SUBJECT)


def encode_meta(meta: dict[str, Any]) -> bytes:
    return orjson.dumps(meta, option=orjson.OPT_INDENT_2)


def _fix(field: str, session_id: str) -> tuple[bool, Any]:
    """What repair does with a field at fault: (True, value) to write
    ``value`` in its place (what the store itself writes there), or
    (False, None) to leave it out, so that it reads as its default."""
    if field == "id":
        return True, session_id
    if field == "schema":
        return True, META_SCHEMA
    return False, None


def _repair_note(problem: MetaProblem, session_id: str) -> str:
    """What ``fsck --repair`` does about ``problem`` (said with it)."""
    if not problem.repairable:
        return "fsck --repair leaves it as it is"
    if problem.field is None:
        return "fsck --repair keeps a copy beside it and writes a fresh one with defaults"
    replaced, value = _fix(problem.field, session_id)
    if replaced:
        return f"fsck --repair sets it to {orjson.dumps(value).decode()}"
    default = orjson.dumps(DEFAULT_META.get(problem.field)).decode()
    return f"fsck --repair removes the field (it then reads as {default})"


def meta_file_problems(fs: OsFs, path: str, session_id: str) -> list[Problem]:
    """For fsck: each problem of the session.json at ``path``, one a field,
    each saying what repair does about it."""
    try:
        data = fs.read_file(path)
    except StorageError as exc:
        if exc.errno != errno.ENOENT:
            raise
        why = f"cannot read session.json: {exc.detail}; fsck --repair writes a fresh one with defaults"
        return [Problem(session_id, path, None, why)]
    _, problems = document_problems(data, session_id)
    return [
        Problem(
            session_id,
            path,
            None,
            f"{p.text(_SUBJECT)}; {_repair_note(p, session_id)}",
            p.severity,
            p.repairable,
        )
        for p in problems
    ]


def _aside(fs: OsFs, path: str) -> str:
    """A free quarantine name beside ``path``: an earlier repair's is kept."""
    candidate, n = f"{path}.quarantine", 1
    while fs.exists(candidate):
        n += 1
        candidate = f"{path}.{n}.quarantine"
    return candidate


def repair_meta_file(fs: OsFs, path: str, session_id: str) -> list[str]:
    """Rewrite a session.json that fails its check, saying what was done.

    The events in the log are the session's truth; session.json holds
    what may not be derivable from them (a name, a title, when it was
    created), so nothing is invented: a field at fault is left out and
    reads as its default, except ``id`` and ``schema``, which the store
    writes itself and are set again. The document as it was is first
    copied, byte for byte, to ``session.json.quarantine`` (a free name:
    an earlier repair's is kept), then the new one replaces it
    atomically: a crash leaves either document whole. A document of a
    newer schema is left alone (its rules are not this build's), and one
    that is not a JSON object at all is replaced by defaults."""
    try:
        data = fs.read_file(path)
    except StorageError as exc:
        if exc.errno != errno.ENOENT:
            raise
        fresh = _fresh(session_id)
        fs.write_atomic(path, encode_meta(fresh), durable=True)
        return [f"wrote a fresh {path} with defaults (there was none)"]
    meta, problems = document_problems(data, session_id)
    if not problems or not all(p.repairable for p in problems):
        return []
    aside = _aside(fs, path)
    fs.write_atomic(aside, data, durable=True)
    actions = [f"copied {path} to {aside} as it was"]
    name = os.path.basename(path)
    if meta is None or any(p.field is None for p in problems):
        fs.write_atomic(path, encode_meta(_fresh(session_id)), durable=True)
        why = "; ".join(p.text(_SUBJECT) for p in problems)
        return [*actions, f"wrote a fresh {path} with defaults ({why})"]
    kept = dict(meta)
    for problem in problems:
        field = str(problem.field)
        replaced, value = _fix(field, session_id)
        if replaced:
            kept[field] = value
            actions.append(f"set field {field!r} of {name} to {orjson.dumps(value).decode()} ({problem.why})")
        else:
            del kept[field]
            actions.append(f"removed field {field!r} from {name} ({problem.why})")
    fs.write_atomic(path, encode_meta(kept), durable=True)
    return actions


def _fresh(session_id: str) -> dict[str, Any]:
    """What repair writes when nothing of a session.json can be read."""
    return {"schema": META_SCHEMA, "id": session_id, "name": None, "created_at": None}

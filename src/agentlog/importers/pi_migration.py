"""A pi session that pi migrated and wrote again, recognised as the same session.

pi migrates a v1 or v2 session to its current version when it opens it,
and writes the whole file again (``setSessionFile``:
``migrateToCurrentVersion``, then ``_rewriteFile``). Entries, their order
and their lines stay; v1's gain ids and parent links, v2's ``hookMessage``
role becomes ``custom``. Every old session resumed in a newer pi is so
rewritten from its first byte, which an import would otherwise refuse for
good as a changed file (``SourceChanged``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .builder import SessionBuilder
from .builder.pending import stamp_ns
from .model import SourceLine

__all__ = ["alias_migrated", "migrated_rewrite"]


def migrated_rewrite(
    b: SessionBuilder, lines: list[SourceLine], consumed: int, line_time: Callable[[dict[str, Any]], int | None]
) -> bool:
    """Whether ``lines`` are pi's rewrite of the ``consumed`` lines ``b``
    imported: the header names this session at version 2 or later, each of
    the first ``consumed`` lines is an entry the session holds (by its v1
    line number or its id, with the same time), and none it holds is
    missing. Anything else is a change."""
    header = next((ln.obj for ln in lines if ln.obj is not None and ln.obj.get("type") == "session"), None)
    version = header.get("version") if header is not None else None
    if header is None or header.get("id") != b.source_id or not isinstance(version, int) or version < 2:
        return False
    b.ensure_loaded()
    assert b.session is not None  # the session exists: an earlier import consumed the file
    times = {entry.id: stamp_ns(entry.timestamp, 0) for entry in b.session.entries()}
    prefix = f"{b.source_id}:"
    matched = set()
    for line in lines:
        if line.lineno > consumed:
            continue
        obj = line.obj
        if obj is None:
            return False
        key = f"{prefix}line:{line.lineno}"
        if obj.get("type") == "title" and key not in b.keys:
            continue  # oh-my-pi's title slot: keyed by its line in v1, by nothing since
        if obj.get("type") == "session":
            key = f"{prefix}header"
        elif key not in b.keys:
            key = f"{prefix}{obj.get('id')}" if isinstance(obj.get("id"), str) else ""
        when = line_time(obj)
        if key not in b.keys or (when is not None and times.get(b.keys[key]) != when):
            return False  # not held, or held from another line (same number, other time)
        matched.add(key)
    return matched == {key for key in b.keys if key.startswith(prefix)}


def alias_migrated(b: SessionBuilder, lines: list[SourceLine]) -> None:
    """Let the ids pi gave v1 entries when it migrated the file name the
    events imported from those (earlier) lines, keyed by line number, so
    that the entries pi appends after them find their parents. Run before
    each pass converts new lines (``PiImporter.begin``): the lines' ids are
    kept between ``--follow`` polls (``PiImporter.slim``)."""
    for line in lines:
        obj = line.obj
        if obj is None or obj.get("type") in ("session", "title") or not isinstance(obj.get("id"), str):
            continue
        key, by_line = f"{b.source_id}:{obj['id']}", f"{b.source_id}:line:{line.lineno}"
        if key not in b.keys and by_line in b.keys:
            b.put(b.keys, key, b.keys[by_line])
            b.put(b.first_keys, key, b.first_keys.get(by_line, b.keys[by_line]))

"""Upgrade a session written in the seed's first layout, in place.

The first layout is one ``events.jsonl`` whose first line is a ``meta``
record (name, working dir, model, times) and whose other lines are events,
with or without ids and parent links. The upgrade builds the chunked
layout beside it and writes ``session.json`` last: until that rename the
old file is the session and a crash just means the upgrade runs again
(leftovers of the interrupted attempt are discarded first). The legacy
file is then kept as ``events.jsonl.migrated`` (a legacy HEAD file as
``HEAD.legacy``), never deleted.
"""

from __future__ import annotations

import errno
import os
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import orjson

from ..._fs import OsFs
from ...errors import CorruptionError, RecoveryWarning, StorageError
from ...event import (
    KIND_PATTERN,
    NIL_ID,
    ROLE_PATTERN,
    IdGenerator,
    format_timestamp,
    is_event_id,
    parse_timestamp,
)
from ..base import DEFAULT_BLOB_THRESHOLD, BlobCopy, Commit, SessionStorage, StagedEvent, split_payload
from .layout import Layout, chunk_name
from .meta import encode_meta

__all__ = ["LEGACY_FILE", "legacy_meta", "migrate_legacy", "needs_migration"]

LEGACY_FILE = "events.jsonl"
MIGRATION_NAME = "0001_single_events_file_to_chunks"


def needs_migration(fs: OsFs, layout: Layout, session_id: str) -> bool:
    directory = layout.session_dir(session_id)
    if not fs.exists(os.path.join(directory, LEGACY_FILE)):
        return False
    if not fs.exists(os.path.join(directory, "session.json")):
        return True
    return _upgraded_but_not_renamed(fs, directory)


def _upgraded_but_not_renamed(fs: OsFs, directory: str) -> bool:
    """A crash between writing session.json and renaming the legacy file:
    the upgrade is done, only the rename is left for the next open."""
    try:
        meta = orjson.loads(fs.read_file(os.path.join(directory, "session.json")))
    except (StorageError, orjson.JSONDecodeError):
        return False  # no readable session.json: the upgrade did not finish
    return isinstance(meta, dict) and MIGRATION_NAME in (meta.get("migrations") or [])


def _read_legacy(fs: OsFs, path: str) -> list[dict[str, Any]]:
    data = fs.read_file(path)
    lines: list[dict[str, Any]] = []
    offset = 0
    pieces = data.split(b"\n")
    for number, raw in enumerate(pieces):
        if raw.strip():
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                if number == len(pieces) - 1 and lines:
                    # No newline after it: the legacy writer died mid-line. A torn
                    # tail, not corruption (invariant 3); its bytes stay in the
                    # kept legacy file.
                    warnings.warn(
                        RecoveryWarning(
                            f"{path}: torn final legacy line of {len(raw)} bytes at byte "
                            f"{offset} left out of the upgrade"
                        ),
                        stacklevel=2,
                    )
                    break
                # The old format had no checksums and its readers skipped bad
                # lines; ours stops and says where, so nothing is lost silently.
                raise CorruptionError(path, offset, f"legacy line does not parse: {exc}") from None
            if not isinstance(obj, dict):
                raise CorruptionError(path, offset, "legacy line is not a JSON object")
            obj["_offset"] = offset
            lines.append(obj)
        offset += len(raw) + 1
    if not lines or lines[0].get("kind") != "meta":
        raise CorruptionError(path, 0, "legacy session does not start with a meta record")
    return lines


def _first_line(fs: OsFs, path: str) -> bytes:
    fd = fs.open(path, os.O_RDONLY)
    try:
        data = b""
        while b"\n" not in data:
            block = fs.pread(fd, 65536, len(data), path)
            if not block:
                break
            data += block
        return data.split(b"\n", 1)[0]
    finally:
        fs.close(fd)


def legacy_meta(fs: OsFs, layout: Layout, session_id: str) -> dict[str, Any]:
    """session.json fields from the legacy meta record (no upgrade, no write)."""
    path = os.path.join(layout.session_dir(session_id), LEGACY_FILE)
    first = _first_line(fs, path)
    try:
        meta = orjson.loads(first)
    except orjson.JSONDecodeError as exc:
        raise CorruptionError(path, 0, f"legacy meta record does not parse: {exc}") from None
    if not isinstance(meta, dict) or meta.get("kind") != "meta":
        raise CorruptionError(path, 0, "legacy session does not start with a meta record")
    return _convert_meta(session_id, meta)


def _convert_meta(session_id: str, line: dict[str, Any]) -> dict[str, Any]:
    found = line.get("record")
    record: dict[str, Any] = found if isinstance(found, dict) else {}
    return {
        "schema": 1,
        "id": session_id,
        "name": record.get("session_name"),
        "working_dir": record.get("working_dir"),
        "model": record.get("last_used_model"),
        "created_at": record.get("created_at"),
        "updated_at": record.get("updated_at"),
        "legacy_layout": True,
    }


def _time(value: Any, fallback: int) -> tuple[str, int]:
    if isinstance(value, str):
        try:
            ns = parse_timestamp(value)
            return format_timestamp(ns), ns
        except ValueError:
            pass  # an unreadable legacy time: keep order with the fallback
    return format_timestamp(fallback), fallback


def _events(
    lines: list[dict[str, Any]], base_ns: int, blobs: dict[str, bytes | BlobCopy]
) -> tuple[list[StagedEvent], dict[str, str]]:
    """Legacy lines as events: ids kept when they are increasing UUIDs,
    otherwise new time-ordered ids; missing parents chain to the previous.
    A kind or role outside our grammar becomes a ``custom`` event that keeps
    them. Payloads above the default blob threshold go to blobs."""
    ids = IdGenerator()
    mapping: dict[str, str] = {}
    events: list[StagedEvent] = []
    previous = NIL_ID
    last_kept = ""
    ns = base_ns
    for line in lines[1:]:
        old = line.get("id")
        if isinstance(old, str) and is_event_id(old) and old > last_kept:
            new = old
            ids.observe(old)
        else:
            new = ids.next()
        last_kept = new
        if isinstance(old, str):
            mapping[old] = new
        parent = line.get("parent_id")
        if isinstance(parent, str) and parent != NIL_ID:
            parent = mapping.get(parent)
            if parent is None:
                raise CorruptionError(
                    LEGACY_FILE, line["_offset"], f"parent {line.get('parent_id')} is not before this event"
                )
        elif parent is None:
            parent = previous
        branch_from = line.get("branch_from")
        branch_from = mapping.get(branch_from) if isinstance(branch_from, str) else None
        stamp, ns = _time(line.get("timestamp"), ns + 1)
        kind, role, record = line.get("kind"), line.get("role") or None, line.get("record")
        if not (isinstance(kind, str) and KIND_PATTERN.match(kind)) or not (
            role is None or (isinstance(role, str) and ROLE_PATTERN.match(role))
        ):
            kind, role, record = "custom", None, {"legacy_kind": kind, "legacy_role": role, "record": record}
        payload, digest = split_payload(orjson.dumps(record), DEFAULT_BLOB_THRESHOLD, blobs)
        events.append(StagedEvent(new, parent, kind, role, stamp, payload, digest, branch_from))
        previous = new
    return events, mapping


def migrate_legacy(fs: OsFs, layout: Layout, session_id: str, open_writer: Callable[[], SessionStorage]) -> None:
    """Upgrade one legacy session (idempotent; safe to interrupt). The
    caller holds the session's lease; ``open_writer`` opens its storage."""
    directory = layout.session_dir(session_id)
    legacy = os.path.join(directory, LEGACY_FILE)
    if not needs_migration(fs, layout, session_id):
        return
    if _upgraded_but_not_renamed(fs, directory):
        fs.rename(legacy, legacy + ".migrated")
        fs.fsync_dir(directory)
        return
    lines = _read_legacy(fs, legacy)
    meta = _convert_meta(session_id, lines[0])
    created = meta.get("created_at")
    base = parse_timestamp(created) if isinstance(created, str) else fs.stat(legacy).st_mtime_ns
    blobs: dict[str, bytes | BlobCopy] = {}
    events, mapping = _events(lines, base, blobs)
    # The new storage rewrites HEAD; move the legacy one aside first so
    # an interrupted attempt cannot replace it before the retry reads it.
    head_path = os.path.join(directory, "HEAD")
    if fs.exists(head_path) and not fs.exists(head_path + ".legacy"):
        fs.rename(head_path, head_path + ".legacy")
        fs.fsync_dir(directory)
    old_head = _legacy_head(fs, directory)
    for name in ("chunks", "blobs"):
        path = os.path.join(directory, name)
        if fs.exists(path):
            fs.rmtree(path)
        fs.mkdir(path)
    for name in ("index.jsonl", "index.bin", "HEAD", "HEAD.tmp"):
        path = os.path.join(directory, name)
        if fs.exists(path):
            fs.unlink(path)
    fd = fs.open(os.path.join(directory, "chunks", chunk_name(0)), os.O_WRONLY | os.O_CREAT)
    fs.close(fd)
    fs.fsync_dir(os.path.join(directory, "chunks"))
    fs.fsync_dir(directory)
    storage = open_writer()
    try:
        head = events[-1].id if events else NIL_ID
        if old_head and mapping.get(old_head):
            head = mapping[old_head]
        if events or head != NIL_ID:
            storage.commit(Commit(tuple(events), head, NIL_ID, blobs)).wait()
    finally:
        storage.close()
    meta["migrations"] = [MIGRATION_NAME]
    meta.pop("legacy_layout", None)
    fs.write_atomic(os.path.join(directory, "session.json"), encode_meta(meta), durable=True)
    fs.rename(legacy, legacy + ".migrated")
    fs.fsync_dir(directory)


def _legacy_head(fs: OsFs, directory: str) -> str | None:
    path = os.path.join(directory, "HEAD.legacy")
    try:
        text = fs.read_file(path).decode("ascii", "replace").strip()
    except StorageError as exc:
        if exc.errno == errno.ENOENT:
            return None  # no legacy HEAD: the last event is HEAD
        raise
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None

"""What every converted Claude Code line keeps of itself: its time, the
keys its events are found by, and its unmapped fields (``source``)."""

from __future__ import annotations

from typing import Any

from ..base import parse_source_time, split_fields

__all__ = ["dedup_key", "line_source", "line_time_ns", "uuid_keys"]

_LINE_MAPPED = ("type", "uuid", "parentUuid", "timestamp", "message")


def line_time_ns(obj: dict[str, Any]) -> int | None:
    """The line's time (``ClaudeImporter.line_time``)."""
    ts = parse_source_time(obj.get("timestamp"))
    if ts is None and isinstance(obj.get("snapshot"), dict) and not obj.get("isSnapshotUpdate"):
        # A snapshot is taken as its message is sent; an update of one,
        # written later, still carries the first snapshot's time, and
        # sits where it is in the file instead (the last time seen).
        ts = parse_source_time(obj["snapshot"].get("timestamp"))
    return ts


def dedup_key(obj: dict[str, Any]) -> str | None:
    """The key deduplicating the line across files (``ClaudeImporter.line_key``)."""
    uuid = obj.get("uuid")
    if isinstance(uuid, str) and uuid:
        return uuid
    if obj.get("type") == "summary" and isinstance(obj.get("leafUuid"), str):
        return f"summary:{obj['leafUuid']}"
    return None


def uuid_keys(obj: dict[str, Any]) -> tuple[str, ...]:
    """The keys the line's events are found by: its uuid, if it has one."""
    uuid = obj.get("uuid")
    return (uuid,) if isinstance(uuid, str) and uuid else ()


def line_source(obj: dict[str, Any], message: dict[str, Any] | None, unresolved: str | None) -> dict[str, Any]:
    """The ``source`` of the line's first event: what was not mapped."""
    source: dict[str, Any] = {"fields": split_fields(obj, _LINE_MAPPED)}
    if isinstance(obj.get("uuid"), str):
        source["uuid"] = obj["uuid"]
    if message is not None:
        source["message"] = split_fields(message, ("role", "content"))
    if isinstance(obj.get("parentUuid"), str):
        source["parent_uuid"] = obj["parentUuid"]
    if unresolved:
        source["unresolved_parent"] = unresolved
    return source

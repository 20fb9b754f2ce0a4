"""User lines: their ``tool_result`` blocks become ``tool_result`` events
and the rest a user ``message`` (an ``isCompactSummary`` message fills in
its compaction instead)."""

from __future__ import annotations

from typing import Any

from ..base import split_fields
from ..builder import SessionBuilder
from ..model import SourceLine
from .compaction import convert_compact_summary
from .lines import line_source, line_time_ns, uuid_keys
from .parents import after_parallel_calls, source_parent

__all__ = ["convert_user"]


def convert_user(b: SessionBuilder, line: SourceLine, obj: dict[str, Any], message: dict[str, Any]) -> None:
    """A user line: a ``tool_result`` event per result block, then a user ``message`` of the rest."""
    parent, literal, unresolved = source_parent(b, obj)
    ts = line_time_ns(obj)
    content = message.get("content")
    source = line_source(obj, message, unresolved)
    if obj.get("isCompactSummary"):
        convert_compact_summary(b, line, obj, parent, literal, source, ts)
        return
    blocks = content if isinstance(content, list) else None
    results = [x for x in blocks or () if isinstance(x, dict) and x.get("type") == "tool_result"]
    rest: Any = [x for x in blocks if x not in results] if blocks is not None else content
    if results and not literal:
        parent = after_parallel_calls(b, parent)
    keys = uuid_keys(obj)
    events = 0
    for block in results:
        call = block.get("tool_use_id")
        record: dict[str, Any] = {
            "tool_call_id": call,
            "name": b.tool_name(call),
            "content": block.get("content"),
            "is_error": bool(block.get("is_error")),
        }
        extra = split_fields(block, ("type", "tool_use_id", "content", "is_error"))
        if extra:
            record["extra"] = extra
        if events == 0:
            record["source"] = source
        last = events == len(results) - 1 and not rest
        b.emit(
            "tool_result",
            "tool",
            record,
            line,
            ts_ns=ts,
            parent=parent if events == 0 else None,
            literal_parent=literal and events == 0,
            keys=keys if last else (),
        )
        events += 1
    if rest or events == 0:
        record = {"content": rest if rest is not None else ""}
        if events == 0:
            record["source"] = source
        b.emit(
            "message",
            "user",
            record,
            line,
            ts_ns=ts,
            parent=parent if events == 0 else None,
            literal_parent=literal and events == 0,
            keys=keys,
        )

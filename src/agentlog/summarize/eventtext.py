"""Events as text: what a summarizer reads of them."""

from __future__ import annotations

from typing import Any

from .._text import content_text
from ..event import Event

__all__ = ["record_of", "render_events"]

_text = content_text


def record_of(event: Event) -> dict[str, Any]:
    """The event's record if it is an object, else an empty one."""
    return event.record if isinstance(event.record, dict) else {}


def render_events(events: list[Event], max_result_chars: int = 2000) -> str:
    """Events as plain text for a summarizing model; long tool output is cut."""
    lines: list[str] = []
    for e in events:
        rec = record_of(e)
        if e.kind == "message":
            lines.append(f"[{e.role}] {_text(rec.get('content'))}")
        elif e.kind == "tool_call":
            lines.append(f"[tool call {rec.get('name', '')}] {rec.get('arguments', '')}")
        elif e.kind == "tool_result":
            out = _text(rec.get("content"))
            if len(out) > max_result_chars:
                out = out[:max_result_chars] + f"\n... ({len(out) - max_result_chars} more characters)"
            flag = " (error)" if rec.get("is_error") else ""
            lines.append(f"[tool result {rec.get('name', '')}{flag}] {out}")
        elif e.kind in ("compaction", "branch_summary"):
            lines.append(f"[{e.kind}] {rec.get('summary', '')}")
    return "\n".join(lines)

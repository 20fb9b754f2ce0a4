"""Compactions: a ``compact_boundary`` line becomes a ``compaction`` event
under its ``logicalParentUuid``, and the ``isCompactSummary`` user message
after one fills in its summary."""

from __future__ import annotations

from typing import Any

from ..base import text_parts
from ..builder import SessionBuilder
from ..model import SourceLine
from .lines import line_source, line_time_ns, uuid_keys
from .parents import source_parent

__all__ = ["compaction_record", "convert_boundary", "convert_compact_summary"]


def convert_compact_summary(
    b: SessionBuilder,
    line: SourceLine,
    obj: dict[str, Any],
    parent: str,
    literal: bool,
    source: dict[str, Any],
    ts: int | None,
) -> None:
    """The ``isCompactSummary`` message: the summary of the compaction it follows, else a compaction of its own."""
    text = text_parts(obj["message"].get("content"))
    target = b.by_id.get(parent)
    if (
        target is not None
        and target.kind == "compaction"
        and target.record["source"].get("awaiting_summary")
        # a copy of another session's event is that session's: this line stays its own
        and "copied_from" not in target.record["source"]
    ):
        record = b.edit(target)
        record["summary"] = text
        record["source"].pop("awaiting_summary")
        record["source"]["summary_line"] = {"line": line.lineno, **source}
        b.add_keys(target.id, *uuid_keys(obj))
        b.cursor = target.id
        assert b.report is not None
        b.report.merged += 1
        return
    record = compaction_record(b, text, None, None)
    record["source"] = source
    p = b.emit(
        "compaction",
        "system",
        record,
        line,
        ts_ns=ts,
        parent=parent,
        literal_parent=literal,
        keys=uuid_keys(obj),
    )
    b.put(b.state, "last_compaction", p.id)


def compaction_record(b: SessionBuilder, summary: str, tokens_before: Any, trigger: Any) -> dict[str, Any]:
    """The ``compaction`` record of a compaction the source made (its summary, size and trigger)."""
    return {
        "summary": summary,
        "structured": {},
        "first_kept_event_id": None,
        "tokens_before": tokens_before,
        "tokens_after": None,
        "previous_compaction_id": b.state.get("last_compaction"),
        "trigger": trigger,
    }


def convert_boundary(b: SessionBuilder, line: SourceLine, obj: dict[str, Any]) -> None:
    """A ``compact_boundary`` line: a ``compaction`` awaiting its summary."""
    if isinstance(obj.get("logicalParentUuid"), str):
        parent, literal, unresolved = source_parent(b, obj, "logicalParentUuid")
    else:
        parent, literal, unresolved = source_parent(b, obj)
    meta = obj.get("compactMetadata")
    if not isinstance(meta, dict):
        meta = {}
    record = compaction_record(b, str(obj.get("content") or ""), meta.get("preTokens"), meta.get("trigger"))
    record["source"] = line_source(obj, None, unresolved)
    record["source"]["awaiting_summary"] = True  # until its isCompactSummary message
    p = b.emit(
        "compaction",
        "system",
        record,
        line,
        ts_ns=line_time_ns(obj),
        parent=parent,
        literal_parent=literal,
        keys=uuid_keys(obj),
    )
    b.put(b.state, "last_compaction", p.id)

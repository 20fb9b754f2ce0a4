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
    boundary = _stored_boundary(b, parent)
    if boundary is not None:
        # Its boundary was written by an earlier import (or --follow poll)
        # that ended between the two lines, and the log is append-only: this
        # compaction takes the boundary's place, with its size, trigger and
        # predecessor, so that it reads as a one-shot import's would.
        record["tokens_before"] = boundary.get("tokens_before")
        record["trigger"] = boundary.get("trigger")
        record["previous_compaction_id"] = boundary.get("previous_compaction_id")
        source["summary_of"] = parent
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


def _stored_boundary(b: SessionBuilder, event_id: str) -> dict[str, Any] | None:
    """The record of ``event_id`` if it is a stored compaction still awaiting
    its summary (a ``compact_boundary`` written before its summary line came)."""
    if b.kind_of.get(event_id) != "compaction" or event_id in b.by_id or b.session is None:
        return None
    event = b.session.event(event_id)
    record = (event if event.loaded else b.session.resolve(event)).record
    if not isinstance(record, dict):
        return None
    source = record.get("source")
    if not isinstance(source, dict) or source.get("awaiting_summary") is not True or "copied_from" in source:
        return None
    return record


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

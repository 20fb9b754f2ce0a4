"""Assistant lines: one reply, written over several lines sharing
``message.id``, becomes one ``message`` (text and thinking parts, the usage
of its last line) followed by one ``tool_call`` per ``tool_use`` block."""

from __future__ import annotations

from typing import Any

import orjson

from ...event import NIL_ID
from ..base import call_places, interleaved, split_fields
from ..builder import SessionBuilder
from ..model import SourceLine
from .lines import line_source, line_time_ns, uuid_keys
from .parents import source_parent

__all__ = ["convert_assistant", "stored_reply"]

_TOOL_BLOCKS = ("tool_use", "server_tool_use")


def _is_call(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in _TOOL_BLOCKS


def stored_reply(b: SessionBuilder) -> tuple[str, dict[str, Any]] | None:
    """(message id, group) of the assistant reply a stored session ends
    with, its message and the calls after it: an earlier import may have
    read the file while Claude Code was still writing that reply, and
    its other call lines then come in this run."""
    if b.session is None:
        return None
    at = b.cursor
    calls = set()
    while b.kind_of.get(at) == "tool_call":
        calls.add(at)
        at = b.parent_of.get(at, NIL_ID)
    if b.kind_of.get(at) != "message":
        return None
    event = b.session.event(at)
    record = (event if event.loaded else b.session.resolve(event)).record
    source = record.get("source") if isinstance(record, dict) else None
    message = source.get("message") if isinstance(source, dict) else None
    mid = message.get("id") if isinstance(message, dict) else None
    if event.role != "assistant" or not isinstance(mid, str):
        return None
    return mid, {"message": at, "events": {at, *calls}, "last": b.cursor}


def _placed(group: dict[str, Any], source: dict[str, Any], blocks: list[Any], before: int) -> dict[str, Any]:
    """``group`` with the places of this line's calls among the reply's
    parts (``before`` of them already in its message). The calls follow
    the message as events, so where a ``tool_use`` sat between two text
    blocks would be lost: when a part follows a call, the message's
    ``source.calls_at`` keeps, for each of its calls in order, how many
    of its content parts came before it."""
    places = [*group.get("calls", ()), *call_places(blocks, _is_call, before)]
    if interleaved(places, before + sum(1 for x in blocks if not _is_call(x))):
        source["calls_at"] = places
    return {**group, "calls": places}


def convert_assistant(b: SessionBuilder, line: SourceLine, obj: dict[str, Any], message: dict[str, Any]) -> None:
    """An assistant line: its parts join its reply's ``message`` (which the
    reply's first line makes), and each call block becomes a ``tool_call``
    after the reply's calls so far."""
    parent, literal, unresolved = source_parent(b, obj)
    ts = line_time_ns(obj)
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    calls = [x for x in blocks if _is_call(x)]
    parts = [x for x in blocks if not _is_call(x)]
    mid = message.get("id")
    groups: dict[str, Any] = b.state["groups"]
    group = groups.get(mid) if isinstance(mid, str) else None
    source = line_source(obj, message, unresolved)
    keys = uuid_keys(obj)
    usage: dict[str, Any] = {k: message[k] for k in ("model", "usage") if k in message}
    if group is not None and group["message"] in b.by_id and parent in group["events"]:
        group = {**group, "events": set(group["events"])}  # a new one: the old one is restored on rollback
        msg = b.edit(b.by_id[group["message"]])
        group = _placed(group, msg["source"], blocks, len(msg["content"]))
        msg["content"].extend(parts)
        msg.update(usage)
        msg["finish_reason"] = message.get("stop_reason")
        msg["source"].setdefault("merged", []).append({"line": line.lineno, **source})
        assert b.report is not None
        b.report.merged += 1
        tail = group["last"]
        first_parent: str | None = tail
    elif group is not None and calls and not parts and parent in group["events"]:
        # The reply's message is already written (a --follow poll, or a
        # flush, came between its lines): calls alone need no edit of it,
        # so they still follow the reply's last call, and the line is
        # kept as the source of each. Its usage and stop reason, which
        # would go on the message, are left as the earlier line had them.
        group = {**group, "events": set(group["events"])}
        first_parent = group["last"]
    else:
        placed = _placed({}, source, blocks, 0)
        record: dict[str, Any] = {
            "content": parts,
            **usage,
            "finish_reason": message.get("stop_reason"),
            "provider_name": "anthropic",
            "source": source,
        }
        made = b.emit(
            "message",
            "assistant",
            record,
            line,
            ts_ns=ts,
            parent=parent,
            literal_parent=literal,
            keys=() if calls else keys,
        )
        group = {**placed, "message": made.id, "events": {made.id}, "last": made.id}
        first_parent = None
    for i, call in enumerate(calls):
        record = {
            "id": call.get("id"),
            "name": call.get("name"),
            "arguments": orjson.dumps(call.get("input")).decode(),
        }
        extra = split_fields(call, ("type", "id", "name", "input"))
        if extra or call.get("type") != "tool_use":
            record["extra"] = {"type": call.get("type"), **extra}
        p = b.emit(
            "tool_call",
            "assistant",
            record,
            line,
            ts_ns=ts,
            parent=first_parent if i == 0 else None,
            keys=keys if i == len(calls) - 1 else (),
        )
        group["events"].add(p.id)
        group["last"] = p.id
    if isinstance(mid, str):
        b.put(groups, mid, group)
    if not calls:
        b.add_keys(group["last"], *keys)
        b.cursor = group["last"]

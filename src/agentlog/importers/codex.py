"""OpenAI Codex rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}`` with ``type`` one of
``session_meta``, ``turn_context``, ``response_item``, ``event_msg`` and
``compacted`` (codex-rs ``protocol``: RolloutItem). Lines carry no ids: the
events form one chain in file order, and a file is one session
(``codex-<session_meta.payload.id>``). Rollouts from before that envelope
(up to mid-2025) start with ``{"id", "timestamp", "instructions", "git"}``
and hold the response items bare, one a line, between ``{"record_type":
"state"}`` lines: the header names the session, the items map as below,
the rest is ``custom``. Mapping:

- ``response_item`` ``message`` -> ``message`` (its role); ``reasoning`` ->
  an assistant ``message`` whose ``reasoning`` is the item's summary text
  (the item itself in ``source.reasoning``; a following assistant message
  in the same import is merged into it);
  ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` ->
  ``tool_call``; ``*_call_output`` -> ``tool_result``.
- ``compacted`` -> ``compaction`` (summary = its message; the
  ``replacement_history`` kept in ``structured``).
- ``session_meta``, ``turn_context``, ``event_msg`` and anything else ->
  ``custom``, kept whole. An ``event_msg`` ``token_count`` also gives its
  ``last_token_usage`` to the assistant message of the model call it
  counts (the usage docs/records.md defines), unless it repeats the
  previous count.
- ``event_msg`` ``thread_rolled_back`` drops its ``num_turns`` last turns
  from the active path: the next events continue from where the first
  dropped turn started, so the dropped turns stay as a branch."""

from __future__ import annotations

import os
import re
from typing import Any

import orjson

from .base import Importer, count, custom_record, parse_source_time, split_fields, text_parts, usage_record
from .builder import SessionBuilder
from .model import SourceLine
from .reader import FileData

__all__ = ["CodexImporter"]

_ROLLOUT_ID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$")
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
#: Response items as Codex wrote them before the ``{"timestamp", "type",
#: "payload"}`` envelope (rollouts up to mid-2025): each line an item itself.
_BARE_ITEMS = frozenset(("message", "reasoning", "web_search_call", *_CALLS, *_OUTPUTS))


def _legacy_header(obj: dict[str, Any] | None) -> bool:
    """The first line of a rollout from before ``session_meta``: ``{"id",
    "timestamp", "instructions", "git"}``, no ``type``."""
    return obj is not None and "type" not in obj and "payload" not in obj and isinstance(obj.get("id"), str)


def _bare_item(obj: dict[str, Any]) -> bool:
    return "payload" not in obj and obj.get("type") in _BARE_ITEMS


def _reasoning_text(item: dict[str, Any]) -> str:
    """The readable part of a reasoning item: its summary texts, else its
    reasoning texts (empty when Codex kept it encrypted only)."""
    for field in ("summary", "content"):
        parts = item.get(field)
        text = text_parts(parts, None, "\n\n") if isinstance(parts, list) else ""
        if text:
            return text
    return ""


def _spawned_by(meta: dict[str, Any]) -> Any:
    """The thread that spawned a subagent, where a rollout says so only in
    ``source.subagent.thread_spawn.parent_thread_id``."""
    at: Any = meta
    for key in ("source", "subagent", "thread_spawn", "parent_thread_id"):
        at = at.get(key) if isinstance(at, dict) else None
    return at


def _history_text(history: Any) -> str:
    """What a compaction with no message of its own continued with: its
    replacement history's messages as text (recent Codex writes the summary
    there, beside the user messages it kept, and leaves ``message`` empty)."""
    if not isinstance(history, list):
        return ""
    out = []
    for item in history:
        if isinstance(item, dict) and item.get("type") == "message":
            text = text_parts(item.get("content"), None)
            if text.strip():
                out.append(f"{item.get('role') or 'message'}: {text.strip()}")
    return "\n\n".join(out)


class CodexImporter(Importer):
    name = "codex"
    prefix = "codex"
    pattern = "**/rollout-*.jsonl"

    def default_roots(self) -> list[str]:
        base = os.environ.get("CODEX_HOME") or os.path.expanduser("~/.codex")
        return [os.path.join(base, "sessions"), os.path.join(base, "archived_sessions")]

    def assign(self, fd: FileData) -> list[str] | None:
        sid = None
        for line in fd.lines:
            obj = line.obj
            if (
                obj is not None
                and obj.get("type") == "session_meta"
                and isinstance(obj.get("payload"), dict)
                and isinstance(obj["payload"].get("id"), str)
            ):
                sid = obj["payload"]["id"]
                break
        if sid is None:
            header = next((ln.obj for ln in fd.lines if ln.obj is not None), None)
            sid = header["id"] if header is not None and _legacy_header(header) and header["id"] else None
        if sid is None:
            m = _ROLLOUT_ID.search(os.path.basename(fd.path))
            sid = m.group(1) if m else None
        return None if sid is None else [sid] * len(fd.lines)

    def slim(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj if obj.get("type") == "session_meta" or _legacy_header(obj) else {"type": obj.get("type")}

    def line_time(self, obj: dict[str, Any]) -> int | None:
        # Some writers put the time only in the payload.
        payload = obj.get("payload")
        if "timestamp" not in obj and isinstance(payload, dict):
            return parse_source_time(payload.get("timestamp"))
        return parse_source_time(obj.get("timestamp"))

    def restates(self, obj: dict[str, Any]) -> bool:
        # A legacy rollout writes its {"record_type": "state"} marker again,
        # unchanged, after every turn.
        return obj.get("record_type") == "state"

    def prompt_text(self, obj: dict[str, Any]) -> str | None:
        # The user_message event holds what was typed; the user's message
        # items also carry the instructions and context Codex adds.
        payload = obj.get("payload")
        if _bare_item(obj) and obj.get("type") == "message" and obj.get("role") == "user":
            # A rollout from before event_msg: the user's items are all there
            # is; the context Codex added comes in <tagged> blocks.
            text = text_parts(obj.get("content"), ("input_text",)).strip()
            return None if text.startswith("<") else text or None
        if obj.get("type") != "event_msg" or not isinstance(payload, dict):
            return None
        item = payload.get("item")
        if payload.get("type") == "item_completed" and isinstance(item, dict) and item.get("type") == "UserMessage":
            # Codex from 0.15x reports what was typed as a completed item.
            return text_parts(item.get("content"), None) or None
        if payload.get("type") != "user_message":
            return None
        message = payload.get("message")
        return message if isinstance(message, str) else None

    def begin(self, b: SessionBuilder, lines: list[SourceLine]) -> None:
        if not b.state:  # first use of this builder: state from the stored events
            compactions = [i for i, k in b.kind_of.items() if k == "compaction"]
            b.state["last_compaction"] = max(compactions) if compactions else None
            # Turn starts, for rollbacks: rebuilt from the events already stored.
            b.state["turns"] = list(b.turn_starts)
            b.state["reasoning"] = None
            # The assistant message of the model call whose token_count is
            # still to come (a written one cannot take it), and the last
            # cumulative count seen (Codex repeats it after each turn_context).
            b.state["awaiting_usage"] = None
            b.state["last_total"] = None
        # Read on every pass (a live file's model may come after the pass
        # that created the session): a later pass fills what is still unset.
        for line in lines:
            obj = line.obj or {}
            payload = obj.get("payload")
            if _legacy_header(obj):
                # A pre-envelope header: some (0.3x) carry these at the top level.
                for key, field in (("source_cwd", "cwd"), ("source_version", "cli_version")):
                    if isinstance(obj.get(field), str):
                        b.create_meta.setdefault(key, obj[field])
            if not isinstance(payload, dict):
                continue
            if obj.get("type") == "session_meta":
                for key, field in (("source_cwd", "cwd"), ("source_version", "cli_version")):
                    if isinstance(payload.get(field), str):
                        b.create_meta.setdefault(key, payload[field])
                # A fork or a subagent's thread names the thread it came from.
                parent = payload.get("forked_from_id") or payload.get("parent_thread_id") or _spawned_by(payload)
                if isinstance(parent, str) and parent and parent != payload.get("id"):
                    b.create_meta.setdefault("parent_session", self.session_id(parent))
            elif obj.get("type") == "turn_context" and isinstance(payload.get("model"), str) and payload["model"]:
                b.create_meta.setdefault("model", payload.get("model"))

    def safe_to_flush(self, b: SessionBuilder) -> bool:
        # Not after a user item (its user_message event marks it as the turn
        # start) nor while a reasoning item awaits its reply.
        last = b.pending[-1] if b.pending else None
        if b.state.get("awaiting_usage") is not None:
            return False  # its token_count would find it written
        return (
            last is None or last.kind == "tool_result" or (last.kind == "custom" and b.state.get("reasoning") is None)
        )

    def convert(self, b: SessionBuilder, line: SourceLine) -> None:
        obj = line.obj
        assert obj is not None
        kind = obj.get("type")
        payload = obj.get("payload")
        ts = self.line_time(obj)
        if _bare_item(obj):
            self._response_item(b, line, obj, kind, {}, ts)
            return
        if not isinstance(payload, dict):
            b.emit("custom", None, custom_record(obj), line, ts_ns=ts)
            return
        ptype = payload.get("type")
        fields = split_fields(obj, ("timestamp", "type", "payload"))
        if kind == "response_item":
            self._response_item(b, line, payload, ptype, fields, ts)
        elif kind == "compacted":
            record = {
                "summary": payload.get("message") or _history_text(payload.get("replacement_history")),
                "structured": {"replacement_history": payload.get("replacement_history")},
                "first_kept_event_id": None,
                "tokens_before": None,
                "tokens_after": None,
                "previous_compaction_id": b.state["last_compaction"],
                "source": {
                    "fields": fields,
                    "payload": split_fields(payload, ("message", "replacement_history")),
                },
            }
            b.put(b.state, "reasoning", None)
            b.put(b.state, "awaiting_usage", None)
            b.put(b.state, "last_compaction", b.emit("compaction", "system", record, line, ts_ns=ts).id)
        elif kind == "event_msg" and ptype == "thread_rolled_back":
            self._rollback(b, line, obj, payload, ts)
        else:
            if kind == "event_msg" and ptype == "token_count":
                self._token_count(b, line, payload)
            record = custom_record(obj)
            user_turn = kind == "event_msg" and ptype == "user_message"
            if user_turn:
                # The turn starts at the user's message item when it came
                # just before; else at this event.
                prev = b.by_id.get(b.cursor)
                start = prev.id if prev is not None and prev.kind == "message" and prev.role == "user" else None
                record["source"] = {"turn_start": start is None}
                if prev is not None and start is not None:
                    b.edit(prev)["source"]["turn_start"] = True
                elif prev is None and self._stored_user_item(b, b.cursor):
                    # The item was written by an earlier import (a poll of
                    # --follow can fall between the two lines) and cannot be
                    # edited: this event names it as the turn's start.
                    start = b.cursor
                    record["source"] = {"turn_start": start}
            p = b.emit("custom", None, record, line, ts_ns=ts)
            if user_turn:
                b.put(b.state, "turns", [*b.state["turns"], start or p.id])

    @staticmethod
    def _token_count(b: SessionBuilder, line: SourceLine, payload: dict[str, Any]) -> None:
        """Give a model call's token counts to its assistant message. Codex
        writes one ``token_count`` after each call's items, and repeats the
        last one (same cumulative ``total_token_usage``) after a
        ``turn_context``: a repeat counts nothing. The line itself stays a
        ``custom`` event, so nothing is lost where no message takes it (a
        call that made only tool calls, or a reply an earlier import wrote)."""
        info = payload.get("info")
        if not isinstance(info, dict) or info.get("total_token_usage") == b.state.get("last_total"):
            return
        b.put(b.state, "last_total", info.get("total_token_usage"))
        target = b.by_id.get(b.state.get("awaiting_usage") or "")
        last = info.get("last_token_usage")
        if target is None or not isinstance(last, dict):
            return
        inp, out = count(last.get("input_tokens")), count(last.get("output_tokens"))
        if inp is None or out is None:
            return
        record = b.edit(target)
        # OpenAI's input_tokens include the cached ones, as records.md counts them.
        record["usage"] = usage_record(inp, out, count(last.get("total_tokens")))
        record["source"]["usage_line"] = line.lineno
        b.put(b.state, "awaiting_usage", None)

    @staticmethod
    def _stored_user_item(b: SessionBuilder, event_id: str) -> bool:
        """Whether ``event_id`` is a user message that an earlier import stored."""
        if b.session is None or b.kind_of.get(event_id) != "message":
            return False
        return b.session.event(event_id).role == "user"

    def _response_item(
        self,
        b: SessionBuilder,
        line: SourceLine,
        payload: dict[str, Any],
        ptype: Any,
        fields: dict[str, Any],
        ts: int | None,
    ) -> None:
        source: dict[str, Any] = {"fields": fields} if fields else {}
        if ptype == "message":
            role = payload.get("role") if isinstance(payload.get("role"), str) else "user"
            source["payload"] = split_fields(payload, ("type", "role", "content"))
            pending = b.state["reasoning"]
            # Only event_msg lines (custom events) may sit between the two.
            if role == "assistant" and pending in b.by_id:
                msg = b.edit(b.by_id[pending])
                msg["content"] = payload.get("content")
                msg["source"].setdefault("merged", []).append({"line": line.lineno, **source})
                assert b.report is not None
                b.report.merged += 1
                b.put(b.state, "reasoning", None)
                return
            b.put(b.state, "reasoning", None)
            p = b.emit(
                "message",
                role,
                {"content": payload.get("content"), "role": role, "source": source},
                line,
                ts_ns=ts,
            )
            # A reply awaits its call's token_count; anyone else's message ends the wait.
            b.put(b.state, "awaiting_usage", p.id if role == "assistant" else None)
        elif ptype == "reasoning":
            # The record's reasoning is text (docs/records.md): the item's
            # summary (or its reasoning text, where Codex kept it); the item
            # itself, encrypted content and all, stays in the source.
            record = {"content": [], "source": {**source, "reasoning": split_fields(payload, ("type",))}}
            text = _reasoning_text(payload)
            if text:
                record["reasoning"] = text
            p = b.emit("message", "assistant", record, line, ts_ns=ts)
            b.put(b.state, "reasoning", p.id)
            b.put(b.state, "awaiting_usage", p.id)
        elif ptype in _CALLS:
            b.put(b.state, "reasoning", None)
            call_id = payload.get("call_id") or payload.get("id")
            name = payload.get("name") or ("local_shell" if ptype == "local_shell_call" else ptype)
            if ptype == "function_call":
                arguments = payload.get("arguments")
            elif ptype == "custom_tool_call":
                # A free-form tool's input (a patch, a script) is text, not
                # JSON: kept as a JSON string, so arguments stay JSON text.
                arguments = orjson.dumps(payload.get("input")).decode()
            else:
                arguments = orjson.dumps(payload.get("action")).decode()
            source["payload"] = split_fields(payload, ("type", "call_id", "name", "arguments"))
            b.emit(
                "tool_call",
                "assistant",
                {
                    "id": call_id,
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode(),
                    "source": source,
                },
                line,
                ts_ns=ts,
            )
        elif ptype in _OUTPUTS:
            b.put(b.state, "reasoning", None)
            call_id = payload.get("call_id")
            output = payload.get("output")
            is_error = isinstance(output, dict) and output.get("success") is False
            content = output.get("content") if isinstance(output, dict) and "content" in output else output
            source["payload"] = split_fields(payload, ("type", "call_id", "output"))
            if isinstance(output, dict):
                source["output"] = split_fields(output, ("content",))
            b.emit(
                "tool_result",
                "tool",
                {
                    "tool_call_id": call_id,
                    "name": b.tool_name(call_id),
                    "content": content,
                    "is_error": is_error,
                    "source": source,
                },
                line,
                ts_ns=ts,
            )
        else:
            b.put(b.state, "reasoning", None)
            b.emit("custom", None, custom_record(line.obj or {}), line, ts_ns=ts)

    def _rollback(
        self,
        b: SessionBuilder,
        line: SourceLine,
        obj: dict[str, Any],
        payload: dict[str, Any],
        ts: int | None,
    ) -> None:
        turns: list[str] = b.state["turns"]
        n = payload.get("num_turns")
        n = n if isinstance(n, int) and n > 0 else 0
        record = custom_record(obj)
        parent = None
        if n and turns:
            first = turns[max(0, len(turns) - n)]
            b.put(b.state, "turns", turns[: max(0, len(turns) - n)])
            parent = b.parent_of.get(first)
            record["dropped_from"] = first
        b.put(b.state, "reasoning", None)
        b.put(b.state, "awaiting_usage", None)
        b.emit("custom", None, record, line, ts_ns=ts, parent=parent, literal_parent=True)

"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is one JSON object with ``type`` (user, assistant, system,
summary, progress, file-history-snapshot...), usually ``uuid``,
``parentUuid``, ``sessionId`` and ``timestamp``. Mapping:

- user lines: text and images become a ``message`` (role user); each
  ``tool_result`` block becomes a ``tool_result`` event. ``toolUseResult``,
  ``todos`` and every other field are kept in ``source.fields``.
- assistant lines: one reply is written over several lines sharing
  ``message.id``; they are merged into one ``message`` (role assistant,
  text and thinking parts, usage of the last line) followed by one
  ``tool_call`` per ``tool_use`` block; where a block came before some of
  the text, the message's ``source.calls_at`` says where.
- ``system`` lines with subtype ``compact_boundary`` become ``compaction``
  events under their ``logicalParentUuid``; the ``isCompactSummary`` user
  message after one fills in its summary.
- ``summary`` lines become a ``label`` on their ``leafUuid`` when that
  event is in the session, else a ``custom`` event.
- ``custom-title`` lines (``/rename``) are kept as ``custom`` events and
  set the session's title, which is shown before the summary's name.
- ``ai-title`` lines (Claude Code 2.1's generated title) are kept as
  ``custom`` events and name the session, as a summary does.
- everything else (hook progress, file-history snapshots, other system
  lines, unknown types) is kept whole as a ``custom`` event.

``isSidechain`` lines with an ``agentId`` (subagent files) become their own
session, ``claude-<sessionId>-agent-<agentId>``."""

from __future__ import annotations

import os
import re
from typing import Any

import orjson

from ..event import NIL_ID
from .base import Importer, call_places, custom_record, interleaved, parse_source_time, split_fields, text_parts
from .builder import SessionBuilder
from .model import SourceLine
from .reader import FileData

__all__ = ["ClaudeImporter"]

_SESSION_FILE = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl")
#: How far behind the chain's end a parallel call's result may find its
#: call (a reply's calls and results, and the side lines between them).
_PARALLEL_REACH = 256
#: A bound on the side lines walked past as well (a hook's or a long
#: command's progress lines), so that no walk is unbounded.
_SIDE_REACH = 1 << 16

_LINE_MAPPED = ("type", "uuid", "parentUuid", "timestamp", "message")
_TOOL_BLOCKS = ("tool_use", "server_tool_use")


#: How Claude Code's own user lines begin: slash commands, ``!`` commands
#: and their output in tags, notes about them, an interruption.
_NOT_TYPED = ("<", "Caveat:", "[Request interrupted")


def _is_call(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in _TOOL_BLOCKS


class ClaudeImporter(Importer):
    name = "claude"
    prefix = "claude"

    def default_roots(self) -> list[str]:
        base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
        return [os.path.join(base, "projects")]

    # --- grouping -------------------------------------------------------------------
    @staticmethod
    def _source_id(obj: dict[str, Any] | None) -> str | None:
        if obj is None:
            return None
        sid = obj.get("sessionId")
        if not isinstance(sid, str) or not sid:
            return None
        if obj.get("isSidechain"):
            agent = obj.get("agentId")
            return f"{sid}/agent-{agent}" if isinstance(agent, str) and agent else f"{sid}/sidechain"
        return sid

    def assign(self, fd: FileData) -> list[str] | None:
        first = next((s for s in (self._source_id(ln.obj) for ln in fd.lines) if s), None)
        if first is None:
            # No line names its session: Claude Code 1.0 left files holding
            # only ``summary`` lines (of conversations in other files). The
            # file's name is its session id, as for every transcript.
            named = _SESSION_FILE.fullmatch(os.path.basename(fd.path))
            if named is None:
                return None
            first = named.group(1)
        out = []
        current = first
        for line in fd.lines:
            current = self._source_id(line.obj) or current
            out.append(current)
        return out

    def slim(self, obj: dict[str, Any]) -> dict[str, Any]:
        keep = ("type", "sessionId", "isSidechain", "agentId")
        return {k: obj[k] for k in keep if k in obj}

    def readable_id(self, source_id: str) -> str:
        return source_id.replace("/", "-")  # <sessionId>/agent-<agentId>: a sidechain

    def prompt_text(self, obj: dict[str, Any]) -> str | None:
        message = obj.get("message")
        if obj.get("type") != "user" or not isinstance(message, dict) or obj.get("isMeta"):
            return None
        if obj.get("isCompactSummary"):
            return None
        text = text_parts(message.get("content")).strip()
        return None if text.startswith(_NOT_TYPED) else text or None

    def line_key(self, source_id: str, obj: dict[str, Any]) -> str | None:
        uuid = obj.get("uuid")
        if isinstance(uuid, str) and uuid:
            return uuid
        if obj.get("type") == "summary" and isinstance(obj.get("leafUuid"), str):
            return f"summary:{obj['leafUuid']}"
        return None

    def line_time(self, obj: dict[str, Any]) -> int | None:
        ts = parse_source_time(obj.get("timestamp"))
        if ts is None and isinstance(obj.get("snapshot"), dict) and not obj.get("isSnapshotUpdate"):
            # A snapshot is taken as its message is sent; an update of one,
            # written later, still carries the first snapshot's time, and
            # sits where it is in the file instead (the last time seen).
            ts = parse_source_time(obj["snapshot"].get("timestamp"))
        return ts

    def begin(self, b: SessionBuilder, lines: list[SourceLine]) -> None:
        if not b.state:  # first use of this builder: state from the stored events
            b.state["groups"] = {}
            stored = self._stored_reply(b)
            if stored is not None:
                b.state["groups"][stored[0]] = stored[1]
            compactions = [i for i, k in b.kind_of.items() if k == "compaction"]
            b.state["last_compaction"] = max(compactions) if compactions else None
        # Read on every pass, not only the one that creates the session: a
        # live file's first lines (a permission mode, a snapshot) may carry
        # none of these, and a later pass fills what is still unset.
        objs = [ln.obj for ln in lines if ln.obj is not None]
        cwd = next((o["cwd"] for o in objs if isinstance(o.get("cwd"), str)), None)
        model = next(
            (
                o["message"]["model"]
                for o in objs
                if o.get("type") == "assistant"
                and isinstance(o.get("message"), dict)
                and isinstance(o["message"].get("model"), str)  # a session's model is text
                # Claude Code's stand-in for a reply that failed (an API error): no model
                and o["message"]["model"] != "<synthetic>"
            ),
            None,
        )
        version = next((o["version"] for o in objs if isinstance(o.get("version"), str)), None)
        for key, value in (("model", model), ("source_cwd", cwd), ("source_version", version)):
            if value is not None:
                b.create_meta.setdefault(key, value)
        if "/" in b.source_id:
            b.create_meta["parent_session"] = self.session_id(b.source_id.split("/", 1)[0])

    @staticmethod
    def _stored_reply(b: SessionBuilder) -> tuple[str, dict[str, Any]] | None:
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

    # --- converting -----------------------------------------------------------------
    def convert(self, b: SessionBuilder, line: SourceLine) -> None:
        obj = line.obj
        assert obj is not None
        kind = obj.get("type")
        message = obj.get("message")
        if kind in ("assistant", "user") and "message" in obj and not isinstance(message, dict):
            # A conversation line whose message is not an object: reported
            # with its file and line (and kept whole), not a silent side line.
            raise TypeError(f"the message of a {kind!r} line is {type(message).__name__}, not an object")
        if kind == "assistant" and isinstance(message, dict):
            self._assistant(b, line, obj, message)
        elif kind == "user" and isinstance(message, dict):
            self._user(b, line, obj, message)
        elif kind == "system" and obj.get("subtype") == "compact_boundary":
            self._boundary(b, line, obj)
        elif kind == "summary":
            self._summary(b, line, obj)
        else:
            # Kept where its source parent is, else where the chain is now. A
            # side line under one of a reply's parallel calls (a hook's
            # progress) goes where that call's result will: after the calls,
            # not on a branch off the call that the results would follow.
            wanted = obj.get("parentUuid")
            parent = b.lookup(wanted) if isinstance(wanted, str) else None
            if parent is not None:
                parent = self._after_parallel_calls(b, parent)
            b.emit(
                "custom",
                "system" if kind == "system" else None,
                custom_record(obj),
                line,
                ts_ns=self.line_time(obj),
                parent=parent,
                keys=self._keys(obj),
                side=True,
            )
            title = obj.get("customTitle")
            if kind == "custom-title" and isinstance(title, str) and title.strip():
                # /rename: the user's own title, which Claude Code lists
                # before any summary (the last rename wins).
                b.put(b.meta_changes, "title", title)
            ai_title = obj.get("aiTitle")
            if kind == "ai-title" and isinstance(ai_title, str) and ai_title.strip():
                # Claude Code 2.1's generated title, which took the place of
                # the summary line: a name as the summary's is (the newest wins).
                b.put(b.meta_changes, "name", ai_title)

    def restates(self, obj: dict[str, Any]) -> bool:
        # Every conversation line has a uuid; a line without one is state
        # (a permission mode, a title, a latch) that Claude Code writes again
        # as a matter of course, with new types in each release. A file
        # snapshot is the exception: it is taken once per message (its
        # messageId), so an exact repeat may be a doubled write.
        return not isinstance(obj.get("uuid"), str) and obj.get("type") != "file-history-snapshot"

    @staticmethod
    def _keys(obj: dict[str, Any]) -> tuple[str, ...]:
        uuid = obj.get("uuid")
        return (uuid,) if isinstance(uuid, str) and uuid else ()

    @staticmethod
    def _parent(b: SessionBuilder, obj: dict[str, Any], field: str = "parentUuid") -> tuple[str, bool, str | None]:
        """(parent event, literal?, unresolved source parent)."""
        wanted = obj.get(field)
        if isinstance(wanted, str) and wanted:
            found = b.lookup(wanted)
            if found is not None:
                return found, False, None
        unresolved = wanted if isinstance(wanted, str) and wanted else None
        if not b.has_chain:
            return NIL_ID, False, unresolved  # after any side events kept before it
        return NIL_ID, True, unresolved  # a new root: the source starts over here

    @staticmethod
    def _source(obj: dict[str, Any], message: dict[str, Any] | None, unresolved: str | None) -> dict[str, Any]:
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

    def _user(self, b: SessionBuilder, line: SourceLine, obj: dict[str, Any], message: dict[str, Any]) -> None:
        parent, literal, unresolved = self._parent(b, obj)
        ts = self.line_time(obj)
        content = message.get("content")
        source = self._source(obj, message, unresolved)
        if obj.get("isCompactSummary"):
            self._compact_summary(b, line, obj, parent, literal, source, ts)
            return
        blocks = content if isinstance(content, list) else None
        results = [x for x in blocks or () if isinstance(x, dict) and x.get("type") == "tool_result"]
        rest: Any = [x for x in blocks if x not in results] if blocks is not None else content
        if results and not literal:
            parent = self._after_parallel_calls(b, parent)
        keys = self._keys(obj)
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

    @staticmethod
    def _after_parallel_calls(b: SessionBuilder, parent: str) -> str:
        """Where a tool result goes. Claude Code writes each parallel call
        of a reply as a line, then each result as a child of its own call's
        line: the second call and the first result are both children of the
        first call. In agentlog a reply's calls are one chain, so the results
        follow it, in the file's order: a result whose call lies behind the
        chain's end, with only that reply's calls and results (and kept side
        lines, such as hook progress) in between, goes at the end instead of
        starting a branch. A result under an earlier message (a rewind)
        still branches."""
        if b.kind_of.get(parent) != "tool_call":
            return parent
        # The call, and the side lines threaded after it (a hook's progress
        # under the call's line), which the result would otherwise follow.
        spots = {parent}
        at = parent
        while at in b.alias and len(spots) <= _SIDE_REACH:
            at = b.alias[at]
            spots.add(at)
        if b.cursor in spots:
            return parent
        current, steps = b.cursor, 0
        for _ in range(_SIDE_REACH):
            kind = b.kind_of.get(current)
            if kind not in ("tool_call", "tool_result", "custom"):
                return parent
            if kind != "custom":  # side lines do not count: long commands write many
                steps += 1
                if steps > _PARALLEL_REACH:
                    return parent
            current = b.parent_of.get(current, NIL_ID)
            if current in spots:
                return b.cursor
        return parent

    def _compact_summary(
        self,
        b: SessionBuilder,
        line: SourceLine,
        obj: dict[str, Any],
        parent: str,
        literal: bool,
        source: dict[str, Any],
        ts: int | None,
    ) -> None:
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
            b.add_keys(target.id, *self._keys(obj))
            b.cursor = target.id
            assert b.report is not None
            b.report.merged += 1
            return
        record = self._compaction(b, text, None, None)
        record["source"] = source
        p = b.emit(
            "compaction",
            "system",
            record,
            line,
            ts_ns=ts,
            parent=parent,
            literal_parent=literal,
            keys=self._keys(obj),
        )
        b.put(b.state, "last_compaction", p.id)

    @staticmethod
    def _compaction(b: SessionBuilder, summary: str, tokens_before: Any, trigger: Any) -> dict[str, Any]:
        return {
            "summary": summary,
            "structured": {},
            "first_kept_event_id": None,
            "tokens_before": tokens_before,
            "tokens_after": None,
            "previous_compaction_id": b.state.get("last_compaction"),
            "trigger": trigger,
        }

    def _boundary(self, b: SessionBuilder, line: SourceLine, obj: dict[str, Any]) -> None:
        if isinstance(obj.get("logicalParentUuid"), str):
            parent, literal, unresolved = self._parent(b, obj, "logicalParentUuid")
        else:
            parent, literal, unresolved = self._parent(b, obj)
        meta = obj.get("compactMetadata")
        if not isinstance(meta, dict):
            meta = {}
        record = self._compaction(b, str(obj.get("content") or ""), meta.get("preTokens"), meta.get("trigger"))
        record["source"] = self._source(obj, None, unresolved)
        record["source"]["awaiting_summary"] = True  # until its isCompactSummary message
        p = b.emit(
            "compaction",
            "system",
            record,
            line,
            ts_ns=self.line_time(obj),
            parent=parent,
            literal_parent=literal,
            keys=self._keys(obj),
        )
        b.put(b.state, "last_compaction", p.id)

    def _summary(self, b: SessionBuilder, line: SourceLine, obj: dict[str, Any]) -> None:
        leaf = obj.get("leafUuid")
        target = b.keys.get(leaf) if isinstance(leaf, str) else None
        key = self.line_key(b.source_id, obj)
        keys = (key,) if key else ()
        if target is None:
            b.emit("custom", None, custom_record(obj), line, keys=keys, side=True)
            return
        record = {
            "name": obj.get("summary"),
            "target": target,
            "source": {"fields": split_fields(obj, ("summary",))},
        }
        b.emit("label", None, record, line, keys=keys, side=True)
        if isinstance(obj.get("summary"), str):
            b.put(b.meta_changes, "name", obj["summary"])  # Claude Code shows it as the title

    @staticmethod
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

    def _assistant(self, b: SessionBuilder, line: SourceLine, obj: dict[str, Any], message: dict[str, Any]) -> None:
        parent, literal, unresolved = self._parent(b, obj)
        ts = self.line_time(obj)
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        calls = [x for x in blocks if _is_call(x)]
        parts = [x for x in blocks if not _is_call(x)]
        mid = message.get("id")
        groups: dict[str, Any] = b.state["groups"]
        group = groups.get(mid) if isinstance(mid, str) else None
        source = self._source(obj, message, unresolved)
        keys = self._keys(obj)
        usage: dict[str, Any] = {k: message[k] for k in ("model", "usage") if k in message}
        if group is not None and group["message"] in b.by_id and parent in group["events"]:
            group = {**group, "events": set(group["events"])}  # a new one: the old one is restored on rollback
            msg = b.edit(b.by_id[group["message"]])
            group = self._placed(group, msg["source"], blocks, len(msg["content"]))
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
            placed = self._placed({}, source, blocks, 0)
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

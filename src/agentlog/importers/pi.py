"""pi sessions (``~/.pi/agent/sessions/<cwd>/<time>_<id>.jsonl``), formats
v1 to v3, and the oh-my-pi variants.

The first line is the header ``{"type": "session", "id", "cwd", ...}``
(oh-my-pi may put a fixed-width ``{"type": "title"}`` slot before it, which
it rewrites in place). v1 entries have no ids: as pi's own migration does,
they are chained in file order, and a v1 compaction's
``firstKeptEntryIndex`` (an index into the file's entries, header
included) becomes ``first_kept_event_id``. v2 renamed nothing but added
``id``/``parentId``; v3 renamed the message role ``hookMessage`` to
``custom``. Mapping:

- ``message`` entries: ``user`` / ``assistant`` -> ``message`` (an
  assistant's ``toolCall`` parts become ``tool_call`` events after it),
  ``toolResult`` -> ``tool_result``; ``bashExecution`` (a command the user
  ran) -> a user ``message`` with the text pi sends the model for it, or
  ``custom`` if it was kept out of the context (``!!``); ``custom`` /
  ``hookMessage`` -> a user ``message`` as for ``custom_message``; other
  roles -> ``custom``, kept whole.
- ``compaction`` -> ``compaction``; ``branch_summary`` -> ``branch_summary``;
  ``label`` -> ``label`` (one that clears a label, with no ``label``
  text, -> ``custom``).
- ``model_change`` in both shapes (``provider`` + ``modelId``, or
  oh-my-pi's ``model: "provider/id"`` with a ``role``) -> ``custom`` with
  the model normalized under ``model``; the session's ``model`` follows.
- ``custom_message`` (an extension's message pi sends to the model) ->
  a user ``message`` with ``custom_type``, ``display`` and ``details``.
- ``session_info`` / ``title_change`` names and the title slot set the
  session's ``name``; the header (with ``branchedFrom`` or
  ``parentSession``) is kept as the first event, and so is every other
  entry type, as ``custom``."""

from __future__ import annotations

import os
from typing import Any

import orjson

from ..event import NIL_ID
from ..metafields import label_name_problem
from ..records import UsageRecord
from .base import Importer, call_places, count, custom_record, interleaved, split_fields, text_parts, usage_record
from .builder import SessionBuilder
from .model import SourceLine
from .pi_migration import alias_migrated, migrated_rewrite
from .reader import FileData

__all__ = ["PiImporter"]

_ENTRY = ("type", "id", "parentId", "timestamp")


def _is_call(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "toolCall"


def _usage(raw: Any) -> UsageRecord | None:
    """pi's ``{input, output, cacheRead, cacheWrite, totalTokens, cost:
    {..., total}}`` as docs/records.md's usage. pi's ``input`` leaves out
    the cached prompt tokens (pi-ai splits them off for every provider),
    so the prompt is all three; None when the counts are not there."""
    if not isinstance(raw, dict):
        return None
    inp, out = count(raw.get("input")), count(raw.get("output"))
    if inp is None or out is None:
        return None
    prompt = inp + (count(raw.get("cacheRead")) or 0) + (count(raw.get("cacheWrite")) or 0)
    cost = raw.get("cost")
    return usage_record(
        prompt, out, count(raw.get("totalTokens")), cost.get("total") if isinstance(cost, dict) else None
    )


def _bash_text(message: dict[str, Any]) -> str:
    """What pi sends the model for a command the user ran (its
    ``bashExecutionToText``), so that a resumed session's context holds it."""
    text = f"Ran `{message['command']}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if isinstance(output, str) and output else "(no output)"
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif code is not None and code != 0:
        text += f"\n\nCommand exited with code {code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


class PiImporter(Importer):
    name = "pi"
    prefix = "pi"

    def default_roots(self) -> list[str]:
        sessions = os.environ.get("PI_CODING_AGENT_SESSION_DIR")
        if sessions:
            return [sessions]
        base = os.environ.get("PI_CODING_AGENT_DIR") or os.path.expanduser("~/.pi/agent")
        return [os.path.join(base, "sessions")]

    def skip_prefix(self, data: bytes) -> int:
        nl = data.find(b"\n")
        if nl < 0:
            return 0
        try:
            first = orjson.loads(data[:nl])
        except orjson.JSONDecodeError:
            return 0
        return nl + 1 if isinstance(first, dict) and first.get("type") == "title" else 0

    def assign(self, fd: FileData) -> list[str] | None:
        header = next((ln.obj for ln in fd.lines if ln.obj is not None and ln.obj.get("type") == "session"), None)
        if header is None or not isinstance(header.get("id"), str):
            return None
        return [header["id"]] * len(fd.lines)

    def line_key(self, source_id: str, obj: dict[str, Any]) -> str | None:
        # Session-scoped: pi ids are 8 hex digits, unique only in their file.
        entry = obj.get("id") if obj.get("type") != "session" else "header"
        return f"{source_id}:{entry}" if isinstance(entry, str) else None

    def slim(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj.get("type") in ("session", "title"):
            return obj
        # The id too: after pi migrated a v1 file, a later poll's entries find
        # their parents through it (``pi_migration.alias_migrated``), kept builder or not.
        return {"type": obj.get("type"), "id": obj.get("id")}

    def prompt_text(self, obj: dict[str, Any]) -> str | None:
        message = obj.get("message")
        if obj.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "user":
            return None
        return text_parts(message.get("content")) or None

    def begin(self, b: SessionBuilder, lines: list[SourceLine]) -> None:
        header = next((ln.obj for ln in lines if ln.obj is not None and ln.obj.get("type") == "session"), None) or {}
        version = header.get("version")
        b.state["version"] = version if isinstance(version, int) else 1
        # pi indexes v1 entries over the parsed lines (the header is 0).
        b.state["entries"] = [ln.lineno for ln in lines if ln.obj is not None and ln.obj.get("type") != "title"]
        if b.state["version"] >= 2:
            alias_migrated(b, [line for line in lines if not line.new])
        compactions = [i for i, k in b.kind_of.items() if k == "compaction"]
        b.state["last_compaction"] = max(compactions) if compactions else None
        for line in lines:
            # Only text can name a session (any other title stays in its custom event).
            title = line.obj.get("title") if line.obj is not None and line.obj.get("type") == "title" else None
            if isinstance(title, str) and title:
                b.meta_changes["name"] = title
        # Read on every pass: what a later pass finds fills what is still
        # unset (builder.flush); a model_change sets the model outright.
        model = header.get("modelId")
        if not isinstance(model, str):
            # No model in the header (pi writes none) and none chosen yet: the
            # model of the first reply, which each assistant message names.
            model = next(
                (
                    m["model"]
                    for m in (ln.obj.get("message") for ln in lines if ln.obj is not None)
                    if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("model"), str)
                ),
                None,
            )
        parent = self._parent_session(header.get("parentSession") or header.get("branchedFrom"))
        for key, value in (("source_cwd", header.get("cwd")), ("model", model), ("parent_session", parent)):
            if value is not None:
                b.create_meta.setdefault(key, value)

    def _parent_session(self, parent: Any) -> Any:
        """The session a fork came from, as agentlog names it: pi names the
        parent's file, ``<time>_<session id>.jsonl``, and its session is
        ``pi-<session id>`` here. A value of another form is kept as given."""
        if not isinstance(parent, str):
            return parent
        name = os.path.basename(parent.replace("\\", "/"))
        if not name.endswith(".jsonl") or "_" not in name:
            return parent
        source_id = name[: -len(".jsonl")].rsplit("_", 1)[1]
        return self.session_id(source_id) if source_id else parent

    def rewritten(self, b: SessionBuilder, lines: list[SourceLine], consumed: int) -> bool:
        """pi's own rewrite of an old session it migrated (``pi_migration``)."""
        return migrated_rewrite(b, lines, consumed, self.line_time)

    def event_key(self, b: SessionBuilder, line: SourceLine, obj: dict[str, Any]) -> str | None:
        if b.state["version"] < 2 and obj.get("type") != "session":
            return f"{b.source_id}:line:{line.lineno}"
        return self.line_key(b.source_id, obj)

    @staticmethod
    def _entry(b: SessionBuilder, entry_id: Any, *, first: bool = False) -> str | None:
        """The event of the entry ``entry_id`` names (None: no id, or not
        found): the last one made from it (where the branch it ends goes
        on), or with ``first`` its first (the message a label names, not
        the tool call made from the same entry)."""
        if not isinstance(entry_id, str):
            return None
        key = f"{b.source_id}:{entry_id}"
        return b.lookup_first(key) if first else b.lookup(key)

    def _abandoned_head(self, b: SessionBuilder, obj: dict[str, Any]) -> str:
        """The head of the branch a ``branch_summary`` leaves. pi's code
        (``branchWithSummary``) writes ``fromId`` as the entry it branches
        *from*, the same as ``parentId`` (or ``"root"``), and never names the
        leaf it moved away from; that leaf is the entry it wrote last, the
        line before (pi appends every entry at its leaf). A ``fromId`` that
        names another entry, as pi's format document shows it, is taken as
        given."""
        from_id = obj.get("fromId")
        if from_id != obj.get("parentId"):
            named = self._entry(b, from_id)
            if named is not None:
                return named
        return b.cursor

    def _parent(self, b: SessionBuilder, obj: dict[str, Any]) -> str | None:
        """The parent event: pi's parentId (v2+), else the chain (v1)."""
        if b.state["version"] < 2:
            return None
        wanted = obj.get("parentId")
        if isinstance(wanted, str):
            found = b.lookup(f"{b.source_id}:{wanted}")
            if found is not None:
                return found
        return NIL_ID  # a root: placed after the header event

    def convert(self, b: SessionBuilder, line: SourceLine) -> None:
        obj = line.obj
        assert obj is not None
        kind = obj.get("type")
        key = self.event_key(b, line, obj)
        keys = (key,) if key else ()
        ts = self.line_time(obj)
        if kind in ("session", "title"):
            b.emit("custom", None, custom_record(obj), line, ts_ns=ts, keys=keys, side=True)
            return
        parent = self._parent(b, obj)
        source: dict[str, Any] = {"fields": split_fields(obj, _ENTRY + ("message",))}
        if isinstance(obj.get("parentId"), str):
            source["parent_id"] = obj["parentId"]
        if isinstance(obj.get("id"), str):
            source["id"] = obj["id"]
        message = obj.get("message")
        if kind == "message":
            if not isinstance(message, dict):
                # a damaged entry: reported with its file and line (and kept
                # whole), as the Claude Code importer does, not a silent side line
                raise TypeError(f"the message of a 'message' entry is {type(message).__name__}, not an object")
            self._message(b, line, obj, message, parent, keys, source, ts)
        elif kind == "compaction":
            self._compaction(b, line, obj, parent, keys, source, ts)
        elif kind == "branch_summary":
            record = {
                "summary": obj.get("summary") or "",
                "structured": obj.get("details") or {},
                "abandoned_head": self._abandoned_head(b, obj),
                "common_ancestor": NIL_ID if parent == NIL_ID else b.resolve(parent) if parent else b.cursor,
                "source": {**source, "fields": split_fields(obj, _ENTRY + ("summary", "details"))},
            }
            b.emit("branch_summary", "system", record, line, ts_ns=ts, parent=parent, keys=keys)
        elif kind == "label" and (target := self._entry(b, obj.get("targetId"), first=True)):
            # One label an entry in pi: a new one replaces the entry's old one
            # in the session's labels (if a ref can name it: metafields), and
            # an entry with no label clears it. Such an entry, or one whose
            # target is not in the session, has no label record (name and
            # target are required), so it is a ``custom`` event.
            name = obj.get("label")
            if name is None or isinstance(name, str):
                b.set_label(target, name if name is not None and label_name_problem(name) is None else None)
            if isinstance(name, str):
                record = {
                    "name": name,
                    "target": target,
                    "source": {**source, "fields": split_fields(obj, _ENTRY + ("label",))},
                }
                b.emit("label", None, record, line, ts_ns=ts, parent=parent, keys=keys, side=True)
            else:
                b.emit("custom", None, custom_record(obj), line, ts_ns=ts, parent=parent, keys=keys, side=True)
        elif kind == "model_change":
            record = custom_record(obj)
            provider, model = obj.get("provider"), obj.get("modelId")
            if isinstance(obj.get("model"), str):  # oh-my-pi: "provider/modelId"
                provider, _, model = obj["model"].partition("/")
                if not model:
                    provider, model = None, obj["model"]
            record["model"] = {"provider": provider, "id": model, "role": obj.get("role")}
            if isinstance(model, str) and obj.get("role") in (None, "default"):
                b.put(b.meta_changes, "model", model)
            b.emit("custom", None, record, line, ts_ns=ts, parent=parent, keys=keys, side=True)
        elif kind == "custom_message":
            # An extension's message that pi sends to the model as the user's.
            fields = split_fields(obj, (*_ENTRY, "content", "customType", "display", "details"))
            record = {
                "content": obj.get("content"),
                "custom_type": obj.get("customType"),
                "display": obj.get("display"),
                "details": obj.get("details"),
                "source": {**source, "fields": fields},
            }
            b.emit("message", "user", record, line, ts_ns=ts, parent=parent, keys=keys)
        else:
            if kind in ("session_info", "title_change") and isinstance(obj.get("name") or obj.get("title"), str):
                b.put(b.meta_changes, "name", obj.get("name") or obj.get("title"))
            b.emit("custom", None, custom_record(obj), line, ts_ns=ts, parent=parent, keys=keys, side=True)

    def _message(
        self,
        b: SessionBuilder,
        line: SourceLine,
        obj: dict[str, Any],
        message: dict[str, Any],
        parent: str | None,
        keys: tuple[str, ...],
        source: dict[str, Any],
        ts: int | None,
    ) -> None:
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            source["message"] = split_fields(message, ("role", "content"))
            b.emit(
                "message",
                "user",
                {"content": content, "source": source},
                line,
                ts_ns=ts,
                parent=parent,
                keys=keys,
            )
        elif role == "assistant":
            parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
            calls = [p for p in parts if _is_call(p)]
            # pi's own usage stays in source.message; the record gets agentlog's shape.
            source["message"] = split_fields(message, ("role", "content", "model", "stopReason", "provider"))
            places = call_places(parts, _is_call)
            if interleaved(places, len(parts) - len(calls)):
                # The calls follow the message as events: where one sat among
                # the text is kept here (as the Claude Code importer keeps it).
                source["calls_at"] = places
            record: dict[str, Any] = {
                "content": [p for p in parts if p not in calls],
                "model": message.get("model"),
                "finish_reason": message.get("stopReason"),
                "provider_name": message.get("provider"),
                "source": source,
            }
            usage = _usage(message.get("usage"))
            if usage is not None:  # none rather than a usage no total can read
                record["usage"] = usage
            b.emit("message", "assistant", record, line, ts_ns=ts, parent=parent, keys=() if calls else keys)
            for i, call in enumerate(calls):
                b.emit(
                    "tool_call",
                    "assistant",
                    {
                        "id": call.get("id"),
                        "name": call.get("name"),
                        # A call written without arguments took none: "{}", as
                        # a model's own call without arguments reads.
                        "arguments": orjson.dumps(call.get("arguments", {})).decode(),
                        **({"extra": e} if (e := split_fields(call, ("type", "id", "name", "arguments"))) else {}),
                    },
                    line,
                    ts_ns=ts,
                    keys=keys if i == len(calls) - 1 else (),
                )
        elif role == "toolResult":
            source["message"] = split_fields(message, ("role", "content", "toolCallId", "toolName", "isError"))
            b.emit(
                "tool_result",
                "tool",
                {
                    "tool_call_id": message.get("toolCallId"),
                    "name": message.get("toolName"),
                    "content": content,
                    "is_error": bool(message.get("isError")),
                    "source": source,
                },
                line,
                ts_ns=ts,
                parent=parent,
                keys=keys,
            )
        elif (
            role == "bashExecution"
            and isinstance(message.get("command"), str)
            and not message.get("excludeFromContext")
        ):
            # A command the user ran (``!ls``): pi sends it to the model as the
            # user's message, in the words of its bashExecutionToText.
            source["message"] = message
            b.emit(
                "message",
                "user",
                {"content": _bash_text(message), "source": source},
                line,
                ts_ns=ts,
                parent=parent,
                keys=keys,
            )
        elif role in ("custom", "hookMessage"):
            # An extension's message: pi sends its content to the model as the
            # user's, as it does a ``custom_message`` entry's.
            source["message"] = split_fields(message, ("content", "customType", "display", "details"))
            record = {
                "content": content,
                "custom_type": message.get("customType"),
                "display": message.get("display"),
                "details": message.get("details"),
                "source": source,
            }
            b.emit("message", "user", record, line, ts_ns=ts, parent=parent, keys=keys)
        else:  # a command kept out of the model's context (``!!ls``), summaries
            b.emit(
                "custom",
                role if isinstance(role, str) and role.isalpha() and role.islower() else None,
                custom_record(obj),
                line,
                ts_ns=ts,
                parent=parent,
                keys=keys,
            )

    def _compaction(
        self,
        b: SessionBuilder,
        line: SourceLine,
        obj: dict[str, Any],
        parent: str | None,
        keys: tuple[str, ...],
        source: dict[str, Any],
        ts: int | None,
    ) -> None:
        first = None
        if isinstance(obj.get("firstKeptEntryId"), str):
            first = b.lookup_first(f"{b.source_id}:{obj['firstKeptEntryId']}")
        elif isinstance(obj.get("firstKeptEntryIndex"), int):
            entries: list[int] = b.state["entries"]
            index = obj["firstKeptEntryIndex"]
            if 0 < index < len(entries):  # index 0 is the header, which pi never keeps
                first = b.lookup_first(f"{b.source_id}:line:{entries[index]}")
        record = {
            "summary": obj.get("summary") or "",
            "structured": obj.get("details") or {},
            "first_kept_event_id": first,
            "tokens_before": obj.get("tokensBefore"),
            "tokens_after": obj.get("tokensAfter"),
            "previous_compaction_id": b.state["last_compaction"],
            "source": {
                **source,
                "fields": split_fields(obj, _ENTRY + ("summary", "details", "tokensBefore", "tokensAfter")),
            },
        }
        p = b.emit("compaction", "system", record, line, ts_ns=ts, parent=parent, keys=keys)
        b.put(b.state, "last_compaction", p.id)

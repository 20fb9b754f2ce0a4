"""``ClaudeImporter``: where Claude Code keeps its transcripts, how their
lines group into sessions, what a session's metadata is read from, and
which converter each line goes to (the mapping: the package docstring)."""

from __future__ import annotations

import os
import re
from typing import Any

from ..base import Importer, text_parts
from ..builder import SessionBuilder
from ..model import SourceLine
from ..reader import FileData
from .assistant import convert_assistant, stored_reply
from .compaction import convert_boundary
from .lines import dedup_key, line_time_ns
from .side import convert_side_line, convert_summary, finish_summaries
from .user import convert_user

__all__ = ["ClaudeImporter"]

_SESSION_FILE = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl")


#: How Claude Code's own user lines begin: slash commands, ``!`` commands
#: and their output in tags, notes about them, an interruption.
_NOT_TYPED = ("<", "Caveat:", "[Request interrupted")


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
        return dedup_key(obj)

    def line_time(self, obj: dict[str, Any]) -> int | None:
        return line_time_ns(obj)

    def begin(self, b: SessionBuilder, lines: list[SourceLine]) -> None:
        if not b.state:  # first use of this builder: state from the stored events
            b.state["groups"] = {}
            stored = stored_reply(b)
            if stored is not None:
                b.state["groups"][stored[0]] = stored[1]
            compactions = [i for i, k in b.kind_of.items() if k == "compaction"]
            b.state["last_compaction"] = max(compactions) if compactions else None
        # Read on every pass, not only the one that creates the session: a
        # live file's first lines (a permission mode, a snapshot) may carry
        # none of these, and a later pass fills what is still unset.
        objs = [ln.obj for ln in lines if ln.obj is not None]
        # The uuids this run's new lines hold: a summary naming one of them
        # waits for it (side.convert_summary).
        b.state["ahead"] = {
            ln.obj["uuid"] for ln in lines if ln.new and ln.obj is not None and isinstance(ln.obj.get("uuid"), str)
        }
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
            convert_assistant(b, line, obj, message)
        elif kind == "user" and isinstance(message, dict):
            convert_user(b, line, obj, message)
        elif kind == "system" and obj.get("subtype") == "compact_boundary":
            convert_boundary(b, line, obj)
        elif kind == "summary":
            convert_summary(b, line, obj)
        else:
            convert_side_line(b, line, obj)

    def finish(self, b: SessionBuilder) -> None:
        finish_summaries(b)

    def restates(self, obj: dict[str, Any]) -> bool:
        # Every conversation line has a uuid; a line without one is state
        # (a permission mode, a title, a latch) that Claude Code writes again
        # as a matter of course, with new types in each release. A file
        # snapshot is the exception: it is taken once per message (its
        # messageId), so an exact repeat may be a doubled write.
        return not isinstance(obj.get("uuid"), str) and obj.get("type") != "file-history-snapshot"

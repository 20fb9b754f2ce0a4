"""The neutral form every provider view renders, and what the views share.

A context's events become a list of ``NeutralMessage`` (a message, with
the tool calls that follow it) and ``NeutralResult`` (a tool result),
the pairing guarantee repaired (``neutral_form(..., repair=True)``; the
rules are told in ``agentlog.providers``, which exports the views). Each
API's view renders that list in a module of its own:
``providers_openai_chat`` (Chat Completions), ``providers_openai_responses``
(Responses) and ``providers_anthropic`` (Messages). The pairing repair
and the helpers more than one view needs live here once, so that no two
views can repair or flatten differently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidEvent
from .event import Event

INTERRUPTED = "[interrupted: this tool call did not complete, so it has no result]"
COMPACTION_PREFIX = "The conversation so far was summarized:\n"
BRANCH_PREFIX = (
    "An earlier branch of this conversation was abandoned. It tried the following (its changes may not apply here):\n"
)

MESSAGE_ROLES = ("user", "assistant", "system", "developer")

#: A record as the views read it: JSON from the log, per docs/records.md but
#: with any extra fields a provider sent, so read defensively.
_Record = Mapping[str, Any]

# --- the neutral form every view renders --------------------------------------
# Shared with the view modules (providers_openai_chat,
# providers_openai_responses, providers_anthropic), so named without an
# underscore; not in __all__ of agentlog.providers: it is the provider
# views' own, not the library's surface.


@dataclass
class NeutralMessage:
    role: str
    record: _Record
    calls: list[_Record] = field(default_factory=list)


@dataclass
class NeutralResult:
    call_id: Any  # a str, except in the faithful view of a result with a bad id
    content: Any
    is_error: bool = False  # the Chat and Responses views cannot say it; the Anthropic view does


def _record(event: Event) -> dict[str, Any]:
    if not event.loaded:
        raise InvalidEvent(f"event {event.id} is not loaded: resolve it before rendering")
    if not isinstance(event.record, dict):
        raise InvalidEvent(f"{event.kind} event {event.id} has a non-object record")
    record: dict[str, Any] = event.record
    return record


def event_triples(events: Iterable[Event]) -> Iterator[tuple[str, str | None, _Record]]:
    for event in events:
        if event.kind in ("message", "tool_call", "tool_result", "compaction", "branch_summary"):
            record = _record(event)
            # ``append`` takes any role and record, so a view meets what no API
            # takes. Named here, with the event, so it can be found and stepped
            # around (``neutral_form`` says the same without an id).
            if event.kind == "message" and event.role not in MESSAGE_ROLES:
                raise InvalidEvent(
                    f"message event {event.id} has role {event.role!r}, which no provider takes "
                    f"(expected one of {', '.join(MESSAGE_ROLES)}); select() the event before it to branch around it"
                )
            if event.kind == "tool_call" and not isinstance(record.get("id"), str):
                raise InvalidEvent(
                    f"tool_call event {event.id} has no string id (its result could not name it): "
                    f"{record.get('id')!r}; select() the event before it to branch around it"
                )
            yield event.kind, event.role, record


def server_results(record: _Record) -> dict[str, Any]:
    """Results a reply holds in its own content, by call id: a server tool
    (Anthropic's web search, as imported Claude Code replies hold it) ran
    on the provider's side, and its ``*_tool_result`` part follows its
    ``server_tool_use`` in the same message. Its text for the views."""
    content = record.get("content")
    found: dict[str, Any] = {}
    if isinstance(content, list):
        for part in content:
            if (
                isinstance(part, dict)
                and str(part.get("type", "")).endswith("_tool_result")
                and isinstance(part.get("tool_use_id"), str)
            ):
                found[part["tool_use_id"]] = _server_result_text(part.get("content"))
    return found


def _server_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        lines = []
        for item in content:
            if isinstance(item, dict) and (item.get("title") or item.get("url")):
                lines.append(" ".join(str(item[k]) for k in ("title", "url") if item.get(k)))
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                lines.append(item["text"])
        if lines:
            return "\n".join(lines)
    return json.dumps(content, default=str)


def neutral_form(
    triples: Iterable[tuple[str, str | None, _Record]], repair: bool
) -> list[NeutralMessage | NeutralResult]:
    out: list[NeutralMessage | NeutralResult] = []
    open_calls: list[str] = []  # ids of the latest call group still awaiting results
    inline: dict[str, Any] = {}  # results the group's reply holds itself (server tools)

    def close_group() -> None:
        if repair:
            out.extend(
                NeutralResult(cid, inline[cid]) if cid in inline else NeutralResult(cid, INTERRUPTED, is_error=True)
                for cid in open_calls
            )
        open_calls.clear()
        inline.clear()

    for kind, role, rec in triples:
        if kind == "tool_call":
            call_id = rec.get("id")
            if not isinstance(call_id, str):
                raise InvalidEvent(f"tool_call record without a string id: {rec!r}")
            last = out[-1] if out else None
            if not (isinstance(last, NeutralMessage) and last.role == "assistant"):
                close_group()
                last = NeutralMessage("assistant", {"content": None})
                out.append(last)
            if not last.calls and repair:
                inline.update(server_results(last.record))
            last.calls.append(rec)
            open_calls.append(call_id)
        elif kind == "tool_result":
            call_id = rec.get("tool_call_id")
            if call_id in open_calls:
                open_calls.remove(call_id)
            elif repair:
                continue  # orphan: its call is absent or already answered
            out.append(NeutralResult(call_id, rec.get("content"), rec.get("is_error") is True))
        else:
            close_group()
            if kind == "compaction":
                out.append(NeutralMessage("user", {"content": COMPACTION_PREFIX + _summary_text(rec)}))
            elif kind == "branch_summary":
                out.append(NeutralMessage("user", {"content": BRANCH_PREFIX + _summary_text(rec)}))
            elif role in MESSAGE_ROLES:
                out.append(NeutralMessage(role, rec))
            else:
                raise InvalidEvent(f"message with role {role!r}: expected one of {MESSAGE_ROLES}")
    close_group()
    return out


def _summary_text(record: _Record) -> str:
    """A summary record's text; a missing or null one is no text (not "None")."""
    summary = record.get("summary")
    if summary is None:
        return ""
    return summary if isinstance(summary, str) else json.dumps(summary, default=str)


# --- what the views share ------------------------------------------------------
# Needed by more than one view (the two OpenAI views; part_type and
# system_prompt_text by the Anthropic view too), so written once here.


def as_json_text(value: Any) -> Any:
    """Content or arguments the APIs take only as text (or, for content, a
    list of parts), when a record holds other JSON (an object, a number: a
    plain ``append`` stores whatever it is given): sent as its JSON text,
    as the Anthropic view sends it, never as a value the API refuses."""
    if value is None or isinstance(value, str | list):
        return value
    return json.dumps(value, default=str)


def part_type(part: Any) -> str:
    return str(part.get("type") or "part") if isinstance(part, dict) else "part"


#: Content parts that hold a model's thinking (Anthropic's, as Claude Code
#: and pi record them), and a server tool's call and result inside a reply
#: (sent as a call and its result instead, ``server_results``). Neither
#: OpenAI API takes them as content; the records keep them, and the
#: exports show them.
_UNSENT_PARTS = frozenset({"thinking", "redacted_thinking", "server_tool_use"})


def without_unsent(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    return [
        p
        for p in content
        if not (
            isinstance(p, dict) and (p.get("type") in _UNSENT_PARTS or str(p.get("type", "")).endswith("_tool_result"))
        )
    ]


def system_prompt_text(contents: Iterable[Any]) -> str:
    """Several system texts as one system prompt: joined by a blank line
    (the rule of ``chat_messages_to_drafts`` and of the Anthropic view)."""
    return "\n\n".join(joined_text(c) for c in contents)


def joined_text(content: Any) -> str:
    """Content as one string, for a field that takes text only: a list of
    parts one a line (a part without text as an empty one), other JSON as
    its JSON text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return json.dumps(content)

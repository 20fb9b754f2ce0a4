"""Provider views of a context, and the inverse used by ``sync()``.

A context (``Session.context(resolve=True)``: the latest compaction first,
then the events it kept and everything after) becomes the request payload
of an OpenAI-style API:

- ``to_chat_messages``: Chat Completions ``messages``;
- ``to_responses_input``: Responses API ``input`` items.

(``providers_anthropic`` renders the same neutral form for Anthropic's
Messages API, where thinking is kept and system text moves out of the
messages.)

A ``compaction`` or ``branch_summary`` becomes a framed user message;
``state``, ``label``, ``custom`` and other custom kinds are never sent.
Both views keep the **pairing guarantee** providers enforce: every tool
call has exactly one result, placed after it and before the next message.
The log may break it (a turn interrupted between call and result, a context
cut by hand, a duplicated result), so the views repair it:

- a result whose call is not open (absent, already answered, or closed by
  a later message) is dropped;
- a call still unanswered when the next message arrives (or the context
  ends) gets a synthetic error result, ``INTERRUPTED``. A synthetic result
  rather than dropping the call keeps what the assistant tried visible to
  the model, and the wording tells it the tool did not run to completion.

``events_to_chat_messages`` is the faithful view (no repair) that mirrors
``chat_messages_to_drafts``, so ``sync()`` can compare a caller's message
list with what is stored: chat -> drafts -> events -> chat is the identity
for ordinary messages (``normalize_chat_messages`` gives the canonical form
of any list: dicts, known fields only, empty optional fields dropped).

Thinking parts (``thinking``, ``redacted_thinking``: Anthropic's, as
imported Claude Code and pi sessions hold them) are not sent: neither API
takes them as content. An assistant message whose content is an empty list of parts (a reply
that failed before its first token, as pi records one; a Codex reasoning
item kept alone) is sent as one with no content, which the APIs accept
where they refuse an empty list: null beside tool calls, else "".

Only fields the APIs accept are sent; records keep everything else
(usage, reasoning, provider ids), per docs/records.md. Content parts are
sent in the view's own API: Chat ``text`` / ``image_url`` parts become
Responses ``input_text`` or ``output_text`` / ``input_image`` parts, and
Responses parts (as the Agents SDK adapter stores them) become Chat parts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidEvent
from .event import Event
from .records import RecordTuple

__all__ = [
    "INTERRUPTED",
    "as_message_dict",
    "chat_messages_to_drafts",
    "events_to_chat_messages",
    "normalize_chat_messages",
    "to_chat_messages",
    "to_responses_input",
]

INTERRUPTED = "[interrupted: this tool call did not complete, so it has no result]"
COMPACTION_PREFIX = "The conversation so far was summarized:\n"
BRANCH_PREFIX = (
    "An earlier branch of this conversation was abandoned. It tried the following (its changes may not apply here):\n"
)

MESSAGE_ROLES = ("user", "assistant", "system", "developer")
# Optional message fields the Chat Completions API accepts, per role.
_CHAT_FIELDS = {
    "user": ("name",),
    "system": ("name",),
    "developer": ("name",),
    "assistant": ("name", "refusal", "audio"),
}
_RECORD_ONLY_RESULT_KEYS = ("role", "tool_call_id", "content", "name", "is_error")

#: A record as the views read it: JSON from the log, per docs/records.md but
#: with any extra fields a provider sent, so read defensively.
_Record = Mapping[str, Any]

# --- the neutral form every view renders --------------------------------------
# Shared with providers_anthropic, so named without an underscore; not in
# __all__: it is the provider views' own, not the library's surface.


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


# --- Chat Completions ------------------------------------------------------------


def _chat_content(content: Any) -> Any:
    """Responses parts to Chat parts, the inverse of ``_responses_content``:
    input_text / output_text -> text, input_image (by URL) -> image_url.
    Anything else passes through (``refusal`` and ``input_audio`` parts
    have the same shape in both APIs)."""
    if not isinstance(content, list):
        return content
    parts: list[Any] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(part, str):  # records.md: a list's items may be strings
            parts.append({"type": "text", "text": part})
        elif kind in ("input_text", "output_text"):
            parts.append({"type": "text", "text": part.get("text", "")})
        elif kind == "input_image" and part.get("image_url"):
            image: dict[str, Any] = {"url": part["image_url"]}
            if part.get("detail"):
                image["detail"] = part["detail"]
            parts.append({"type": "image_url", "image_url": image})
        elif kind == "input_file":
            file = {k: part[k] for k in ("file_id", "file_data", "filename") if part.get(k) is not None}
            parts.append({"type": "file", "file": file})
        else:
            parts.append(part)
    return parts


def _as_json_text(value: Any) -> Any:
    """Content or arguments the APIs take only as text (or, for content, a
    list of parts), when a record holds other JSON (an object, a number: a
    plain ``append`` stores whatever it is given): sent as its JSON text,
    as the Anthropic view sends it, never as a value the API refuses."""
    if value is None or isinstance(value, str | list):
        return value
    return json.dumps(value, default=str)


def _chat_tool_content(content: Any) -> Any:
    """A tool result as Chat Completions takes it: a string or text parts
    only (a ``tool`` message carries no image or file); other parts are
    named in the text, as the Markdown export names them."""
    if content is None:
        return ""
    parts = _chat_content(_as_json_text(content))
    if not isinstance(parts, list) or all(isinstance(p, dict) and p.get("type") == "text" for p in parts):
        return parts
    return "\n".join(
        p.get("text", "") if isinstance(p, dict) and p.get("type") == "text" else f"[{part_type(p)}]" for p in parts
    )


def part_type(part: Any) -> str:
    return str(part.get("type") or "part") if isinstance(part, dict) else "part"


#: Content parts that hold a model's thinking (Anthropic's, as Claude Code
#: and pi record them), and a server tool's call and result inside a reply
#: (sent as a call and its result instead, ``server_results``). Neither
#: OpenAI API takes them as content; the records keep them, and the
#: exports show them.
_UNSENT_PARTS = frozenset({"thinking", "redacted_thinking", "server_tool_use"})


def _without_unsent(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    return [
        p
        for p in content
        if not (
            isinstance(p, dict) and (p.get("type") in _UNSENT_PARTS or str(p.get("type", "")).endswith("_tool_result"))
        )
    ]


def _render_chat(
    items: list[NeutralMessage | NeutralResult], system: Any, repair: bool = False
) -> list[dict[str, Any]]:
    """The chat messages for ``items``. ``repair`` marks the view sent to a
    provider: it also turns Responses parts (as the Agents SDK adapter
    stores them) into Chat parts. The faithful view keeps content as stored,
    so that ``sync()`` compares what a caller gave with what was kept."""
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    for item in items:
        if isinstance(item, NeutralResult):
            result = _chat_tool_content(item.content) if repair else item.content
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": result})
            continue
        content = item.record.get("content")
        if repair:
            content = _chat_content(_without_unsent(_as_json_text(content)))
            if content == [] and item.role == "assistant":
                content = None  # the APIs refuse an empty list of parts: no content (or "", below)
        if content is None and (item.role != "assistant" or (repair and not item.calls)):
            # Null content is valid only beside tool calls. An assistant
            # message whose calls are not on the path (HEAD checked out
            # between them) would make the provider reject the request.
            content = ""
        msg: dict[str, Any] = {"role": item.role, "content": content}
        for key in _CHAT_FIELDS[item.role]:
            if item.record.get(key) is not None:
                msg[key] = item.record[key]
        if item.calls:
            msg["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    # Text, as chat_messages_to_drafts stores arguments given as an object.
                    "function": {"name": c.get("name", ""), "arguments": _as_json_text(c.get("arguments", ""))},
                }
                for c in item.calls
            ]
        messages.append(msg)
    return messages


def to_chat_messages(events: Iterable[Event], system: Any = None) -> list[dict[str, Any]]:
    """Chat Completions ``messages`` for a context, pairing repaired.

    ``system`` (the system prompt, not a durable event) comes first."""
    return _render_chat(neutral_form(event_triples(events), repair=True), system, repair=True)


def events_to_chat_messages(events: Iterable[Event], system: Any = None) -> list[dict[str, Any]]:
    """The faithful chat view (no pairing repair): the inverse of
    ``chat_messages_to_drafts`` for ``sync()`` comparisons."""
    return _render_chat(neutral_form(event_triples(events), repair=False), system)


# --- Responses API -----------------------------------------------------------------


def system_prompt_text(contents: Iterable[Any]) -> str:
    """Several system texts as one system prompt: joined by a blank line
    (the rule of ``chat_messages_to_drafts`` and of the Anthropic view)."""
    return "\n\n".join(_text_of(c) for c in contents)


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return json.dumps(content)


def _text_part(text_type: str, text: Any) -> dict[str, Any]:
    """A Responses text part. An ``output_text`` carries its (empty)
    ``annotations``, which the API's own type requires and strict
    Responses-compatible servers refuse a part without."""
    part: dict[str, Any] = {"type": text_type, "text": text}
    if text_type == "output_text":
        part["annotations"] = []
    return part


def _responses_content(role: str, content: Any) -> Any:
    """Chat-style parts to Responses parts: text -> input_text / output_text,
    image_url -> input_image; anything else passes through."""
    if not isinstance(content, list):
        return _as_json_text(content) if content is not None else ""
    text_type = "output_text" if role == "assistant" else "input_text"
    parts: list[Any] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(part, str):  # records.md: a list's items may be strings
            parts.append(_text_part(text_type, part))
        elif kind == "text":
            parts.append(_text_part(text_type, part.get("text", "")))
        elif kind == "file" and isinstance(part.get("file"), dict):
            file = part["file"]
            parts.append(
                {"type": "input_file", **{k: file[k] for k in ("file_id", "file_data", "filename") if k in file}}
            )
        elif kind == "image_url":
            image = part.get("image_url") or {}
            url = image.get("url") if isinstance(image, dict) else image
            detail = image.get("detail") if isinstance(image, dict) else None
            parts.append({"type": "input_image", "image_url": url, "detail": detail or "auto"})
        elif kind == "input_image" and not part.get("detail"):
            # The API's own type requires ``detail`` (its default is "auto"),
            # as it requires an output_text's annotations.
            parts.append({**part, "detail": "auto"})
        else:
            parts.append(part)
    return parts


def to_responses_input(events: Iterable[Event], system: Any = None) -> list[dict[str, Any]]:
    """Responses API ``input`` items for a context, pairing repaired.

    An assistant message with no text and only tool calls becomes just its
    ``function_call`` items; tool output is sent as text."""
    items: list[dict[str, Any]] = []
    if system is not None:
        items.append({"type": "message", "role": "system", "content": system})
    for item in neutral_form(event_triples(events), repair=True):
        if isinstance(item, NeutralResult):
            output: Any = _text_of(item.content)
            if isinstance(item.content, list) and any(
                isinstance(p, dict) and p.get("type") not in ("text", "input_text", "output_text") for p in item.content
            ):
                # An image or a file: the output takes input parts, which keep it.
                output = _responses_content("user", item.content)
            items.append({"type": "function_call_output", "call_id": item.call_id, "output": output})
            continue
        content = _without_unsent(item.record.get("content"))
        if item.role == "assistant" and content == []:
            content = None  # an empty list of parts, which the API refuses, says what None says
        if not (item.calls and content in (None, "", [])):
            items.append({"type": "message", "role": item.role, "content": _responses_content(item.role, content)})
        for call in item.calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": call.get("name", ""),
                    "arguments": _as_json_text(call.get("arguments", "")),
                }
            )
    return items


# --- the inverse: chat messages -> drafts -------------------------------------------


def as_message_dict(message: Any) -> dict[str, Any]:
    """A chat message (a mapping or a pydantic message) as a plain dict;
    anything else is InvalidEvent."""
    if isinstance(message, Mapping):
        return dict(message)
    dump = getattr(message, "model_dump", None)
    if callable(dump):  # a pydantic model, such as the openai SDK's message types
        dumped: dict[str, Any] = dump()
        return dumped
    raise InvalidEvent(f"cannot read a chat message from {type(message).__name__}")


def _call_record(call: Any) -> dict[str, Any]:
    call = as_message_dict(call)
    if call.get("type", "function") != "function" or not isinstance(call.get("function"), Mapping):
        raise InvalidEvent(f"unsupported tool call (only type 'function'): {call!r}")
    fn = call["function"]
    arguments = fn.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    extra = {k: v for k, v in call.items() if k not in ("id", "type", "function")}
    return {"id": call.get("id"), "name": fn.get("name", ""), "arguments": arguments, **extra}


def chat_messages_to_drafts(
    messages: Iterable[Any], call_names: dict[str, str] | None = None
) -> tuple[list[RecordTuple], Any]:
    """Records (per docs/records.md) for a chat message list.

    Returns ``(drafts, system_prompt)``: drafts are ``(kind, record, role)``
    tuples for ``Session.append_many``; leading ``system`` messages are the
    system prompt, which is configuration and not stored (its content as
    given if there is one, their texts joined by a blank line if several;
    None if none). A system message after the first other message is part
    of the conversation and becomes a durable event. Extra fields of a
    message are kept in its record.

    A tool message names no tool; its record takes the name of its call.
    ``call_names`` (call id -> tool name) supplies calls made in earlier
    messages when converting a list piece by piece; it is updated in place
    with the calls found here."""
    drafts: list[RecordTuple] = []
    system: list[Any] = []
    # Keyed by whatever id a call had: a call without one is keyed None.
    names: dict[Any, str] = call_names if call_names is not None else {}
    for raw in messages:
        msg = as_message_dict(raw)
        role = msg.get("role")
        if role == "system" and not drafts:
            system.append(msg.get("content"))
        elif role == "tool":
            call_id = msg.get("tool_call_id")
            extra = {k: v for k, v in msg.items() if k not in _RECORD_ONLY_RESULT_KEYS}
            record = {
                "tool_call_id": call_id,
                "name": names.get(call_id, msg.get("name") or ""),
                "content": msg.get("content"),
                "is_error": False,
                **extra,
            }
            drafts.append(("tool_result", record, "tool"))
        elif role in MESSAGE_ROLES:
            calls = msg.get("tool_calls") or []
            record = {k: v for k, v in msg.items() if k not in ("role", "tool_calls")}
            record.setdefault("content", None)
            drafts.append(("message", record, role))
            for call in calls:
                rec = _call_record(call)
                names[rec["id"]] = rec["name"]
                drafts.append(("tool_call", rec, "assistant"))
        else:
            raise InvalidEvent(f"chat message with role {role!r} cannot be stored")
    if not system:
        prompt = None
    elif len(system) == 1:
        prompt = system[0]
    else:
        prompt = system_prompt_text(system)
    return drafts, prompt


def normalize_chat_messages(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """The canonical form of a chat message list: what storing it and
    reading it back with ``events_to_chat_messages`` gives."""
    drafts, system = chat_messages_to_drafts(messages)
    triples = ((kind, role, record) for kind, record, role in drafts)
    return _render_chat(neutral_form(triples, repair=False), system)

"""The Chat Completions view of a context, and its inverse for ``sync()``.

``to_chat_messages`` renders the neutral form (providers_neutral) as Chat
Completions ``messages``, pairing repaired; ``events_to_chat_messages``
is the faithful view, the inverse of ``chat_messages_to_drafts``, which
turns a chat message list into records. Both directions are here
because they are one format: ``normalize_chat_messages`` goes there and
back. ``agentlog.providers`` exports them and says what the views send.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import InvalidEvent
from .event import Event
from .providers_neutral import (
    MESSAGE_ROLES,
    NeutralMessage,
    NeutralResult,
    as_json_text,
    event_triples,
    neutral_form,
    part_type,
    system_prompt_text,
    without_unsent,
)
from .records import RecordTuple

__all__ = [
    "as_message_dict",
    "chat_messages_to_drafts",
    "events_to_chat_messages",
    "normalize_chat_messages",
    "to_chat_messages",
]

# Optional message fields the Chat Completions API accepts, per role.
_CHAT_FIELDS = {
    "user": ("name",),
    "system": ("name",),
    "developer": ("name",),
    "assistant": ("name", "refusal", "audio"),
}
_RECORD_ONLY_RESULT_KEYS = ("role", "tool_call_id", "content", "name", "is_error")


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


def _chat_tool_content(content: Any) -> Any:
    """A tool result as Chat Completions takes it: a string or text parts
    only (a ``tool`` message carries no image or file); other parts are
    named in the text, as the Markdown export names them."""
    if content is None:
        return ""
    parts = _chat_content(as_json_text(content))
    if not isinstance(parts, list) or all(isinstance(p, dict) and p.get("type") == "text" for p in parts):
        return parts
    return "\n".join(
        p.get("text", "") if isinstance(p, dict) and p.get("type") == "text" else f"[{part_type(p)}]" for p in parts
    )


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
            content = _chat_content(without_unsent(as_json_text(content)))
            if content == [] and item.role == "assistant":
                content = None  # the APIs refuse an empty list of parts: no content (or "", below)
            if content == "" and item.role == "assistant" and item.calls:
                content = None  # null beside tool calls, as Completion.to_message() sends it
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
                    "function": {"name": c.get("name", ""), "arguments": as_json_text(c.get("arguments", ""))},
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

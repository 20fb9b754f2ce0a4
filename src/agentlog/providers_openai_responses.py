"""The Responses API view of a context: ``to_responses_input``.

It renders the neutral form (providers_neutral), pairing repaired, as
Responses ``input`` items: Chat-style content parts become Responses
parts, and an assistant turn of tool calls alone becomes just its
``function_call`` items. ``agentlog.providers`` exports it and says what
the views send.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .event import Event
from .providers_neutral import NeutralResult, as_json_text, event_triples, joined_text, neutral_form, without_unsent

__all__ = ["to_responses_input"]


# --- Responses API -----------------------------------------------------------------


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
        return as_json_text(content) if content is not None else ""
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
            output: Any = joined_text(item.content)
            if isinstance(item.content, list) and any(
                isinstance(p, dict) and p.get("type") not in ("text", "input_text", "output_text") for p in item.content
            ):
                # An image or a file: the output takes input parts, which keep it.
                output = _responses_content("user", item.content)
            items.append({"type": "function_call_output", "call_id": item.call_id, "output": output})
            continue
        content = without_unsent(item.record.get("content"))
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
                    "arguments": as_json_text(call.get("arguments", "")),
                }
            )
    return items

"""The Anthropic Messages API view of a context.

``to_anthropic_input(events, system=None)`` gives the keyword arguments of
``anthropic.Anthropic().messages.create(model=..., max_tokens=..., **kw)``:
``{"messages": [...]}``, and ``"system"`` when there is system text. It
renders the neutral form of ``providers`` (pairing repaired as in the
OpenAI views: an unanswered call gets ``INTERRUPTED``, an orphan result is
dropped), under the Messages API's own rules:

- Content is always a list of blocks, each a new dict, so a caller can
  put ``cache_control`` on any of them without touching the records. A
  tool call is a ``tool_use`` block of
  its assistant message; its result a ``tool_result`` block in the user
  message after it, which holds every result of that turn, and then any
  user text that follows (the API wants results first).
- The API has no system role in ``messages`` on most models (a
  mid-conversation system message is only accepted by recent ones), so
  the ``system`` argument and then the context's ``system`` and
  ``developer`` messages, in order, become the top-level ``system``: one
  string, joined by a blank line as ``chat_messages_to_drafts`` joins
  system prompts.
- Consecutive messages of one role are merged, which the API requires.
  Text blocks holding only whitespace are dropped (the API refuses them),
  then a message left with no content; the last text of a final assistant
  message loses its trailing whitespace (refused in a prefill).
- A context that begins with an assistant turn (a session opened by the
  assistant, an import whose first prompt is not a message) gets a user
  turn before it, ``LEADING_USER_TEXT``: the Claude API takes an assistant
  first today, but Bedrock and older API versions refuse it, and dropping
  the turn would lose it.
- A call's ``arguments`` (JSON text) become its ``input`` object. Blank
  arguments are ``{}``; text that is not a JSON object (invalid JSON, a
  list, a number) is sent as ``{"arguments": <the text>}``, so nothing is
  lost and nothing raises. Call ids outside the API's ``[A-Za-z0-9_-]``
  (pi's ``call_x|fc_y``) are rewritten the same way in a call and in its
  result, with a digest of the original so that two cannot collide.
- Thinking is kept, unlike in the OpenAI views: Anthropic requires the
  thinking blocks of the last assistant turn back during tool use. A
  ``thinking`` part is sent when it has its ``signature`` (pi's
  ``thinkingSignature`` counts on a reply whose ``provider_name`` is
  ``anthropic``), a ``redacted_thinking`` part when it has its ``data``;
  thinking without one (another provider's reasoning) is dropped, as the
  API would refuse it.
- Server tools (web search...) are Anthropic's own: their
  ``server_tool_use`` and ``*_tool_result`` parts stay in the assistant
  content. A server call kept as a ``tool_call`` event (the Claude Code
  importer does this) is put back as a ``server_tool_use`` block before
  its result; one whose result the reply does not hold is sent as an
  ordinary call with the ``INTERRUPTED`` result, as the OpenAI views send it.
- Images: Chat ``image_url`` and Responses ``input_image`` parts holding a
  base64 data URL (JPEG, PNG, GIF, WebP) or an http(s) URL, and pi's
  ``{"type": "image", "data", "mimeType"}``, become ``image`` blocks; a PDF
  data URL in a ``file`` / ``input_file`` part becomes a ``document``
  block. Anthropic's own ``image``, ``document`` and ``search_result``
  blocks pass through. Any other part (an OpenAI file id, audio, a JPEG
  XL) becomes a short text naming what was left out, never an error.

Only fields the API accepts are sent; the records keep everything else.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .event import Event
from .providers import (
    NeutralMessage,
    NeutralResult,
    event_triples,
    neutral_form,
    part_type,
    server_results,
    system_prompt_text,
)

__all__ = ["LEADING_USER_TEXT", "to_anthropic_input"]

#: The user turn put before a context that begins with an assistant turn.
LEADING_USER_TEXT = "[The conversation begins with the assistant's message below.]"

_TOOL_ID = re.compile(r"[A-Za-z0-9_-]+")
_NOT_ID = re.compile(r"[^A-Za-z0-9_-]")
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
#: Fields of an Anthropic ``tool_use`` block beyond id, name and input that
#: the Claude Code importer keeps in a call's ``extra`` (``caller`` on every
#: call of Claude Code 2.x), given back so a reply round-trips whole.
_TOOL_USE_FIELDS = ("caller", "toolset_name")
#: Anthropic blocks sent as they are stored, and where the API takes them.
_NATIVE_ANYWHERE = frozenset({"document", "search_result"})
_NATIVE_IN_RESULTS = frozenset({"tool_reference", "browser_state"})

Block = dict[str, Any]


def to_anthropic_input(events: Iterable[Event], system: Any = None) -> dict[str, Any]:
    """Messages API keyword arguments for a context: ``messages``, and
    ``system`` when there is system text (``system`` first, then the
    context's system and developer messages, joined by a blank line)."""
    systems: list[str] = [] if system is None else [_plain_text(system)]
    turns: list[dict[str, Any]] = []
    answered_inline: set[str] = set()  # server calls whose result is in their own reply
    for item in neutral_form(event_triples(events), repair=True):
        if isinstance(item, NeutralResult):
            if item.call_id not in answered_inline:
                _add(turns, "user", [_tool_result(item)])
        elif item.role in ("system", "developer"):
            systems.append(_plain_text(item.record.get("content")))
        elif item.role == "assistant":
            blocks, answered_inline = _assistant_blocks(item)
            _add(turns, "assistant", blocks)
        else:
            _add(turns, "user", _blocks(item.record.get("content"), "user"))
    _trim_final_assistant(turns)
    if turns and turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": _text_blocks(LEADING_USER_TEXT)})
    out: dict[str, Any] = {"messages": turns}
    prompt = system_prompt_text(t for t in systems if t.strip())
    if prompt:
        out["system"] = prompt
    return out


def _add(turns: list[dict[str, Any]], role: str, blocks: list[Block]) -> None:
    """Append a message, merged into the previous one of the same role
    (the API wants roles to alternate); one with no content is dropped."""
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": list(blocks)})


def _trim_final_assistant(turns: list[dict[str, Any]]) -> None:
    """A final assistant message is a prefill, which the API refuses when
    it ends with whitespace."""
    while turns and turns[-1]["role"] == "assistant":
        content = turns[-1]["content"]
        last = content[-1]
        if last.get("type") != "text":
            return
        text = last["text"].rstrip()
        if text:
            content[-1] = {**last, "text": text}
            return
        content.pop()
        if content:
            return
        turns.pop()


# --- assistant turns: text, thinking, tool calls, server tools ----------------------


def _assistant_blocks(msg: NeutralMessage) -> tuple[list[Block], set[str]]:
    """The blocks of an assistant message and its calls, and the ids of the
    server calls its own content answers (their results are not sent again).

    A call goes where the reply had it: after all of the text, unless an
    importer kept its place among the parts (``source.calls_at``: a
    ``tool_use`` between two text blocks, as Claude Code writes one)."""
    record = msg.record
    pi_signatures = record.get("provider_name") == "anthropic"
    content = record.get("content")
    kept = _call_places(record, content, len(msg.calls))
    if kept is None:  # one group: every call after it
        groups = [_blocks(content, "assistant", pi_signatures=pi_signatures)]
        places = [1] * len(msg.calls)
    else:
        places, parts = kept
        groups = [_part_blocks(part, "assistant", pi_signatures) for part in parts]
    inline = set(server_results(record)) if msg.calls else set()
    placed = [(place, call) for place, call in zip(places, msg.calls, strict=True) if call["id"] not in inline]
    blocks: list[Block] = []
    for at, group in enumerate(groups):
        blocks += [_tool_use(call, "tool_use") for place, call in placed if place == at]
        blocks += group
    refusal = record.get("refusal")  # Chat Completions: the reply's text when the model refused
    if isinstance(refusal, str):
        blocks += _text_blocks(refusal)
    blocks += [_tool_use(call, "tool_use") for place, call in placed if place >= len(groups)]
    present = {b.get("id") for b in blocks if b.get("type") == "server_tool_use"}
    answered: set[str] = set()
    for call in msg.calls:
        call_id = call["id"]
        if call_id not in inline:
            continue
        answered.add(call_id)
        if call_id not in present:  # the importer keeps it as a tool_call: before its result again
            at = next(
                (i for i, b in enumerate(blocks) if _is_server_result(b) and b.get("tool_use_id") == call_id),
                len(blocks),
            )
            blocks.insert(at, _tool_use(call, "server_tool_use"))
    return blocks, answered


def _call_places(record: Mapping[str, Any], content: Any, calls: int) -> tuple[list[int], list[Any]] | None:
    """(where each of a reply's ``calls`` sat among its content parts, as an
    importer kept it in ``source.calls_at``; the parts), or None: not kept,
    or not in a form an importer writes (a record edited since).

    A call past the end of the list came after every part (an import that
    followed the file read the reply's last calls later); a path that ends
    inside the reply's chain of calls holds its first calls only."""
    source = record.get("source")
    places = source.get("calls_at") if isinstance(source, dict) else None
    if not (isinstance(places, list) and isinstance(content, list)):
        return None
    if not all(type(p) is int and p >= 0 for p in places) or places != sorted(places):
        return None
    return (places + [len(content)] * calls)[:calls], content


def _is_server_result(block: Block) -> bool:
    return str(block.get("type", "")).endswith("_tool_result")


def _tool_use(call: Mapping[str, Any], kind: str) -> Block:
    name = call.get("name")
    block: Block = {
        "type": kind,
        "id": _tool_id(call["id"]) if kind == "tool_use" else call["id"],
        "name": name if isinstance(name, str) else "",
        "input": _tool_input(call.get("arguments")),
    }
    extra = call.get("extra")
    if isinstance(extra, dict):
        block.update((k, extra[k]) for k in _TOOL_USE_FIELDS if k in extra)
    return block


def _tool_input(arguments: Any) -> dict[str, Any]:
    """A call's arguments as the object ``input`` must be: never raises,
    never drops what was stored (see the module's docstring)."""
    if arguments is None:
        return {}
    if isinstance(arguments, dict):
        return dict(arguments)
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    return value if isinstance(value, dict) else {"arguments": text}


def _tool_id(call_id: str) -> str:
    """An id the API accepts (``[A-Za-z0-9_-]+``): valid ids unchanged,
    others with each bad character replaced and a digest of the original,
    so that two ids that differ only there stay distinct."""
    if _TOOL_ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{_NOT_ID.sub('_', call_id)}_{digest}"


def _thinking(part: dict[str, Any], pi_signatures: bool) -> list[Block]:
    """A thinking part the API accepts back, exactly as it gave it; none
    without the signature or data that proves it came from Claude."""
    if part.get("type") == "redacted_thinking":
        data = part.get("data")
        return [{"type": "redacted_thinking", "data": data}] if isinstance(data, str) and data else []
    thinking, signature = part.get("thinking"), part.get("signature")
    if not signature and pi_signatures:
        signature = part.get("thinkingSignature")  # pi's name for it
    if isinstance(thinking, str) and isinstance(signature, str) and signature:
        return [{"type": "thinking", "thinking": thinking, "signature": signature}]
    return []


# --- tool results ---------------------------------------------------------------------


def _tool_result(item: NeutralResult) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": _tool_id(item.call_id)}
    content: Any = item.content
    if isinstance(content, list):
        content = _blocks(content, "tool_result")
    elif content is not None and not isinstance(content, str):
        content = json.dumps(content, default=str)  # free JSON: as text
    if content and (not isinstance(content, str) or content.strip()):
        block["content"] = content  # optional; an empty one is left out
    if item.is_error:
        block["is_error"] = True
    return block


# --- content parts --------------------------------------------------------------------


def _blocks(content: Any, where: str, pi_signatures: bool = False) -> list[Block]:
    """Stored content as Anthropic blocks for ``where`` (``user``,
    ``assistant`` or ``tool_result``)."""
    if content is None:
        return []
    if isinstance(content, str):
        return _text_blocks(content)
    if not isinstance(content, list):
        return _text_blocks(json.dumps(content, default=str))
    out: list[Block] = []
    for part in content:
        out.extend(_part_blocks(part, where, pi_signatures))
    return out


def _part_blocks(part: Any, where: str, pi_signatures: bool) -> list[Block]:
    if isinstance(part, str):  # records.md: a list's items may be strings
        return _text_blocks(part)
    if not isinstance(part, dict):
        return [_left_out(type(part).__name__)]
    kind = part.get("type")
    if kind in ("text", "input_text", "output_text"):
        blocks = _text_blocks(_as_text(part.get("text")))
        citations = part.get("citations")  # Anthropic's, on a reply that searched
        if kind == "text" and blocks and isinstance(citations, list) and citations:
            blocks[0]["citations"] = citations
        return blocks
    if kind == "refusal":
        return _text_blocks(_as_text(part.get("refusal")))
    if kind == "image_url":
        image = part.get("image_url")
        return [_image(image.get("url") if isinstance(image, dict) else image, "image_url")]
    if kind == "input_image":
        return [_image(part.get("image_url"), "input_image")]
    if kind == "image":
        if isinstance(part.get("source"), dict):
            return [dict(part)]  # Anthropic's own
        if isinstance(part.get("data"), str) and isinstance(part.get("mimeType"), str):  # pi's
            return [_image(f"data:{part['mimeType']};base64,{part['data']}", "image")]
        return [_left_out("image")]
    if kind in ("file", "input_file"):
        file = part.get("file") if kind == "file" else part
        return [_document(file if isinstance(file, dict) else {}, kind)]
    if kind in ("thinking", "redacted_thinking") and where == "assistant":
        return _thinking(part, pi_signatures)
    if where == "assistant" and (kind == "server_tool_use" or _is_server_result(part)):
        return [dict(part)]
    if kind in _NATIVE_ANYWHERE or (where == "tool_result" and kind in _NATIVE_IN_RESULTS):
        return [dict(part)]
    return [_left_out(part_type(part))]


def _text_blocks(text: str) -> list[Block]:
    """One text block, or none for text the API would refuse (blank)."""
    return [{"type": "text", "text": text}] if text.strip() else []


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, default=str)


def _left_out(what: str) -> Block:
    return {"type": "text", "text": f"[{what} left out: the Messages API cannot take it here]"}


def _data_url(url: Any) -> tuple[str, str] | None:
    """``(media_type, base64 data)`` of a base64 ``data:`` URL, else None."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    header, comma, data = url[5:].partition(",")
    media, *params = header.split(";")
    if not comma or "base64" not in params:
        return None
    media = media.strip().lower()
    return ("image/jpeg" if media == "image/jpg" else media), data


def _image(url: Any, what: str) -> Block:
    inline = _data_url(url)
    if inline is not None and inline[0] in _IMAGE_TYPES:
        return {"type": "image", "source": {"type": "base64", "media_type": inline[0], "data": inline[1]}}
    if isinstance(url, str) and url.lower().startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    return _left_out(f"{what} ({inline[0]})" if inline is not None else what)


def _document(file: dict[str, Any], what: str) -> Block:
    """A Chat ``file`` or Responses ``input_file`` holding a PDF as a data
    URL; an OpenAI file id means nothing to Anthropic."""
    inline = _data_url(file.get("file_data"))
    name = file.get("filename")
    if inline is not None and inline[0] == "application/pdf":
        block: Block = {"type": "document", "source": {"type": "base64", "media_type": inline[0], "data": inline[1]}}
        if isinstance(name, str) and name:
            block["title"] = name
        return block
    return _left_out(f"{what} {name}" if isinstance(name, str) and name else what)


def _plain_text(content: Any) -> str:
    """System text: the API's ``system`` takes text only, so other parts
    are named in it."""
    if isinstance(content, str):
        return content
    blocks = _blocks(content, "user")
    return "\n".join(b["text"] if b.get("type") == "text" else _left_out(part_type(b))["text"] for b in blocks)

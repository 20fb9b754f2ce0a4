"""The human text of a record, by kind (see docs/records.md).

Search indexes it, and the Markdown and HTML exports print it; one
function keeps the two agreeing on what a record "says".
"""

from __future__ import annotations

import re
from typing import Any

import orjson

__all__ = [
    "TERMINAL_CODES",
    "answer_content",
    "readable_content",
    "reasoning_shown",
    "reasoning_text",
    "record_text",
    "strip_terminal_codes",
    "usage_of",
]

#: A terminal's escape sequences as tools print them into their output:
#: CSI (colours, ``ESC [ 1 ; 31 m``, cursor moves), OSC (``ESC ] ... BEL``,
#: titles and links) and the two-character ones. PostgreSQL's migration 0009
#: applies the same pattern, so both indexes see the same words.
TERMINAL_CODES = r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])"
_TERMINAL_CODES = re.compile(TERMINAL_CODES)


#: The final bytes of the CSI sequences that move the cursor or erase
#: (``ESC[1G``, ``ESC[2K``): what a progress bar writes between two lines
#: of its output where a terminal shows them apart.
_MOVES = frozenset("ABCDEFGHJKSTf")


def _shown_as(code: re.Match[str]) -> str:
    sequence = code.group()
    return " " if sequence.startswith("\x1b[") and sequence[-1] in _MOVES else ""


def strip_terminal_codes(text: str) -> str:
    """``text`` as a terminal shows it, without its escape sequences: search
    must find ``FAILED`` in ``ESC[31mFAILED ESC[0m`` (the code glued to the
    word made one token ``31mFAILED``). A code that moves the cursor or
    erases becomes a space: ``step 1ESC[2KESC[1Gstep 2`` is two lines to
    the eye, and taken out whole it glued ``1step`` into one word."""
    return _TERMINAL_CODES.sub(_shown_as, text) if "\x1b" in text else text


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def readable_content(content: Any) -> str:
    """Text of a ``content`` field: a string, or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    pieces.append(text)
                elif part.get("type"):
                    pieces.append(f"[{part['type']}]")
        return "\n".join(pieces)
    return _json(content)


def reasoning_text(record: Any) -> str:
    """A message's reasoning as text: its ``reasoning`` field (as Codex and
    the agent loop store it) and the text of its thinking parts (Anthropic's
    ``thinking``, as imported Claude Code and pi replies hold it), so that
    search finds it and the exports show it, whichever tool wrote it."""
    if not isinstance(record, dict):
        return ""
    pieces: list[str] = []
    reasoning = record.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        pieces.append(reasoning)
    content = record.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "thinking" and isinstance(part.get("thinking"), str):
                if part["thinking"]:
                    pieces.append(part["thinking"])
    return "\n\n".join(pieces)


#: Content parts that hold a model's thinking (Anthropic's; a redacted one
#: holds it encrypted, as ``data``).
_THINKING = frozenset({"thinking", "redacted_thinking"})


def answer_content(content: Any) -> str:
    """What a reply says, for a reader: ``readable_content`` without its
    thinking parts, which the exports show apart (``reasoning_shown``); in
    the text they were a line ``[thinking]`` before the answer."""
    if isinstance(content, list):
        content = [p for p in content if not (isinstance(p, dict) and p.get("type") in _THINKING)]
    return readable_content(content)


def reasoning_shown(record: Any) -> str:
    """A message's reasoning as the exports show it: its text, or, for
    thinking parts that hold none (Claude Code keeps only a signature when
    the thinking is not shown to the user), a note that the model reasoned
    and the text was not recorded."""
    text = reasoning_text(record)
    if text or not isinstance(record, dict) or not isinstance(record.get("content"), list):
        return text
    for part in record["content"]:
        if isinstance(part, dict) and part.get("type") in _THINKING:
            return "(the model reasoned here; its text was not recorded, or only in encrypted form)"
    return ""


def _strings(value: Any, out: list[str]) -> None:
    """Every string leaf of a JSON value, depth first (without recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def record_text(kind: str, record: Any) -> str:
    """What a record says, as plain text: a message's content (and its
    reasoning), a tool call's name and arguments, a tool result's content,
    a summary; for other kinds, every string in the record."""
    if record is None:
        return ""
    if isinstance(record, str):
        return record
    if not isinstance(record, dict):
        return _json(record)
    if kind == "message":
        parts = [readable_content(record.get("content")), reasoning_text(record)]
        return "\n".join(p for p in parts if p)
    if kind == "tool_call":
        args = record.get("arguments")
        return f"{record.get('name', '')} {args if isinstance(args, str) else _json(args)}".strip()
    if kind == "tool_result":
        name = record.get("name")
        text = readable_content(record.get("content"))
        return f"{name}: {text}" if isinstance(name, str) and name else text
    if kind in ("compaction", "branch_summary"):
        summary = record.get("summary")
        return summary if isinstance(summary, str) else _json(record)
    strings: list[str] = []
    _strings(record, strings)
    return "\n".join(strings)


def usage_of(record: Any) -> dict[str, float]:
    """The numeric ``usage`` fields of an assistant message record."""
    if not isinstance(record, dict):
        return {}
    usage = record.get("usage")
    if not isinstance(usage, dict):
        return {}
    return {k: v for k, v in usage.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

"""The visible text of a message's content, however a provider shaped it,
and text made storable."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["content_text", "storable", "storable_bytes", "storable_json"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def _as_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _as_byte(match: re.Match[str]) -> str:
    code = ord(match.group())
    # 0xDC80-0xDCFF: a byte that was not UTF-8, kept by surrogateescape
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def storable(text: str) -> str:
    """``text`` as UTF-8, and so a record, can hold it. Python text can hold
    what no JSON can: a surrogate pair split in two (a stream cut inside an
    emoji, each half decoded alone), joined again here into its character;
    any other lone surrogate is written as its escape, ``\\ud83d``, which in
    JSON text (a tool call's arguments) is the same JSON again. Text
    without surrogates is returned as it is."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_as_escape, _paired(text))


def storable_bytes(text: str) -> str:
    """As ``storable``, for text the operating system gave (a tool's output:
    a file name from ``os.listdir``), where a lone U+DC80-U+DCFF is a byte
    that was not UTF-8: written as Python shows bytes, ``\\xe9``."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_as_byte, _paired(text))


def _paired(text: str) -> str:
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def content_text(content: Any) -> str:
    """A string as is; a list of parts as the text of its text parts
    (strings or ``{"text": ...}``), one per line; anything else as ""."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return ""


def storable_json(value: Any) -> Any:
    """A JSON value with every string in it, keys too, made ``storable``."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list):
        return [storable_json(v) for v in value]
    if isinstance(value, dict):
        return {storable(k) if isinstance(k, str) else k: storable_json(v) for k, v in value.items()}
    return value

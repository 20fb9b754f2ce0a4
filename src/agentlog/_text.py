"""The visible text of a message's content, however a provider shaped it."""

from __future__ import annotations

from typing import Any

__all__ = ["content_text"]


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

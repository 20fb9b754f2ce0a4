"""What can be saved of a source line that orjson refuses.

JavaScript's ``JSON.stringify`` writes a string cut in the middle of an
emoji as a lone surrogate escape (``"\\ud83d"``). RFC 8259 allows that, and
Claude Code and pi are JavaScript, but orjson refuses it (such a string has
no UTF-8 form). ``repair_surrogates`` reads such a line with the standard
library's parser and replaces each lone surrogate by U+FFFD, saying where.

A line that is not JSON at all is kept as raw text; ``top_level_strings``
still reads the string fields at the top level of the part that is valid
JSON, so that the line's own source id (Claude's ``uuid``, pi's ``id``) can
name the event that keeps it, and the lines after it stay attached."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["repair_surrogates", "top_level_strings"]

_LONE = re.compile("[\ud800-\udfff]")
#: Places named in a repair note at most (the count is always given).
_SHOWN = 5


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON: orjson refuses them, and so does this path.
    raise ValueError(f"{name} is not JSON")


def repair_surrogates(text: str) -> tuple[dict[str, Any], str] | None:
    """(the object, what was replaced) when lone surrogate escapes are
    what keeps ``text`` from being read; None when it is not that."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    places: list[str] = []
    try:
        repaired = _replace(value, "", places)
    except RecursionError:
        return None
    if not places:
        return None  # orjson refused it for some other reason
    shown = ", ".join(places[:_SHOWN]) + (", ..." if len(places) > _SHOWN else "")
    return repaired, f"{len(places)} lone surrogate escape(s) replaced by U+FFFD: {shown}"


def _replace(value: Any, where: str, places: list[str]) -> Any:
    if isinstance(value, str):
        if not _LONE.search(value):
            return value
        places.extend(f"\\u{ord(c):04x} in {where or 'the line'}" for c in _LONE.findall(value))
        return _LONE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace(v, f"{where}[{i}]", places) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = _replace(k, f"{where}.<key>" if where else "<key>", places)
            out[key] = _replace(v, f"{where}.{key}" if where else key, places)
        return out
    return value


# Possessive runs: an unterminated string fails in one pass, without backtracking.
_TOKEN = re.compile(r'\s*+(?:("(?:[^"\\]++|\\.)*+")|([{}\[\]:,])|(-?[0-9][0-9eE.+-]*+|true|false|null))', re.S)


def top_level_strings(text: str) -> dict[str, str]:
    """The string fields at the top level of the JSON object ``text``
    begins with, read up to its first fault (a prefix that is valid JSON
    so far, so a field is never taken from inside a string). A key met
    twice is left out: which one would be the line's?"""
    found: dict[str, str] = {}
    twice: set[str] = set()
    stack: list[list[Any]] = []  # [bracket, the current key of that object]
    expect = "open"
    pos = 0
    while True:
        m = _TOKEN.match(text, pos)
        if m is None:
            break
        pos = m.end()
        string, punct, scalar = m.groups()
        if expect == "open":
            if punct != "{":
                break
            stack.append(["{", None])
            expect = "key_or_end"
        elif expect in ("key", "key_or_end") and string is not None:
            try:
                stack[-1][1] = json.loads(string)
            except ValueError:
                break
            expect = "colon"
        elif expect == "colon" and punct == ":":
            expect = "value"
        elif expect in ("value", "value_or_end") and punct in ("{", "["):
            stack.append([punct, None])
            expect = "key_or_end" if punct == "{" else "value_or_end"
        elif expect in ("value", "value_or_end") and (string is not None or scalar is not None):
            if string is not None and len(stack) == 1:
                key = stack[0][1]
                try:
                    value = json.loads(string)
                except ValueError:
                    break
                if key in found:
                    twice.add(key)
                found[key] = value
            expect = "comma_or_end"
        elif expect == "comma_or_end" and punct == ",":
            expect = "key" if stack[-1][0] == "{" else "value"
        elif (expect in ("comma_or_end", "key_or_end") and punct == "}" and stack[-1][0] == "{") or (
            expect in ("comma_or_end", "value_or_end") and punct == "]" and stack[-1][0] == "["
        ):
            stack.pop()
            if not stack:
                break
            expect = "comma_or_end"
        else:
            break
    return {k: v for k, v in found.items() if k not in twice and isinstance(k, str) and isinstance(v, str)}

"""Reading a source file: complete lines, and what an earlier import consumed.

A file's state is ``{"size", "sha256", "lines", "skip"}``: the bytes an
import consumed, a hash of them, the number of the last line consumed, and
how many leading bytes the hash leaves out (a slot the source tool rewrites
in place, such as oh-my-pi's title line). The next import checks the hash
and reads on from there; a changed prefix is a ``SourceChanged``."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from .model import SourceChanged, SourceLine

__all__ = ["FileData", "parse_lines", "prefix_state", "check_state"]


@dataclass(slots=True)
class FileData:
    path: str
    lines: list[SourceLine]
    consumed: int  # bytes up to the end of the last complete line
    pending: int  # bytes of an unfinished last line
    skip: int  # leading bytes left out of the prefix hash


def _parse(body: bytes) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as bad:
            return None, f"invalid UTF-8: {bad}"
        return None, f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"not a JSON object but {type(value).__name__}"
    return value, None


def parse_lines(path: str, data: bytes, skip: int = 0) -> FileData:
    """Split ``data`` into lines; a last line without a newline counts only
    if it is a whole JSON object (a writer may be halfway through it).
    Blank lines are skipped (their numbers are kept by the others)."""
    lines: list[SourceLine] = []
    pos = 0
    lineno = 0
    consumed = 0
    size = len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        end = size if nl < 0 else nl + 1
        body = data[pos:end].rstrip(b"\r\n")
        lineno += 1
        if not body.strip():
            if nl < 0:
                break  # trailing blanks: whatever comes next decides
            pos = consumed = end
            continue
        obj, err = _parse(body)
        if nl < 0 and obj is None:
            break  # unfinished: the next import (or poll) reads it whole
        # The text is kept only for a line that will be stored as raw text.
        text = "" if obj is not None else body.decode("utf-8", "replace")
        lines.append(SourceLine(path, lineno, pos, end, text, obj, err))
        pos = consumed = end
    return FileData(path, lines, consumed, size - consumed, skip)


def prefix_state(data: bytes, fd: FileData) -> dict[str, Any]:
    last = fd.lines[-1].lineno if fd.lines else 0
    digest = hashlib.sha256(data[fd.skip : fd.consumed]).hexdigest()
    return {"size": fd.consumed, "sha256": digest, "lines": last, "skip": fd.skip}


def check_state(data: bytes, state: dict[str, Any], path: str, session_id: str) -> int:
    """The number of the last line ``state`` consumed, after checking that
    those bytes are unchanged (else SourceChanged)."""
    size = int(state.get("size", 0))
    skip = int(state.get("skip", 0))
    if size > len(data) or hashlib.sha256(data[skip:size]).hexdigest() != state.get("sha256"):
        raise SourceChanged(path, session_id, size)
    return int(state.get("lines", 0))

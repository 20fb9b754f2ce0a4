"""Reading a source file: complete lines, and what an earlier import consumed.

A file's state is ``{"size", "sha256", "lines", "skip"}``: the bytes an
import consumed, a hash of them, the number of the last line consumed, and
how many leading bytes the hash leaves out (a slot the source tool rewrites
in place, such as oh-my-pi's title line). The next import checks the hash
and reads on from there; a changed prefix is a ``SourceChanged``.

``--follow`` keeps each file's parsed lines and running hash between polls
(a ``Tails`` cache) and reads only what was appended, after checking that
the file did not shrink and that the bytes just before the old end are the
same; a full import checks the whole prefix."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import CorruptionError
from .model import SourceChanged, SourceLine, file_name
from .salvage import repair_surrogates

__all__ = ["FileData", "Tails", "check_state", "consumed_lines", "parse_lines", "prefix_state", "read_file"]

#: Bytes before a followed file's old end compared at each poll.
TAIL_CHECK = 4096
#: A UTF-8 byte order mark, which a file's first line may begin with.
BOM = b"\xef\xbb\xbf"
BOM_NOTE = "a UTF-8 byte order mark before the line was left out"


@dataclass(slots=True)
class FileData:
    path: str
    lines: list[SourceLine]
    consumed: int  # bytes up to the end of the last complete line
    pending: int  # bytes of an unfinished last line
    skip: int  # leading bytes left out of the prefix hash
    last_line: int = 0  # number of the last line consumed (blank lines count)
    digest: Any = None  # running sha256 of data[skip:consumed]
    data: bytes | None = None  # the whole file, when it was read whole
    size: int = 0  # the file's size when read
    tail: bytes = b""  # the last TAIL_CHECK bytes consumed (--follow checks them)


#: path -> what --follow read of it last time.
Tails = dict[str, FileData]


#: Levels of nesting a line may have: orjson reads 1024 but writes only 254,
#: and an event's record holds parts of a line a few levels deeper than the
#: line does (``source.merged[i].message``...), so the rest is left for that.
MAX_DEPTH = 200
#: Digits enough for an integer beyond 64 bits (2**64 has 20).
_LONG_DIGITS = re.compile(rb"\d{20}")
_HEADROOM = 254 - MAX_DEPTH


def _parse(body: bytes) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """(object, why it is malformed, what was repaired in it)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as bad:
            return None, f"invalid UTF-8: {bad}", None
        repaired = repair_surrogates(text)
        if repaired is not None and _storable(repaired[0]):
            return repaired[0], None, repaired[1]
        return None, f"invalid JSON: {exc}", None
    if not isinstance(value, dict):
        return None, f"not a JSON object but {type(value).__name__}", None
    # orjson reads an integer beyond 64 bits as a float, without an error: the
    # stdlib parser reads it exactly, and such a line is kept as its text
    # (``agentlog append`` and the server refuse one, for the same reason).
    if _LONG_DIGITS.search(body) and body.count(b"{") + body.count(b"[") <= MAX_DEPTH:
        if not _storable(json.loads(body)):
            return None, "an integer beyond 64 bits (agentlog would store it rounded)", None
    # Counting brackets (strings' included) is cheap, and no deeper than their number.
    if body.count(b"{") + body.count(b"[") > MAX_DEPTH and not _storable(value):
        return None, f"nested more than {MAX_DEPTH} levels deep (agentlog cannot store it)", None
    return value, None, None


def _storable(value: Any) -> bool:
    """Whether orjson can write ``value`` with MAX_DEPTH levels to spare
    (so the records made of it can be written too)."""
    for _ in range(_HEADROOM):
        value = [value]
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False  # too deep, or an integer beyond 64 bits (the stdlib parser reads those)
    return True


def parse_lines(path: str, data: bytes, skip: int = 0, base: int = 0, base_line: int = 0) -> FileData:
    """Split ``data`` (the file's bytes from offset ``base``, after line
    ``base_line``) into lines; a last line without a newline counts only if
    it is a whole JSON object (a writer may be halfway through it). Blank
    lines are skipped (their numbers are kept by the others)."""
    lines: list[SourceLine] = []
    pos = 0
    lineno = last = base_line
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
            last = lineno
            continue
        bom = pos == 0 and base == 0 and body.startswith(BOM)
        if bom:
            # A UTF-8 byte order mark (an editor on Windows writes one) is no
            # part of the JSON: read without it, and say so (JSON.parse and
            # orjson both refuse it, and a header line would name no session).
            body = body[len(BOM) :]
        obj, err, repaired = _parse(body)
        if bom and obj is not None:
            repaired = f"{BOM_NOTE}; {repaired}" if repaired else BOM_NOTE
        if nl < 0 and obj is None:
            break  # unfinished: the next import (or poll) reads it whole
        # The text is kept only for a line that will be stored as raw text.
        text = "" if obj is not None else body.decode("utf-8", "replace")
        lines.append(SourceLine(path, lineno, base + pos, base + end, text, obj, err, repaired=repaired))
        pos = consumed = end
        last = lineno
    return FileData(path, lines, base + consumed, size - consumed, skip, last)


def read_file(path: str, skip_prefix: Callable[[bytes], int], tails: Tails | None = None) -> FileData:
    """The file's lines; with ``tails`` (``--follow``), only the appended
    part is read and parsed, the earlier lines coming back marked not new."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        old = tails.get(path) if tails is not None else None
        if old is not None and size >= old.consumed:
            start = max(old.skip, old.consumed - TAIL_CHECK)
            f.seek(start)
            seen = f.read(old.consumed - start)
            head = b""
            if old.skip:
                f.seek(0)
                head = f.read(old.skip)
            if old.digest is not None and seen == old.tail and skip_prefix(head) == old.skip:
                f.seek(old.consumed)
                fresh = f.read()
                # A last line taken whole before its newline was written: the
                # newline now at the start ends that line, and is no blank line
                # (counted as one, it made every later line's number one more).
                previous = seen or head
                ending = 0
                if previous and not previous.endswith(b"\n"):
                    ending = 2 if fresh.startswith(b"\r\n") else 1 if fresh.startswith(b"\n") else 0
                fd = parse_lines(path, fresh[ending:], old.skip, old.consumed + ending, old.last_line)
                added = fresh[: fd.consumed - old.consumed]
                fd.digest = old.digest.copy()
                fd.digest.update(added)
                fd.tail = (seen + added)[-TAIL_CHECK:]
                fd.size = size
                for line in old.lines:
                    line.new = False
                if old.skip and old.lines and old.lines[0].start == 0:
                    old.lines[0].obj = _parse(head.rstrip(b"\r\n"))[0]  # the slot, rewritten in place
                fd.lines = old.lines + fd.lines
                if tails is not None:
                    tails[path] = fd
                return fd
        f.seek(0)
        data = f.read()
    fd = parse_lines(path, data, skip_prefix(data))
    fd.digest = hashlib.sha256(data[fd.skip : fd.consumed])
    fd.size = len(data)
    fd.tail = data[max(fd.skip, fd.consumed - TAIL_CHECK) : fd.consumed]
    fd.data = data
    if tails is not None:
        # what the next poll reads on from (without the bytes: they are not needed)
        tails[path] = FileData(
            fd.path,
            fd.lines,
            fd.consumed,
            fd.pending,
            fd.skip,
            fd.last_line,
            fd.digest,
            None,
            fd.size,
            fd.tail,
        )
    return fd


def prefix_state(fd: FileData) -> dict[str, Any]:
    return {"size": fd.consumed, "sha256": fd.digest.hexdigest(), "lines": fd.last_line, "skip": fd.skip}


def check_state(data: bytes, state: Any, path: str, session_id: str) -> int:
    """The number of the last line ``state`` consumed, after checking that
    those bytes are unchanged (else SourceChanged). A state of the wrong
    shape (hand-edited, or damaged) is a CorruptionError naming the session."""
    size, skip, lines, digest = _state_fields(state, file_name(path), session_id)
    if size > len(data) or hashlib.sha256(data[skip:size]).hexdigest() != digest:
        raise SourceChanged(path, session_id, size)
    return lines


def consumed_lines(state: Any, path: str, session_id: str) -> int:
    """The number of the last line ``state`` consumed (its shape checked)."""
    return _state_fields(state, file_name(path), session_id)[2]


def _state_fields(state: Any, name: str, session_id: str) -> tuple[int, int, int, str]:
    def damaged(why: str) -> CorruptionError:
        where = f"session {session_id} metadata (import.files[{name!r}])"
        return CorruptionError(where, None, f"{why}; delete the session to import the file again")

    if not isinstance(state, dict):
        raise damaged(f"the file's import state is a {type(state).__name__}, not an object")
    numbers = []
    for field in ("size", "skip", "lines"):
        value = state.get(field, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise damaged(f"{field} is {value!r:.40}, not a count")
        numbers.append(value)
    digest = state.get("sha256")
    if not isinstance(digest, str):
        raise damaged(f"sha256 is {digest!r:.40}, not a hex digest")
    if numbers[1] > numbers[0]:
        raise damaged(f"skip ({numbers[1]}) is beyond size ({numbers[0]})")
    return numbers[0], numbers[1], numbers[2], digest

"""The contract each source format implements, and helpers they share."""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar

from ..records import UsageRecord
from ..tokens import Usage
from .builder import SessionBuilder
from .model import SourceLine
from .reader import FileData

__all__ = [
    "Importer",
    "call_places",
    "count",
    "custom_record",
    "interleaved",
    "parse_source_time",
    "safe_session_id",
    "split_fields",
    "name_from_prompt",
    "usage_record",
    "with_source_hash",
]

#: Characters of a prompt kept as an unnamed session's name.
NAME_CHARS = 80

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_FRACTION = re.compile(r"\.(\d+)")
#: 9999-12-31T23:59:59.999Z in epoch milliseconds: the last time an event can hold.
_LAST_MS = 253_402_300_799_999


def safe_session_id(prefix: str, source_id: str) -> str:
    """``<prefix>-<source id>`` with characters a session id cannot hold
    replaced by ``_`` (valid ids: ``[A-Za-z0-9_-]{1,128}``)."""
    return _UNSAFE.sub("_", f"{prefix}-{source_id}")[:128]


def with_source_hash(session_id: str, source_id: str) -> str:
    """``session_id`` (cut to fit) with ``-`` and 8 hex digits of the
    SHA-256 of ``source_id``: a source of its own, whatever it sanitized to."""
    digest = hashlib.sha256(source_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{session_id[: 128 - 9]}-{digest}"


def parse_source_time(value: Any) -> int | None:
    """Nanoseconds since the epoch from an RFC 3339 string or epoch
    milliseconds; None for anything else (the line then takes the time of
    the line before it)."""
    if isinstance(value, str):
        return _parse_text_time(value) if value else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value * 1_000_000) if 0 < value <= _LAST_MS else None


@functools.lru_cache(maxsize=4096)  # the lines of one reply share one time
def _parse_text_time(value: str) -> int | None:
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    frac = _FRACTION.search(text)
    digits = frac.group(1) if frac else ""
    if frac:
        text = text[: frac.start()] + text[frac.end() :]
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000_000 + int(digits.ljust(9, "0")[:9] or 0)


def custom_record(obj: dict[str, Any]) -> dict[str, Any]:
    """A line kept whole because it has no natural agentlog mapping."""
    return {"type": obj.get("type"), "original": obj}


def count(value: Any) -> int | None:
    """A token count from a source: a non-negative int (a bool is not one)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def usage_record(prompt: int, completion: int, total: int | None, cost: Any = None) -> UsageRecord:
    """A source's usage in the shape docs/records.md defines, which every
    total (``agentlog stats``, the server's, the viewer's) reads: ``prompt``
    counts every prompt token, cached ones included."""
    cost_usd = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    return Usage(prompt, completion, total if total is not None else prompt + completion, cost_usd).to_dict()


def text_parts(content: Any, kinds: tuple[str, ...] | None = ("text",), sep: str = "\n") -> str:
    """The text of a message's content: a string, or the text of its parts
    of the types ``kinds`` (None: of any type) joined by ``sep``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(
            p["text"]
            for p in content
            if isinstance(p, dict) and (kinds is None or p.get("type") in kinds) and isinstance(p.get("text"), str)
        )
    return ""


def call_places(blocks: list[Any], is_call: Callable[[Any], bool], before: int = 0) -> list[int]:
    """For each call block of a reply, in order, how many of the reply's
    other parts (text, thinking, images) came before it, counting ``before``
    parts of the reply already read. A message holds the parts and its calls
    follow it as events of their own, so this is what says where a call sat
    among the text (a ``tool_use`` between two text blocks)."""
    places: list[int] = []
    parts = before
    for block in blocks:
        if is_call(block):
            places.append(parts)
        else:
            parts += 1
    return places


def interleaved(places: list[int], parts: int) -> bool:
    """Whether a part followed a call: else every call sits after all of
    the reply's ``parts``, as the events already say, and nothing is noted."""
    return any(place < parts for place in places)


def name_from_prompt(text: str) -> str | None:
    """A session name from its first prompt, as the tools' own session
    pickers show one: its first non-blank line, spaces collapsed, cut to
    ``NAME_CHARS`` characters (None for a prompt with no text)."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = " ".join(line.split())
    if len(line) > NAME_CHARS:
        line = line[: NAME_CHARS - 1].rstrip() + "\u2026"
    return line or None


def split_fields(obj: dict[str, Any], mapped: tuple[str, ...]) -> dict[str, Any]:
    """The fields of ``obj`` an importer did not map (kept in ``source.fields``)."""
    return {k: v for k, v in obj.items() if k not in mapped}


class Importer(ABC):
    """One source format: where its files are, how lines group into
    sessions, and how one line becomes agentlog events."""

    name: ClassVar[str]
    prefix: ClassVar[str]
    pattern: ClassVar[str] = "**/*.jsonl"

    @abstractmethod
    def default_roots(self) -> list[str]:
        """The tool's own session directories (honouring its env vars)."""

    def discover(self, root: str) -> list[str]:
        found = glob.glob(os.path.join(glob.escape(root), self.pattern), recursive=True)
        return sorted(p for p in found if os.path.isfile(p))

    def skip_prefix(self, data: bytes) -> int:
        """Leading bytes the source tool rewrites in place (left out of the hash)."""
        return 0

    @abstractmethod
    def assign(self, fd: FileData) -> list[str] | None:
        """The source session id of each line of ``fd`` (None: the file names no session)."""

    def slim(self, obj: dict[str, Any]) -> dict[str, Any]:
        """What ``assign`` and ``begin`` need of a line already imported:
        ``--follow`` keeps only this of each earlier line between polls."""
        return {"type": obj.get("type")}

    def readable_id(self, source_id: str) -> str:
        """The source id as the session id shows it (before sanitizing)."""
        return source_id

    def plain_session_id(self, source_id: str) -> str:
        """``<prefix>-<source id>``, sanitized: the id every source had
        before ids got a hash (two sources can share it)."""
        return safe_session_id(self.prefix, self.readable_id(source_id))

    def session_id(self, source_id: str) -> str:
        """The session a source session goes to: the plain id when
        sanitizing left the source id as it was, else the plain id with a
        hash of the source id, so that ``proj.1`` and ``proj_1`` (both
        ``proj_1`` once sanitized) stay two sessions."""
        plain = self.plain_session_id(source_id)
        if plain == f"{self.prefix}-{self.readable_id(source_id)}":
            return plain
        return with_source_hash(plain, source_id)

    def restates(self, obj: dict[str, Any]) -> bool:
        """True for a line the tool writes again, unchanged, as a matter of
        course (Claude Code repeats its title and permission mode): its exact
        repeat is kept like any line, and not reported as a possible
        duplicate write."""
        return False

    def prompt_text(self, obj: dict[str, Any]) -> str | None:
        """The text the user typed, if ``obj`` is a user's prompt (not a
        tool result, a command's output or a note the tool injected): the
        first one names a session the source names in no other way."""
        return None

    def line_key(self, source_id: str, obj: dict[str, Any]) -> str | None:
        """A key deduplicating this line across files (None: no such key)."""
        return None

    def event_key(self, b: SessionBuilder, line: SourceLine, obj: dict[str, Any]) -> str | None:
        """The source key the events of this line are found by (the line's
        ``line_key``, unless the format keys its lines otherwise)."""
        return self.line_key(b.source_id, obj)

    def line_time(self, obj: dict[str, Any]) -> int | None:
        return parse_source_time(obj.get("timestamp"))

    def begin(self, b: SessionBuilder, lines: list[SourceLine]) -> None:
        """Before converting a session's new lines; ``lines`` are all its
        lines in this run, old ones with ``new`` False (creation metadata,
        state a later line needs). Formats without such state keep this."""
        return None

    def finish(self, b: SessionBuilder) -> None:
        """After a session's new lines are converted: write what the format
        held back for a later line of the same run (a Claude Code summary
        written before the line it names). Most formats hold nothing back."""
        return None

    def rewritten(self, b: SessionBuilder, lines: list[SourceLine], consumed: int) -> bool:
        """Whether a file whose consumed part changed is the source tool's
        own rewrite of it, line for line (pi migrating an old session), so
        that its first ``consumed`` lines are the ones an import already
        holds. Other tools only append, so by default a change is a change."""
        return False

    def safe_to_flush(self, b: SessionBuilder) -> bool:
        """Whether the pending events may be written now, in the middle of a
        long session: not while a later line could still be merged into
        one of them (a reply split over lines, a compaction awaiting its
        summary). After a user message or a tool result nothing is merged."""
        last = b.pending[-1] if b.pending else None
        return last is None or last.kind == "tool_result" or (last.kind == "message" and last.role == "user")

    @abstractmethod
    def convert(self, b: SessionBuilder, line: SourceLine) -> None:
        """Turn one parsed line (``line.obj``) into events on ``b``."""

"""Noticing a line that repeats an earlier one exactly and has no id.

A line with a source id (a Claude uuid, a pi v2+ id) that a session
already holds is a duplicate, and is skipped (the engine counts it). A
line without one (Claude's ``file-history-snapshot``, every pi v1 entry,
every Codex line) cannot be told apart from a second,
identical occurrence: pi v1 chains its entries by their place in the file
and counts them in ``firstKeptEntryIndex``, so dropping one would move
the history. Such a line is kept as an event of its own, like any other,
and the report's ``warnings`` name it and the line it repeats. Lines the
source restates as a matter of course (``Importer.restates``: Claude Code's
other lines without a uuid, its state) are kept alike without a warning.

A line whose id an earlier line of the same file holds with other content
is not a duplicate but a conflict: two entries claim one id. The first
keeps the id (the lines after it name it as their parent); the later one
is kept beside the timeline, whole, and named in the warnings, so neither
is lost. Ids repeated across files are left to the engine: a resumed
Claude Code session copies its history into its new file with that
file's own session id, so those copies differ and are still duplicates."""

from __future__ import annotations

from typing import Any

from .model import SourceLine, file_name

__all__ = ["Repeats"]


class Repeats:
    """The id-less lines of one session in one run, by their length in bytes
    (equal lines have equal lengths, so a line is compared with few others)."""

    def __init__(self) -> None:
        self._by_size: dict[int, list[SourceLine]] = {}
        self._by_key: dict[str, SourceLine] = {}

    def keyed(self, key: str, line: SourceLine) -> None:
        """Remember ``line`` as the first of this run to hold ``key``."""
        self._by_key.setdefault(key, line)

    def conflict(self, key: str, line: SourceLine) -> str | None:
        """A warning when ``line`` holds ``key``, which an earlier line of
        its file holds with other content; None for a true duplicate (or
        one whose first line an earlier run read)."""
        first = self._by_key.get(key)
        if first is None or first.path != line.path or first.obj == line.obj:
            return None
        return (
            f"has the id {key!r} of line {first.lineno} with other content; line {first.lineno} "
            "keeps the id, and this line is kept beside the timeline as a custom event"
        )

    def add(self, line: SourceLine) -> None:
        if line.obj is not None:
            self._by_size.setdefault(line.end - line.start, []).append(line)

    def check(self, line: SourceLine) -> str | None:
        """A warning when ``line`` repeats an earlier line exactly; then, or
        else, ``line`` is remembered for the lines after it."""
        obj: Any = line.obj
        same = self._by_size.get(line.end - line.start, ())
        first = next((other for other in same if other.obj == obj), None)
        self.add(line)
        if first is None:
            return None
        where = f"line {first.lineno}" if first.path == line.path else f"{file_name(first.path)}:{first.lineno}"
        return f"repeats {where} exactly and has no id to tell the two apart; kept as an event of its own"

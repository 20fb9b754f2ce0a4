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
other lines without a uuid, its state) are kept alike without a warning."""

from __future__ import annotations

import os
from typing import Any

from .model import SourceLine

__all__ = ["Repeats"]


class Repeats:
    """The id-less lines of one session in one run, by their length in bytes
    (equal lines have equal lengths, so a line is compared with few others)."""

    def __init__(self) -> None:
        self._by_size: dict[int, list[SourceLine]] = {}

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
        where = f"line {first.lineno}" if first.path == line.path else f"{os.path.basename(first.path)}:{first.lineno}"
        return f"repeats {where} exactly and has no id to tell the two apart; kept as an event of its own"

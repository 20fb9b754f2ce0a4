"""What an import reads and what it reports: source lines, errors, the report.

One module for the data every importer shares, so the formats, the engine
and the CLI agree on one shape."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .._text import storable_bytes
from ..errors import ImportSourceError, NoSourceFiles, SourceChanged, SourceNotFound, UnknownFormat

__all__ = [
    "FileReport",
    "ImportReport",
    "ImportSourceError",
    "NoSourceFiles",
    "SessionReport",
    "SourceChanged",
    "SourceLine",
    "SourceNotFound",
    "UnknownFormat",
    "file_name",
]


def file_name(path: str) -> str:
    """The name a source file is known by in what an import stores (each
    event's ``source.file``, the files' states): its base name, with bytes
    that are not UTF-8 (a name Python keeps as surrogate escapes, which no
    JSON holds) written as ``\\xe9``, as messages show them."""
    return storable_bytes(os.path.basename(path))


@dataclass(slots=True)
class SourceLine:
    """One line of a source file: its number (1-based), byte span and value.

    ``obj`` is the parsed JSON object, or None when the line is malformed
    (then ``error`` says why and ``text`` holds it; it is empty otherwise).
    ``new`` is False for lines an earlier import of the same session
    already consumed. ``repaired`` says what was replaced to read the line
    (lone surrogate escapes), None for a line read as it is."""

    path: str
    lineno: int
    start: int
    end: int
    text: str
    obj: dict[str, Any] | None
    error: str | None = None
    new: bool = True
    repaired: str | None = None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.lineno}"


@dataclass(slots=True)
class FileReport:
    path: str
    lines: int = 0  # complete lines in the file
    new_lines: int = 0  # lines this import consumed
    pending_bytes: int = 0  # an unfinished last line, left for the next import
    malformed: list[tuple[int, str]] = field(default_factory=list)
    # Lines imported, but not quite as written: repaired, or linked to a
    # source id that a malformed line may have held (line, what happened).
    warnings: list[tuple[int, str]] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "lines": self.lines,
            "new_lines": self.new_lines,
            "pending_bytes": self.pending_bytes,
            "malformed": [{"line": n, "error": e} for n, e in self.malformed],
            "warnings": [{"line": n, "warning": w} for n, w in self.warnings],
            "error": self.error,
        }


@dataclass(slots=True)
class SessionReport:
    session_id: str
    source_id: str
    created: bool
    events: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    merged: int = 0  # source lines folded into an event made from an earlier line
    duplicates: int = 0  # source lines whose id the session already holds
    copied: int = 0  # events copied from another session (a resume or fork)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session_id,
            "source_id": self.source_id,
            "created": self.created,
            "events": self.events,
            "kinds": dict(sorted(self.kinds.items())),
            "merged": self.merged,
            "duplicates": self.duplicates,
            "copied": self.copied,
        }


@dataclass(slots=True)
class ImportReport:
    """What one import run did: per file, per session, and totals by kind."""

    format: str
    files: list[FileReport] = field(default_factory=list)
    sessions: list[SessionReport] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def kinds(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for s in self.sessions:
            total.update(s.kinds)
        return total

    @property
    def events(self) -> int:
        return sum(s.events for s in self.sessions)

    @property
    def malformed(self) -> list[tuple[str, int, str]]:
        return [(f.path, n, e) for f in self.files for n, e in f.malformed]

    @property
    def warnings(self) -> list[tuple[str, int, str]]:
        return [(f.path, n, w) for f in self.files for n, w in f.warnings]

    def merge(self, other: ImportReport) -> None:
        self.files.extend(other.files)
        self.sessions.extend(other.sessions)
        self.errors.extend(other.errors)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "events": self.events,
            "kinds": dict(sorted(self.kinds.items())),
            "sessions": [s.to_dict() for s in self.sessions],
            "files": [f.to_dict() for f in self.files],
            "malformed": [{"path": p, "line": n, "error": e} for p, n, e in self.malformed],
            "warnings": [{"path": p, "line": n, "warning": w} for p, n, w in self.warnings],
            "errors": list(self.errors),
        }

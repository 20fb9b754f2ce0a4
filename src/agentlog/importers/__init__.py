"""Importers: bring sessions of other coding agents into agentlog.

``FORMATS`` names each format's importer; ``run_import`` imports files or
directories once, ``follow`` keeps importing as they grow. See
docs/integrations.md ("Importing sessions from other tools")."""

from __future__ import annotations

from .base import Importer
from .claude import ClaudeImporter
from .codex import CodexImporter
from .engine import run_import
from .following import Follower, follow
from .model import (
    FileReport,
    ImportReport,
    ImportSourceError,
    NoSourceFiles,
    SessionReport,
    SourceChanged,
    SourceNotFound,
    UnknownFormat,
)
from .paths import expand_paths
from .pi import PiImporter

__all__ = [
    "FORMATS",
    "FileReport",
    "Follower",
    "ImportReport",
    "ImportSourceError",
    "Importer",
    "NoSourceFiles",
    "SessionReport",
    "SourceChanged",
    "SourceNotFound",
    "UnknownFormat",
    "expand_paths",
    "follow",
    "get_importer",
    "run_import",
]

#: Format name -> its importer (the CLI's --from choices come from here).
FORMATS: dict[str, Importer] = {
    "claude": ClaudeImporter(),
    "codex": CodexImporter(),
    "pi": PiImporter(),
}


def get_importer(name: str) -> Importer:
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownFormat(f"unknown import format {name!r}: use one of {', '.join(sorted(FORMATS))}") from None

"""Helpers for the importer tests: the store fixture, fixture files, and
reading back what an import wrote."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentlog import Event, Session, Store
from agentlog.importers import FORMATS, ImportReport, run_import

#: Copies of the project's shared fixtures (origins and licences in README.txt there).
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "import"

CLAUDE_FILES = sorted(p.name for p in FIXTURES.glob("claude-code_*.jsonl"))
CODEX_FILES = sorted(p.name for p in FIXTURES.glob("codex_*.jsonl"))
PI_FILES = sorted(p.name for p in FIXTURES.glob("pi_*.jsonl"))
ALL_FILES = [("claude", f) for f in CLAUDE_FILES] + [("codex", f) for f in CODEX_FILES] + [("pi", f) for f in PI_FILES]


def copy_fixture(name: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / name
    shutil.copyfile(FIXTURES / name, target)
    return target


def source_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_lines(path: Path, objs: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs))
    return path


def do_import(store: Store, fmt: str, *paths: Path) -> ImportReport:
    return run_import(store, FORMATS[fmt], [str(p) for p in paths])


@dataclass
class Loaded:
    """Every event of a session with its record loaded, in append order."""

    session_id: str
    head: str
    events: list[Event]
    meta: dict[str, Any]

    @property
    def by_id(self) -> dict[str, Event]:
        return {e.id: e for e in self.events}

    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.events:
            out[e.kind] = out.get(e.kind, 0) + 1
        return out

    def by_key(self) -> dict[str, Event]:
        out = {}
        for e in self.events:
            for k in e.record.get("source", {}).get("keys") or ():
                out[k] = e
        return out

    def lines(self) -> set[int]:
        """Source line numbers some event holds (merged lines included)."""
        out = set()
        for e in self.events:
            src = e.record.get("source", {})
            if "copied_from" in src:
                continue
            out.add(src["line"])
            out.update(m["line"] for m in src.get("merged", ()))
            if "summary_line" in src:
                out.add(src["summary_line"]["line"])
        return out

    def path(self, event_id: str | None = None) -> list[Event]:
        by_id = self.by_id
        current = event_id or self.head
        out = []
        while current != "00000000-0000-0000-0000-000000000000":
            out.append(by_id[current])
            current = by_id[current].parent_id
        return out[::-1]

    def children(self, event_id: str) -> list[Event]:
        return [e for e in self.events if e.parent_id == event_id]


def load(store: Store, session_id: str) -> Loaded:
    with store.open(session_id, readonly=True) as s:
        return Loaded(session_id, s.head, _events(s), dict(s.meta))


def _events(s: Session) -> list[Event]:
    out = []
    for entry in s.entries():
        event = s.event(entry.id)
        out.append(event if event.loaded else s.resolve(event))
    return out


def snapshot(store: Store) -> dict[str, Any]:
    """Everything an import could change, for 'nothing changed' checks."""
    out = {}
    for info in store.list(archived=True):
        with store.open(info.id, readonly=True) as s:
            out[info.id] = (s.head, [e.to_dict() for e in _events(s)], dict(s.meta))
    return out

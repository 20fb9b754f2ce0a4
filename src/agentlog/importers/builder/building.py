"""Building events from source lines: where each attaches (after the side
events threaded at its parent), its id and time, the maps it enters, and
paths copied from other sessions.

Side events (a kept line that is not part of the conversation: a hook's
progress, a file-history snapshot, a malformed line) are threaded into the
chain: the next line whose source parent is the side event's parent is
attached after it instead, so keeping them adds no spurious branches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...event import NIL_ID, ROLE_PATTERN
from ..model import SourceLine, file_name
from .lines import BuilderLines
from .pending import Pending, source_line_of, stamp_ns

if TYPE_CHECKING:
    from ...session import Session

__all__ = ["BuilderBuilding"]


class BuilderBuilding(BuilderLines):
    """Events made from lines, or copied, added to the pending ones."""

    def resolve(self, event_id: str) -> str:
        """Where a child of ``event_id`` goes: after the side events threaded there."""
        start = event_id
        while event_id in self.alias:
            event_id = self.alias[event_id]
        if event_id != start:
            self.put(self.alias, start, event_id)  # path compression: the next lookup is one step
        return event_id

    def time_of(self, line: SourceLine, ts_ns: int | None) -> int:
        """The line's time, else the last time seen (lines without one sit
        where they are in the file)."""
        if ts_ns is not None:
            self.last_ts = max(self.last_ts, ts_ns) if self.last_ts else ts_ns
            return ts_ns
        return self.last_ts

    def emit(
        self,
        kind: str,
        role: str | None,
        record: dict[str, Any],
        line: SourceLine,
        *,
        ts_ns: int | None = None,
        parent: str | None = None,
        literal_parent: bool = False,
        keys: tuple[str, ...] | list[str] = (),
        side: bool = False,
    ) -> Pending:
        """Add one event made from ``line``. ``parent`` None means the chain's
        cursor; a given parent is resolved through side events unless
        ``literal_parent``."""
        if role is not None and not ROLE_PATTERN.match(role):
            # A role the store cannot name (a source's empty or spaced role):
            # refused, it would fail the whole session's import. The line is
            # kept as a custom event instead, its record (and the role in
            # it) as built.
            kind, role = "custom", None
        if parent is None:
            parent = self.cursor
        if not literal_parent:
            parent = self.resolve(parent)
        ts = self.time_of(line, ts_ns)
        name = file_name(line.path)
        n = self._per_line.get((name, line.lineno), 0)
        self.put(self._per_line, (name, line.lineno), n + 1)
        event_id = self.ids.next(ts, f"{self.session_id}\0{name}\0{line.lineno}\0{n}")
        source = record.setdefault("source", {})
        source.setdefault("format", self.format)
        source.setdefault("file", file_name(line.path))
        source.setdefault("line", line.lineno)
        if keys:
            source["keys"] = list(keys)
        if side:
            source["side"] = True
        if line.repaired:
            source.setdefault("repaired", line.repaired)
        return self._add(Pending(event_id, parent, kind, role, ts, record), keys, side)

    def _add(self, p: Pending, keys: tuple[str, ...] | list[str], side: bool) -> Pending:
        if p.parent_id in self.parents_with_children:
            p.branch_from = p.parent_id
        elif p.parent_id == NIL_ID and (self.pending or self.kind_of):
            p.branch_from = NIL_ID
        self._journal.add(self.parents_with_children, p.parent_id)
        self.pending.append(p)
        self.put(self.by_id, p.id, p)
        self.put(self.kind_of, p.id, p.kind)
        self.put(self.parent_of, p.id, p.parent_id)
        if p.kind == "tool_call":
            self.remember_tool(p.record.get("id"), p.record.get("name"))
        source = p.record.get("source")
        at = source_line_of(source) if isinstance(source, dict) else None
        if at is not None and at not in self.first_of_line:
            self.put(self.first_of_line, at, p.id)
        for key in keys:
            self.put(self.keys, key, p.id)
            if key not in self.first_keys:
                self.put(self.first_keys, key, self.first_of_line.get(at, p.id) if at else p.id)
        if isinstance(source, dict) and "copied_from" not in source:
            self._journal.add(self.seen_lines, (str(source.get("file")), int(source.get("line", 0))))
        if side:
            self.put(self.alias, p.parent_id, p.id)
        else:
            self.has_chain = True
        self.cursor = p.id
        if self.report is not None:
            self.report.events += 1
            self.report.kinds[p.kind] += 1
        return p

    def add_keys(self, event_id: str, *keys: str) -> None:
        """Let more source ids name an event (a merged line's uuid)."""
        for key in keys:
            self.put(self.keys, key, event_id)
        pending = self.by_id.get(event_id)
        if pending is not None:
            listed = self.edit(pending).setdefault("source", {}).setdefault("keys", [])
            listed.extend(k for k in keys if k not in listed)

    def copy_path(self, other: Session, event_id: str) -> str:
        """Copy ``other``'s path root..``event_id`` here (a resume or a fork in
        the source tool); events already copied are reused. Returns the copy
        of ``event_id``."""
        mapping: dict[str, str] = {}
        result = NIL_ID
        for event in other.path(event_id):
            if not event.loaded:
                event = other.resolve(event)
            record = dict(event.record) if isinstance(event.record, dict) else {"value": event.record}
            source = dict(record.get("source") or {})
            keys = [k for k in source.get("keys") or () if isinstance(k, str)]
            known = next((self.keys[k] for k in keys if k in self.keys), None)
            if known is not None:
                mapping[event.id] = result = known
                continue
            source["copied_from"] = {"session": other.id, "event": event.id}
            record["source"] = source
            parent = mapping.get(event.parent_id, NIL_ID)
            ts = stamp_ns(event.timestamp, self.last_ts)
            new_id = self.ids.next(ts, f"{self.session_id}\0copy\0{event.id}")
            p = Pending(new_id, parent, event.kind, event.role, ts, record)
            self._add(p, keys, bool(source.get("side")))
            if self.report is not None:
                self.report.copied += 1
            mapping[event.id] = result = new_id
        return result

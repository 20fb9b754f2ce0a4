"""Building one agentlog session from source lines: ids, parents, the flush.

A ``SessionBuilder`` holds what an importer needs while it converts lines:
the map from source ids (a Claude uuid, a pi entry id) to event ids, the
chain's cursor, and the events not yet written. ``flush`` writes them as
one all-or-nothing batch (``store.create(events=...)`` for a new session,
``session.import_events`` for an existing one); the last flush of a run
then records, in the session's metadata, how far each source file was
consumed, and refreshes the session's import cache (index_cache.py).

Side events (a kept line that is not part of the conversation: a hook's
progress, a file-history snapshot, a malformed line) are threaded into the
chain: the next line whose source parent is the side event's parent is
attached after it instead, so keeping them adds no spurious branches.

A line is converted all or nothing: between ``begin_line`` and
``end_line`` a journal (journal.py) records every change the builder makes,
each earlier pending event an importer ``edit``s and each value it
``put``s in its ``state``; ``rollback_line`` undoes them when the line
turns out to have a shape the importer did not expect."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import CorruptionError
from ..event import NIL_ID, ROLE_PATTERN, Event, format_timestamp, parse_timestamp
from ..lifecycle import check_meta
from .index_cache import load_rows, save_rows, slim_record
from .journal import Journal
from .model import SessionReport, SourceLine

if TYPE_CHECKING:
    from ..session import Session
    from ..store import Store

__all__ = ["IdAllocator", "Pending", "SessionBuilder", "META_KEY"]

#: The session.json field holding an import's bookkeeping.
META_KEY = "import"

_MASK48 = (1 << 48) - 1
_MASK62 = (1 << 62) - 1


class IdAllocator:
    """UUIDv7 event ids made from the source's time and a hash of where the
    line is, so importing the same file into an empty store gives the same
    ids; each id is forced above the last one, because source times can go
    backwards and a session's ids must strictly increase."""

    def __init__(self, last: int = 0) -> None:
        self.last = last

    def next(self, ts_ns: int, seed: str) -> str:
        h = int.from_bytes(hashlib.blake2b(seed.encode(), digest_size=10).digest(), "big")
        ms = (ts_ns // 1_000_000) & _MASK48
        value = ms << 80 | 0x7 << 76 | ((h >> 62) & 0xFFF) << 64 | 0b10 << 62 | (h & _MASK62)
        if value <= self.last:
            value = self.last + 1
        self.last = value
        return str(uuid.UUID(int=value))


@dataclass(slots=True)
class Pending:
    """An event built but not yet written; importers may still extend it
    (an assistant reply split over several lines is merged into one)."""

    id: str
    parent_id: str
    kind: str
    role: str | None
    ts_ns: int
    record: dict[str, Any]
    branch_from: str | None = None

    def to_event(self) -> Event:
        return Event(
            self.id,
            self.parent_id,
            self.kind,
            self.role,
            format_timestamp(self.ts_ns),
            self.record,
            None,
            self.branch_from,
        )


def _line_of(source: dict[str, Any]) -> tuple[str, int] | None:
    """The source line an imported event was made from (None: a copy from
    another session, whose line is that session's)."""
    file, line = source.get("file"), source.get("line")
    if "copied_from" in source or not isinstance(file, str) or type(line) is not int:
        return None
    return (file, line)


@dataclass
class SessionBuilder:
    """One agentlog session being imported into (new or existing)."""

    store: Store
    session_id: str
    source_id: str
    format: str
    session: Session | None = None
    existing: bool = False
    keys: dict[str, str] = field(default_factory=dict)
    # The first event made from each source key's line, where ``keys`` has
    # the last (the one the line's keys are written on): a child goes after
    # the last event of a line (a message's tool calls), but a pointer into
    # the source (pi's firstKeptEntryId, a label's target) means the line's
    # start, its message.
    first_keys: dict[str, str] = field(default_factory=dict)
    first_of_line: dict[tuple[str, int], str] = field(default_factory=dict)
    alias: dict[str, str] = field(default_factory=dict)
    kind_of: dict[str, str] = field(default_factory=dict)
    tool_names: dict[str, Any] = field(default_factory=dict)
    turn_starts: list[str] = field(default_factory=list)
    parent_of: dict[str, str] = field(default_factory=dict)
    seen_lines: set[tuple[str, int]] = field(default_factory=set)
    parents_with_children: set[str] = field(default_factory=set)
    cursor: str = NIL_ID
    has_chain: bool = False
    pending: list[Pending] = field(default_factory=list)
    by_id: dict[str, Pending] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    create_meta: dict[str, Any] = field(default_factory=dict)
    meta_changes: dict[str, Any] = field(default_factory=dict)
    ids: IdAllocator = field(default_factory=IdAllocator)
    last_ts: int = 0
    report: SessionReport | None = None
    locator: Callable[[SessionBuilder, str], str | None] | None = None
    rows: list[list[Any]] = field(default_factory=list)  # the index cache's rows
    # Source keys that lookup found nowhere while converting the current line.
    missed: list[str] = field(default_factory=list)
    # (file, line) of the last malformed line whose own source id could not
    # be read: a later line naming an unknown parent may have meant it.
    lost_key_at: tuple[str, int] | None = None
    _per_line: dict[tuple[str, int], int] = field(default_factory=dict)
    _journal: Journal = field(default_factory=Journal)
    _mark: tuple[Any, ...] = ()
    # The session's date (what listing shows as updated) before this
    # builder's writes, which date it anew: the source's newest line, or a
    # later change made in agentlog (0: not read yet).
    dated_ns: int = 0

    # --- loading what an earlier import wrote -----------------------------------
    def read_state(self) -> None:
        """Read what earlier imports recorded (the files' states) from the
        session's metadata, without opening it: an import that finds
        nothing new writes nothing and takes no lease."""
        self.existing = True
        self.files = self._file_states(self.store.meta(self.session_id))

    def ensure_loaded(self) -> None:
        """Open the existing session for writing and rebuild the maps from
        its events (every imported record names its source keys), reading
        from the index cache what it holds."""
        if not self.existing or self.session is not None:
            return
        self.session = self.store.open(self.session_id)
        stored_meta = self.session.meta
        self.files = self._file_states(stored_meta)
        updated = stored_meta.get("updated_at")
        stored = _stamp_ns(updated, 0) if isinstance(updated, str) else 0
        self.dated_ns = max(stored, self.store.backend.stats(self.session_id).updated_ns)
        cached = load_rows(self.session)
        latest = 0
        for entry in self.session.entries():
            row = cached.get(entry.id)
            if row is not None and row[1] == entry.parent_id and row[2] == entry.kind:
                slim = row[3]
            else:
                event = self.session.event(entry.id)
                if not event.loaded:
                    event = self.session.resolve(event)
                slim = slim_record(entry.kind, event.record)
            self._observe(entry.id, entry.parent_id, entry.kind, slim)
            self.rows.append([entry.id, entry.parent_id, entry.kind, slim])
            self.ids.last = max(self.ids.last, uuid.UUID(entry.id).int)
            latest = max(latest, _stamp_ns(entry.timestamp, 0))
        self.last_ts = max(self.last_ts, latest)
        self.cursor = self.session.head

    def _file_states(self, meta: dict[str, Any]) -> dict[str, Any]:
        """The per-file states an earlier import recorded (each is checked
        when used: reader.check_state); the wrong shape is a CorruptionError."""
        imported = meta.get(META_KEY)
        files = imported.get("files") if isinstance(imported, dict) else None
        if not isinstance(imported, (dict, type(None))) or not isinstance(files, (dict, type(None))):
            bad = files if isinstance(imported, dict) else imported
            raise CorruptionError(
                f"session {self.session_id} metadata ({META_KEY})",
                None,
                f"the import state holds a {type(bad).__name__} where an object belongs;"
                " delete the session to import its files again",
            )
        return dict(files or {})

    def _observe(self, event_id: str, parent_id: str, kind: str, record: Any) -> None:
        self.kind_of[event_id] = kind
        self.parent_of[event_id] = parent_id
        self.parents_with_children.add(parent_id)
        source = record.get("source") if isinstance(record, dict) else None
        if isinstance(record, dict) and kind == "tool_call":
            self.remember_tool(record.get("id"), record.get("name"))
        if isinstance(source, dict):
            # ``turn_start`` is True on the event that starts a turn, or names
            # an earlier event that does (one a previous import wrote).
            start = source.get("turn_start")
            if start is True:
                self.turn_starts.append(event_id)
            elif isinstance(start, str):
                self.turn_starts.append(start)
        if isinstance(source, dict):
            at = _line_of(source)
            if at is not None:
                self.first_of_line.setdefault(at, event_id)
            for key in source.get("keys") or ():
                if isinstance(key, str):
                    self.keys[key] = event_id
                    self.first_keys.setdefault(key, self.first_of_line.get(at, event_id) if at else event_id)
            if "copied_from" not in source and isinstance(source.get("file"), str):
                lines = [source.get("line"), *(m.get("line") for m in source.get("merged") or ())]
                if isinstance(source.get("summary_line"), dict):
                    lines.append(source["summary_line"].get("line"))
                self.seen_lines.update((source["file"], n) for n in lines if isinstance(n, int))
            if source.get("side"):
                self.alias[parent_id] = event_id
                return
        self.has_chain = True

    # --- one line, all or nothing ------------------------------------------------
    def begin_line(self) -> None:
        """Start journalling: what follows, up to ``end_line``, is one line."""
        r = self.report
        counts = (r.events, r.kinds.copy(), r.merged, r.copied) if r is not None else None
        self._mark = (len(self.pending), self.cursor, self.has_chain, self.ids.last, self.last_ts, counts)
        self._journal.open()
        self.missed.clear()

    def rollback_line(self) -> None:
        """Undo everything since ``begin_line``: the line's events, the maps
        they entered, the earlier pending events it edited, the report."""
        self._journal.undo()
        size, self.cursor, self.has_chain, self.ids.last, self.last_ts, counts = self._mark
        del self.pending[size:]
        if counts is not None and self.report is not None:
            self.report.events, self.report.kinds, self.report.merged, self.report.copied = counts

    def end_line(self) -> None:
        self._journal.close()

    def put(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        """``mapping[key] = value``, undone if the line is rolled back (for
        importers' own ``state``, and every map of the builder)."""
        self._journal.put(mapping, key, value)

    def edit(self, p: Pending) -> dict[str, Any]:
        """The record of an earlier pending event, to change in place (a
        merge); its state before the line is kept, to restore on rollback."""
        self._journal.keep_record(p)
        return p.record

    def remember_tool(self, call_id: Any, name: Any) -> None:
        """A tool call's name, for the results naming its id. Only a string
        id is remembered: any other is stored on the event, and names nothing."""
        if isinstance(call_id, str):
            self.put(self.tool_names, call_id, name)

    def tool_name(self, call_id: Any) -> Any:
        return self.tool_names.get(call_id) if isinstance(call_id, str) else None

    # --- building ---------------------------------------------------------------
    def resolve(self, event_id: str) -> str:
        """Where a child of ``event_id`` goes: after the side events threaded there."""
        start = event_id
        while event_id in self.alias:
            event_id = self.alias[event_id]
        if event_id != start:
            self.put(self.alias, start, event_id)  # path compression: the next lookup is one step
        return event_id

    def lookup(self, key: str | None) -> str | None:
        """The event a source key names here, else a copy of its path from
        the session that holds it (a resume or fork across files), else None."""
        if not key:
            return None
        found = self.keys.get(key)
        if found is None and self.locator is not None:
            found = self.locator(self, key)
        if found is None:
            self.missed.append(key)
        return found

    def lookup_first(self, key: str | None) -> str | None:
        """The first event a source key's line made here, else as ``lookup``."""
        found = self.first_keys.get(key) if key else None
        return found if found is not None else self.lookup(key)

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
        name = os.path.basename(line.path)
        n = self._per_line.get((name, line.lineno), 0)
        self.put(self._per_line, (name, line.lineno), n + 1)
        event_id = self.ids.next(ts, f"{self.session_id}\0{name}\0{line.lineno}\0{n}")
        source = record.setdefault("source", {})
        source.setdefault("format", self.format)
        source.setdefault("file", os.path.basename(line.path))
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
        at = _line_of(source) if isinstance(source, dict) else None
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
            ts = _stamp_ns(event.timestamp, self.last_ts)
            new_id = self.ids.next(ts, f"{self.session_id}\0copy\0{event.id}")
            p = Pending(new_id, parent, event.kind, event.role, ts, record)
            self._add(p, keys, bool(source.get("side")))
            if self.report is not None:
                self.report.copied += 1
            mapping[event.id] = result = new_id
        return result

    # --- writing ----------------------------------------------------------------
    def flush(self, final: bool = True) -> None:
        """Write the pending events (all or nothing), then, if ``final``,
        the files' states and metadata changes. A crash in between leaves
        the states behind the events; the next import then finds those
        lines already held (``seen_lines``, keys) and skips them."""
        self.ensure_loaded()
        events = [p.to_event() for p in self.pending]
        meta: dict[str, Any] = {"format": self.format, "source_id": self.source_id, "files": self.files}
        # An imported session is dated by its source, as a copy keeps its
        # source's dates: created when its first line was written, updated
        # when its newest was (or when agentlog last changed it, if later).
        newest = max((p.ts_ns for p in self.pending), default=0)
        if self.session is None:
            first = min((p.ts_ns for p in self.pending), default=0)
            extra: dict[str, Any] = {**self.create_meta, **self.meta_changes, META_KEY: meta}
            if first:
                extra.setdefault("created_at", format_timestamp(first))
                extra["updated_at"] = format_timestamp(newest)
            # No working_dir: creating with one leaves a --continue breadcrumb,
            # and an imported session should not become what `continue` opens.
            self.session = self.store.create(
                name=extra.pop("name", None),
                model=extra.pop("model", None),
                session_id=self.session_id,
                events=events,
                **extra,
            )
            self.meta_changes.clear()
            self.dated_ns = newest
        else:
            if events:
                self.session.import_events(events)
            self.dated_ns = max(self.dated_ns, newest)
            if final:
                # What the source says of the session (model, directory,
                # version) fills only what is still unset: a live file's
                # first pass may not have had it, and a value set since,
                # by an earlier pass or by hand, stays. One write, dated by
                # the source as a copy is (update_meta would date it now).
                stored = self.session.storage.read_meta()
                unset = {k: v for k, v in self.create_meta.items() if v is not None and stored.get(k) is None}
                changes = {META_KEY: meta, **unset, **self.meta_changes}
                check_meta(changes)
                stored.update(changes)
                if self.dated_ns:
                    stored["updated_at"] = format_timestamp(self.dated_ns)
                self.session.storage.write_meta(stored)
                self.meta_changes.clear()
        if final and self.session is not None and self.dated_ns:
            # Last: the event and metadata writes above dated the index now.
            self.session.storage.set_updated_ns(self.dated_ns)
        self.rows.extend([p.id, p.parent_id, p.kind, slim_record(p.kind, p.record)] for p in self.pending)
        if final and self.session is not None:
            save_rows(self.session, self.rows)
        self.pending.clear()
        self.by_id.clear()

    def close(self) -> None:
        if self.session is not None:
            self.session.close()


def _stamp_ns(text: str, default: int) -> int:
    """An event's time in nanoseconds, or ``default`` for a form this build
    cannot read: a session can hold one written by another tool through
    ``import_events``, and one odd time must not stop an import."""
    try:
        return parse_timestamp(text)
    except ValueError:
        return default

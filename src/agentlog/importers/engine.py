"""One import run: read files, group lines into sessions, convert, write.

Sessions are converted one at a time, earliest first, and each is written
(in all-or-nothing batches) before the next starts; a session whose first line
continues another session's line (a resume or fork in the source tool)
has that session converted first, then copies the path it continues."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import AgentlogError
from ..session import Session
from ..store import Store
from .base import Importer, custom_record, name_from_prompt
from .builder import META_KEY, SessionBuilder
from .index_cache import load_rows, slim_record
from .model import (
    FileReport,
    ImportReport,
    SessionReport,
    SourceChanged,
    SourceLine,
)
from .naming import SessionNames
from .paths import expand_paths
from .reader import FileData, Tails, check_state, prefix_state, read_file
from .repeats import Repeats
from .salvage import top_level_strings

__all__ = ["CHUNK_EVENTS", "run_import"]

Progress = Callable[[int], None]

#: Pending events of one session written in one batch at most (at a point
#: where nothing can be merged any more), so memory stays bounded.
CHUNK_EVENTS = 5_000

#: Exceptions a converter raises on a line whose shape it did not expect;
#: the line is then kept whole and reported, and the import goes on.
SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError)


@dataclass
class _Group:
    source_id: str
    session_id: str
    lines: list[SourceLine] = field(default_factory=list)
    files: dict[str, tuple[FileData, FileReport]] = field(default_factory=dict)
    first: int = 0


class _Run:
    """The state of one import run: the files read, their lines grouped by
    session, one builder per session, and which source key belongs to
    which session (the first to hold it, earliest session first)."""

    def __init__(
        self,
        store: Store,
        importer: Importer,
        report: ImportReport,
        keep: dict[str, SessionBuilder] | None = None,
        chunk_events: int = CHUNK_EVENTS,
        tails: Tails | None = None,
    ) -> None:
        self.store = store
        self.keep = keep
        self.tails = tails
        self.chunk_events = chunk_events
        self.importer = importer
        self.report = report
        self.groups: dict[str, _Group] = {}
        self.names = SessionNames(store, importer, keep)
        self.builders: dict[str, SessionBuilder] = {}
        self.owner: dict[str, str] = {}
        self.done: set[str] = set()
        self.active: set[str] = set()
        self.stored_index: dict[str, str] | None = None
        self.readers: dict[str, Session] = {}
        self.failed: set[str] = set()

    # --- reading ------------------------------------------------------------------
    def read(self, path: str, progress: Progress | None) -> None:
        fr = FileReport(path)
        self.report.files.append(fr)
        try:
            fd = read_file(path, self.importer.skip_prefix, self.tails)
        except OSError as exc:
            fr.error = f"{exc.strerror or exc}: {path}"
            self.report.errors.append(fr.error)
            return
        fr.lines = len(fd.lines)
        fr.pending_bytes = fd.pending
        sources = self.importer.assign(fd)
        if progress is not None:
            progress(fd.size)
        if sources is None:
            if fd.lines:
                fr.error = f"{path}: no {self.importer.name} session id in any line"
                self.report.errors.append(fr.error)
            return
        refused: list[str] = []
        for line, source_id in zip(fd.lines, sources, strict=True):
            sid = self.names.session_for(source_id)
            if sid is None:
                if source_id not in refused:
                    refused.append(source_id)
                continue
            group = self.groups.get(sid)
            if group is None:
                group = self.groups[sid] = _Group(source_id, sid)
            group.lines.append(line)
            group.files[path] = (fd, fr)
        for source_id in refused:
            taken = " and ".join(self.names.tried(source_id))
            error = (
                f"{path}: source session {source_id!r} not imported: {taken} already hold other"
                " source sessions (two sources are never merged into one session)"
            )
            fr.error = error if fr.error is None else f"{fr.error}; {error}"
            self.report.errors.append(error)

    # --- planning -----------------------------------------------------------------
    def prepare(self) -> list[_Group]:
        for group in self.groups.values():
            try:
                self.start(group)
            except AgentlogError as exc:  # damaged bookkeeping, a session locked: this one only
                self.fail(group, exc)
                continue
            times = [
                t
                for t in (self.importer.line_time(ln.obj) for ln in group.lines if ln.new and ln.obj is not None)
                if t is not None
            ]
            group.first = min(times) if times else 0
        # Earliest first: a source key two sessions' lines carry (a Claude
        # summary written into several files) belongs to the session that
        # had it first. A group with no time at all (a Claude file of
        # summaries only) claims nothing: it never takes a line from the
        # conversation the line belongs to, and keeps what no conversation
        # of the run holds.
        order = sorted(self.groups.values(), key=lambda g: (g.first, g.session_id))
        for group in order:
            if group.first == 0:
                continue
            b = self.builders[group.session_id]
            for line in group.lines:
                if line.new and line.obj is not None:
                    key = self.importer.line_key(group.source_id, line.obj)
                    if key and key not in b.keys:
                        self.owner.setdefault(key, group.session_id)
        for group in order:
            for fd, fr in group.files.values():
                fr.new_lines = sum(1 for ln in fd.lines if ln.new)
        return order

    def start(self, group: _Group) -> SessionBuilder:
        """The group's builder, with the lines earlier imports consumed
        marked not new (a file whose consumed part changed is left out)."""
        sid = group.session_id
        # --follow lends the builder it kept: its maps are current, its lease still held.
        kept = self.keep.get(sid) if self.keep is not None else None
        b = kept if kept is not None else SessionBuilder(self.store, sid, group.source_id, self.importer.name)
        self.builders[sid] = b  # first: fail() finds it here if what follows fails
        existed = kept is not None or self.store.exists(sid)
        if existed and kept is None:
            b.read_state()
        b.locator = self.locate
        b.report = SessionReport(sid, group.source_id, created=not existed)
        for path, (fd, fr) in list(group.files.items()):
            state = b.files.get(os.path.basename(path))
            if not state or fd.data is None:
                continue  # new here, or followed: its earlier lines come marked already
            try:
                last = check_state(fd.data, state, path, sid)
            except SourceChanged as exc:
                fr.error = str(exc)
                self.report.errors.append(str(exc))
                group.lines = [ln for ln in group.lines if ln.path != path]
                del group.files[path]
                self.forget(path)
                continue
            for line in group.lines:
                if line.path == path and line.lineno <= last:
                    line.new = False
        if any(ln.new for ln in group.lines):
            b.ensure_loaded()  # its maps are needed only to convert new lines
        return b

    def fail(self, group: _Group, exc: Exception) -> None:
        """Leave a session out of this run, saying why; the rest goes on."""
        self.report.errors.append(f"session {group.session_id!r}: {exc} (its new lines are not imported)")
        self.failed.add(group.session_id)
        if self.keep is not None:  # its maps may hold events that were never written
            self.keep.pop(group.session_id, None)
            self.builders[group.session_id].close()
            self.builders[group.session_id] = SessionBuilder(
                self.store, group.session_id, group.source_id, self.importer.name
            )
        for line in group.lines:
            line.new = False
        for path in group.files:
            self.forget(path)  # the next poll reads it whole again
        self.done.add(group.session_id)

    def forget(self, path: str) -> None:
        if self.tails is not None:
            self.tails.pop(path, None)

    # --- converting ---------------------------------------------------------------
    def convert(self, group: _Group, progress: Progress | None = None) -> None:
        sid = group.session_id
        if sid in self.done or sid in self.active:
            return
        self.active.add(sid)
        b = self.builders[sid]
        new = [ln for ln in group.lines if ln.new]
        try:
            if new:
                if not b.last_ts:  # lines before the first with a time take that time
                    b.last_ts = group.first or min(os.stat(p).st_mtime_ns for p in group.files)
                self.importer.begin(b, group.lines)
                self.name_unnamed(b, group.lines)
            repeats = Repeats()
            for line in group.lines:
                if not line.new and self.importer.line_key(group.source_id, line.obj or {}) is None:
                    repeats.add(line)  # an old line --follow kept only in part matches nothing
            for line in new:
                self.convert_line(b, group, line, repeats)
                if len(b.pending) >= self.chunk_events and self.importer.safe_to_flush(b):
                    b.flush(final=False)  # bounded memory for long sessions
            changed = bool(new)
            for path, (fd, _) in group.files.items():
                state = prefix_state(fd)
                if b.files.get(os.path.basename(path)) != state:
                    b.files[os.path.basename(path)] = state
                    changed = True
            if changed or b.pending:
                b.flush()
        finally:
            self.active.discard(sid)
            self.done.add(sid)
        assert b.report is not None
        self.report.sessions.append(b.report)
        if progress is not None:
            progress(sum(ln.end - ln.start for ln in group.lines))

    def name_unnamed(self, b: SessionBuilder, lines: list[SourceLine]) -> None:
        """Name a session after its first prompt, as the tools' pickers
        list one, when it has no name or title yet (a name the source gives,
        a summary or a rename, replaces it later; a title set in agentlog
        is never touched). Lines an earlier --follow poll read are kept
        only in part and name nothing: a session imported unnamed by an
        older agentlog and followed since may take a later prompt."""
        meta = b.session.meta if b.session is not None else {}
        if meta.get("name") or meta.get("title") or b.create_meta.get("name") or "name" in b.meta_changes:
            return
        for line in lines:
            text = self.importer.prompt_text(line.obj) if line.obj is not None else None
            name = name_from_prompt(text) if text else None
            if name:
                b.meta_changes["name"] = name
                return

    def convert_line(self, b: SessionBuilder, group: _Group, line: SourceLine, repeats: Repeats) -> None:
        assert b.report is not None
        fr = group.files[line.path][1]
        # A line already held by its place: the file's state was not saved
        # after its events (a crash between the two writes of a flush).
        if (os.path.basename(line.path), line.lineno) in b.seen_lines:
            b.report.duplicates += 1
            return
        if line.obj is None:
            self.keep_malformed(b, fr, line)
            return
        key = self.importer.line_key(group.source_id, line.obj)
        if key and (key in b.keys or self.owner.get(key, b.session_id) != b.session_id):
            conflict = repeats.conflict(key, line)
            if conflict is None:
                b.report.duplicates += 1
                return
            fr.warnings.append((line.lineno, conflict))
            self.keep_whole(b, line, conflict)  # the id stays with the first line
            return
        if key:
            repeats.keyed(key, line)
        if line.repaired:
            fr.warnings.append((line.lineno, line.repaired))
        if key is None and not self.importer.restates(line.obj) and (repeated := repeats.check(line)) is not None:
            fr.warnings.append((line.lineno, repeated))
        b.begin_line()
        try:
            self.importer.convert(b, line)
        except SHAPE_ERRORS as exc:
            b.rollback_line()  # all or nothing: the line is kept whole instead
            reason = f"unexpected shape ({type(exc).__name__}: {exc})"
            fr.malformed.append((line.lineno, reason))
            self.keep_whole(b, line, reason, self.own_keys(b, self.importer.event_key(b, line, line.obj)))
        else:
            self.note_detached(b, fr, line)
        finally:
            b.end_line()

    def keep_whole(self, b: SessionBuilder, line: SourceLine, error: str, keys: tuple[str, ...] = ()) -> None:
        """A parsed line that could not be converted, kept as it is beside
        the timeline (a ``custom`` event saying why), so nothing is lost."""
        assert line.obj is not None
        record = custom_record(line.obj)
        record["error"] = error
        b.emit("custom", None, record, line, side=True, ts_ns=self.importer.line_time(line.obj), keys=keys)

    def keep_malformed(self, b: SessionBuilder, fr: FileReport, line: SourceLine) -> None:
        """A line that is not JSON: kept as its raw text. The source id it
        was written with, if its top level still shows it, names the kept
        event, so the lines after it stay attached."""
        fr.malformed.append((line.lineno, line.error or "malformed"))
        key = self.importer.event_key(b, line, top_level_strings(line.text))
        if key is None:
            b.lost_key_at = (os.path.basename(line.path), line.lineno)
        keys = self.own_keys(b, key)
        b.emit("custom", None, {"type": None, "raw": line.text, "error": line.error}, line, side=True, keys=keys)

    def own_keys(self, b: SessionBuilder, key: str | None) -> tuple[str, ...]:
        """``key`` as the keys of an event replacing a line, unless another
        event (here or in another session) holds it."""
        if key and key not in b.keys and self.owner.get(key, b.session_id) == b.session_id:
            return (key,)
        return ()

    def note_detached(self, b: SessionBuilder, fr: FileReport, line: SourceLine) -> None:
        """A line naming a source id no line holds, after a malformed line
        whose own id could not be read: say that the chain may break here."""
        if b.missed and b.lost_key_at is not None:
            name, lineno = b.lost_key_at
            missing = ", ".join(repr(k) for k in dict.fromkeys(b.missed))
            where = f"line {lineno}" if name == os.path.basename(line.path) else f"{name}:{lineno}"
            fr.warnings.append(
                (
                    line.lineno,
                    f"refers to {missing}, which no line holds; {where} (malformed, kept raw) may have"
                    " held it, so the history is broken here",
                )
            )

    def locate(self, b: SessionBuilder, key: str) -> str | None:
        """A key another session holds: convert that session first if it is
        part of this run, then copy the path to it into ``b``."""
        owner = self.owner.get(key)
        if owner is not None and owner != b.session_id:
            self.convert(self.groups[owner])
            ob = self.builders[owner]
            if key in ob.keys and ob.session is not None and not ob.pending:
                return b.copy_path(ob.session, ob.keys[key])
            return None
        for other in self.builders.values():
            if other.session_id in self.failed:
                continue  # left out of this run (and reported)
            if other is not b:
                other.ensure_loaded()
            found = other.keys.get(key)
            if other is not b and found is not None and found not in other.by_id and other.session is not None:
                return b.copy_path(other.session, found)  # stored by an earlier import
        sid = self.stored().get(key)
        if sid is None or sid == b.session_id:
            return None
        reader = self.readers.get(sid)
        if reader is None:
            reader = self.readers[sid] = self.store.open(sid, readonly=True)
        for event_id, keys in _keyed_events(reader):
            if key in keys:
                return b.copy_path(reader, event_id)
        return None

    def stored(self) -> dict[str, str]:
        """Source key -> session, over this format's sessions already in the
        store (built once per run, and only when a line continues a source
        id that no session of this run holds)."""
        if self.stored_index is None:
            index: dict[str, str] = {}
            for info in self.store.list(archived=True):
                sid = info.id
                if sid in self.groups or not sid.startswith(self.importer.prefix + "-"):
                    continue
                imported = self.store.meta(sid).get(META_KEY)
                if not isinstance(imported, dict) or imported.get("format") != self.importer.name:
                    continue
                with self.store.open(sid, readonly=True) as s:
                    for _, keys in _keyed_events(s):
                        for k in keys:
                            index.setdefault(k, sid)
            self.stored_index = index
        return self.stored_index

    def close(self) -> None:
        for sid, b in self.builders.items():
            if self.keep is not None and b.session is not None and sid not in self.failed:
                self.keep.pop(sid, None)
                self.keep[sid] = b  # --follow reuses it at the next poll (last = most recent)
            else:
                b.close()
        for r in self.readers.values():
            r.close()


def _keyed_events(session: Session) -> list[tuple[str, list[str]]]:
    """(event id, the source keys its record names) for each event, from
    the index cache where it has the event, else from the record."""
    cached = load_rows(session)
    out = []
    for entry in session.entries():
        row = cached.get(entry.id)
        if row is not None and row[1] == entry.parent_id and row[2] == entry.kind:
            slim = row[3]
        else:
            event = session.event(entry.id)
            slim = slim_record(entry.kind, event.record if event.loaded else session.resolve(event).record)
        keys = (slim.get("source") or {}).get("keys") or []
        out.append((entry.id, [k for k in keys if isinstance(k, str)]))
    return out


def run_import(
    store: Store,
    importer: Importer,
    paths: list[str] | tuple[str, ...] = (),
    *,
    progress: Progress | None = None,
    files: list[str] | None = None,
    keep: dict[str, SessionBuilder] | None = None,
    chunk_events: int = 0,
    tails: Tails | None = None,
) -> ImportReport:
    """Import ``paths`` (files or directories; none: the default locations),
    or exactly ``files`` when given.

    ``progress`` is called with byte counts: once per file read, once per
    session converted (its lines' bytes), so twice the files' sizes in all.
    Returns the report; malformed lines and changed files are in it, and
    do not stop the rest.

    ``chunk_events`` bounds the events written per batch (default
    ``CHUNK_EVENTS``); each batch is all or nothing, and a crash between
    batches loses nothing and duplicates nothing (see SessionBuilder.flush).
    ``keep`` (for ``follow``) receives the sessions this run opened, open
    and with their maps, and lends them to the next run instead of
    reading every event again; the caller closes them. ``tails`` (for
    ``follow`` too) keeps each file's lines and running hash, so that the
    next run reads only what was appended."""
    report = ImportReport(importer.name)
    run = _Run(store, importer, report, keep, chunk_events or CHUNK_EVENTS, tails)
    try:
        for path in files if files is not None else expand_paths(importer, paths):
            run.read(path, progress)
        for group in run.prepare():
            try:
                run.convert(group, progress)
            except AgentlogError as exc:  # this session only: the others are still imported
                run.fail(group, exc)
    finally:
        run.close()
        if tails is not None:  # between polls, keep only what later polls need
            for path in {p for g in run.groups.values() for p in g.files}:
                for line in tails[path].lines if path in tails else ():
                    if line.obj is not None:
                        line.obj = importer.slim(line.obj)
    return report

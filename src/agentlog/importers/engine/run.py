"""One import run's state and its steps: the files read and their lines
grouped by session, each group's builder started (the lines earlier
imports consumed marked not new), the sessions converted earliest first,
and a source key that another session holds found there (``locate``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import AgentlogError
from ...store import Store
from ..base import Importer, name_from_prompt
from ..builder import SessionBuilder
from ..model import FileReport, ImportReport, SessionReport, SourceChanged, SourceLine, file_name
from ..naming import SessionNames
from ..reader import FileData, Tails, check_state, consumed_lines, prefix_state, read_file
from ..repeats import Repeats
from .lines import LineConverter
from .stored_keys import StoredKeys

__all__ = ["CHUNK_EVENTS", "KEEP_OPEN", "Group", "Progress", "Run"]

#: Sessions --follow keeps open, during a poll and between polls: the most
#: recently written; an older one is closed (its lease released, its maps
#: kept) and opened again if it grows. A plain import holds one at a time.
KEEP_OPEN = 64

Progress = Callable[[int], None]

#: Pending events of one session written in one batch at most (at a point
#: where nothing can be merged any more), so memory stays bounded.
CHUNK_EVENTS = 5_000


@dataclass
class Group:
    """The lines of one source session read in this run, and their files."""

    source_id: str
    session_id: str
    lines: list[SourceLine] = field(default_factory=list)
    files: dict[str, tuple[FileData, FileReport]] = field(default_factory=dict)
    first: int = 0


class Run:
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
        self.groups: dict[str, Group] = {}
        self.names = SessionNames(store, importer, keep)
        self.builders: dict[str, SessionBuilder] = {}
        self.owner: dict[str, str] = {}
        self.done: set[str] = set()
        self.active: set[str] = set()
        self.failed: set[str] = set()
        self.stored_keys = StoredKeys(store, importer, self.groups, self.failed)
        self.lines = LineConverter(importer, self.owner)
        self.recent: dict[str, None] = dict.fromkeys(keep) if keep is not None else {}

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
                group = self.groups[sid] = Group(source_id, sid)
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
    def prepare(self) -> list[Group]:
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

    def start(self, group: Group) -> SessionBuilder:
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
            state = b.files.get(file_name(path))
            if not state or fd.data is None:
                continue  # new here, or followed: its earlier lines come marked already
            try:
                last = check_state(fd.data, state, path, sid)
            except SourceChanged as exc:
                last = consumed_lines(state, path, sid)
                if self.importer.rewritten(b, [ln for ln in group.lines if ln.path == path], last):
                    note = f"{self.importer.name} rewrote the file; its lines 1-{last} are the ones imported before"
                    fr.warnings.append((1, note))
                else:
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
        if b.session is not None:  # loaded here, or by a rewrite's recognition (pi)
            self.hold(b)  # opened again when its turn comes: not all at once
        return b

    def hold(self, b: SessionBuilder) -> None:
        """Bound the sessions a run holds open after using one: a plain
        import closes it (``release``); --follow keeps the KEEP_OPEN most
        recently used open, for its next poll, and closes the older ones."""
        if self.keep is None:
            b.release()
            return
        self.recent.pop(b.session_id, None)
        self.recent[b.session_id] = None
        while len(self.recent) > KEEP_OPEN:
            oldest = next(iter(self.recent))
            del self.recent[oldest]
            other = self.builders.get(oldest) or self.keep.get(oldest)
            if other is not None and oldest not in self.active:
                other.release()

    def fail(self, group: Group, exc: Exception) -> None:
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
    def convert(self, group: Group, progress: Progress | None = None) -> None:
        sid = group.session_id
        if sid in self.done or sid in self.active:
            return
        self.active.add(sid)
        b = self.builders[sid]
        new = [ln for ln in group.lines if ln.new]
        try:
            if new:
                b.ensure_loaded()  # open again (start released it): converting reads what it holds
                if not b.last_ts:  # lines before the first with a time take that time
                    b.last_ts = group.first or min(os.stat(p).st_mtime_ns for p in group.files)
                self.importer.begin(b, group.lines)
                self.name_unnamed(b, group.lines)
            repeats = Repeats()
            for line in group.lines:
                if not line.new and self.importer.line_key(group.source_id, line.obj or {}) is None:
                    repeats.add(line)  # an old line --follow kept only in part matches nothing
            for line in new:
                self.lines.convert(b, group.source_id, group.files[line.path][1], line, repeats)
                if len(b.pending) >= self.chunk_events and self.importer.safe_to_flush(b):
                    b.flush(final=False)  # bounded memory for long sessions
            if new:
                self.importer.finish(b)
            changed = bool(new)
            for path, (fd, _) in group.files.items():
                state = prefix_state(fd)
                if b.files.get(file_name(path)) != state:
                    b.files[file_name(path)] = state
                    changed = True
            if changed or b.pending:
                b.flush()
            self.hold(b)
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

    def locate(self, b: SessionBuilder, key: str) -> str | None:
        """A key another session holds: convert that session first if it is
        part of this run, then copy the path to it into ``b``."""
        owner = self.owner.get(key)
        if owner is not None and owner != b.session_id:
            self.convert(self.groups[owner])
            ob = self.builders[owner]
            if key in ob.keys and (ob.session is not None or ob.released) and not ob.pending:
                with ob.stored() as session:
                    return b.copy_path(session, ob.keys[key])
            return None
        for other in self.builders.values():
            if other.session_id in self.failed:
                continue  # left out of this run (and reported)
            if other is not b and not other.released:  # a released one's maps are loaded already
                other.ensure_loaded()
                if other.session is not None and other.session_id not in self.active:
                    self.hold(other)
            found = other.keys.get(key)
            written = other.session is not None or other.released
            if other is not b and found is not None and found not in other.by_id and written:
                with other.stored() as session:
                    return b.copy_path(session, found)  # stored by an earlier import
        stored = self.stored_keys.find(key, b.session_id)
        return b.copy_path(*stored) if stored is not None else None

    def close(self) -> None:
        for sid, b in self.builders.items():
            if self.keep is not None and (b.session is not None or b.released) and sid not in self.failed:
                self.keep.pop(sid, None)
                self.keep[sid] = b  # --follow reuses it at the next poll (last = most recent)
            else:
                b.close()
        self.stored_keys.close()

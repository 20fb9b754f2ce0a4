"""One session of the embedded file backend: recovery, reads, sidecars.

Group commit is in groupcommit.py, the line shapes in lines.py.

The write path costs one ``fdatasync`` per group of concurrent appends:
blobs first (each synced, then their directory once), then every line of
the group in one ``write`` to the chunk, then one ``fdatasync``. The index
and the HEAD file are derived caches written without syncs; opening
validates them against the log and completes them from its tail
(invariant 2), so the log alone decides what happened.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from ..._codec import LineError, decode_line
from ..._fs import OsFs
from ...errors import (
    CorruptionError,
    EventNotFound,
    InvalidName,
    ReadOnlySession,
    RecoveryWarning,
    SessionClosed,
    SessionNotFound,
    SessionPoisoned,
    StorageError,
)
from ...event import NIL_ID, Event, check_sidecar_name, is_event_id, stored_record_problem
from ..base import IndexEntry, SessionStorage
from .blobs import BlobStore
from .chunklog import ChunkLog, Line, set_aside
from .groupcommit import GroupCommit
from .index import Entry, Index, IndexDamaged, Placed, entry_of
from .layout import Layout
from .legacy_index import LegacyIndex
from .lines import entry_to_index, event_of, is_event
from .meta import encode_meta, read_meta_file
from .pathread import read_ancestors
from .scan import scan_events

__all__ = ["FileSessionStorage"]


def _close_quietly(part: ChunkLog | Index) -> None:
    try:
        part.close()
    except StorageError:
        pass  # closing a descriptor after its data is synced (or never written) loses nothing


def _open_index(fs: OsFs, layout: Layout, session_id: str, *, writable: bool) -> Index:
    """The session's index: ``index.bin``; for a reader of a version-1
    session no writer has opened since, its ``index.jsonl`` as it is."""
    path, legacy = layout.index(session_id), layout.legacy_index(session_id)
    if not writable and not fs.exists(path) and fs.exists(legacy):
        try:
            return LegacyIndex(fs, legacy)
        except StorageError as exc:
            if exc.errno != errno.ENOENT:
                raise  # the OS failed (EIO...): say so
            # else a writer converted it and removed it just now: read index.bin
    return Index(fs, path, writable=writable, legacy_path=legacy)


class FileSessionStorage(GroupCommit, SessionStorage):
    def __init__(
        self, fs: OsFs, layout: Layout, session_id: str, *, readonly: bool, durable: bool, chunk_size: int
    ) -> None:
        self.fs = fs
        self.layout = layout
        self.session_id = session_id
        self.readonly = readonly
        self.durable = durable
        self._chunk_size = chunk_size
        self.dir = layout.session_dir(session_id)
        self._state = threading.RLock()
        self._start_group_commit()
        self._closed = False
        self._poisoned: BaseException | None = None
        self._head = NIL_ID
        self._last_id = ""  # the newest event applied: ids must increase (invariant 11)
        self.warnings: list[str] = []
        self.blobs = BlobStore(fs, layout.blobs(session_id), durable=durable)
        writable = not readonly
        self.log = ChunkLog(fs, layout.chunks(session_id), chunk_size=chunk_size, durable=durable, writable=writable)
        try:
            self.index = _open_index(fs, layout, session_id, writable=writable)
        except BaseException:
            _close_quietly(self.log)
            raise
        try:
            self._open()
        except BaseException:
            self._close_files()
            raise

    # --- opening and recovery (invariant 2, 3, 5) ----------------------------
    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        warnings.warn(RecoveryWarning(f"{self.session_id}: {message}"), stacklevel=4)

    def _open(self) -> None:
        writable = not self.readonly
        if writable:
            self.index.truncate_torn()
        # How far the log must reach, by the index's word, for a cut tail to
        # be a crash's (``_acknowledged``). A reader reads it before the log:
        # a writer goes on meanwhile, and what it indexes after this read
        # the scan below may still see torn. A writer, alone on the session,
        # reads it only when it needs it, so an open costs no extra read.
        self._acknowledged_end: tuple[int, int] | None = None
        self._acknowledged_read = False
        if self.readonly or (not self.durable and self.index.synced_entries):
            self._acknowledged()
        if writable and not self.durable:
            # Before this writer, its recovery included, writes an entry for
            # a record it has not synced.
            self.index.mark_synced(False)
        self._refused_cut = False  # set when that end refused to cut a tail
        self._tail_synced = False  # set once recovery synced the log it indexes
        self._head = NIL_ID
        self._last_id = ""  # the newest event applied: ids must increase (invariant 11)
        self._scan_from = (0, 0)
        if self.index.reset_reason is not None and self.index.writable:
            self._warn(f"index rebuilt from the chunks: {self.index.reset_reason}")
        try:
            last = self.index.last()
            if last is not None:
                last = self._resume_entry(last, self._check_entry(last))
        except IndexDamaged as exc:
            self._rebuild_index(str(exc))
        else:
            if last is not None:
                self._head = self._last_id = last.id
                self._scan_from = (last.chunk, last.offset + last.length)
            self._scan_tail()
        if writable:
            self._sync_head_file()
            if self.durable and not self.index.synced_entries:
                # Entries an earlier writer at "off" wrote may frame records
                # it never synced: sync them all, then vouch for them.
                for number in self.log.numbers:
                    self.log.sync_chunk(number)
                self.index.mark_synced(True)

    def _acknowledged(self) -> tuple[int, int] | None:
        """The end of the newest record the index vouches was synced (read
        once, before any rebuild can shorten the index)."""
        if not self._acknowledged_read:
            self._acknowledged_end = self.index.acknowledged_end()
            self._acknowledged_read = True
        return self._acknowledged_end

    def _resume_entry(self, last: Entry, rec: dict[str, Any]) -> Entry | None:
        """The index entry the log scan resumes after. An index write cut at a
        line boundary (a crash; a reader racing the writer) can end inside a
        batch: then the batch's entries are set aside and it is rescanned whole."""
        txn = rec.get("txn")
        if not (
            isinstance(txn, list)
            and len(txn) == 2
            and isinstance(txn[0], int)
            and isinstance(txn[1], int)
            and txn[0] + 1 < txn[1]
        ):
            return last
        keep = self.index.count - 1 - txn[0]
        if keep < 0:
            raise IndexDamaged(f"index entry for {last.id} is inside a batch the index does not begin")
        if self.readonly:
            self.index.count = keep
        else:
            self.index.truncate_to(keep)
        if not keep:
            return None
        before = self.index.entry_at(keep - 1)
        self._check_entry(before)
        return before

    def _check_entry(self, entry: Entry) -> dict[str, Any]:
        """The log record an index entry points at, or IndexDamaged."""
        chunk, offset, length, eid = entry.chunk, entry.offset, entry.length, entry.id
        if self.readonly and chunk >= len(self.log.numbers):
            # A reader lists the chunks before it reads the index: a writer
            # that rotated in between has indexed a chunk this reader has not
            # seen. Look again before calling the index damaged (a rebuild
            # would read every chunk, and warn of damage there is none of).
            with self._state:
                try:
                    self.log.refresh()
                except (StorageError, CorruptionError):
                    self._raise_if_deleted()
                    # Not deleted: the chunks cannot be listed again (a gap in
                    # their numbers). The entry is then judged against the list
                    # this reader has, below; the rebuild that follows reads the
                    # log and reports what it finds there.
        if not 0 <= chunk < len(self.log.numbers):
            raise IndexDamaged(f"index entry for {eid} names chunk {chunk!r}")
        if length <= 0:
            raise IndexDamaged(f"index entry for {eid} has a malformed location")
        if length > self._chunk_size and offset + length > self.log.size(chunk):
            # Checked only past chunk_size (a record may outgrow a chunk, never
            # its file): a damaged huge length must not become a huge read.
            raise IndexDamaged(f"index entry for {eid} runs past the end of its chunk")
        return self.checked_line(entry, self.log.read(chunk, offset, length))

    def checked_line(self, entry: Entry, data: bytes) -> dict[str, Any]:
        """The record of ``data``, the bytes read where ``entry`` points, as
        strictly checked as a ``get`` checks it; IndexDamaged otherwise."""
        eid, chunk, offset, length = entry.id, entry.chunk, entry.offset, entry.length
        if len(data) != length or not data.endswith(b"\n"):
            raise IndexDamaged(f"index entry for {eid} does not frame a record")
        try:
            rec = decode_line(data)
        except LineError as exc:
            raise IndexDamaged(f"index entry for {eid}: {exc}") from None
        if rec.get("id") != eid or not is_event(rec):
            raise IndexDamaged(f"index entry for {eid} points at another record")
        problem = stored_record_problem(rec)
        if problem:  # a rebuild reaches the line and reports it as corruption
            raise IndexDamaged(f"index entry for {eid}: {problem}")
        if entry_of(rec, chunk, offset, length) != entry and (entry.complete or rec["parent_id"] != entry.parent_id):
            raise IndexDamaged(f"index entry for {eid} disagrees with its record")
        return rec

    def _rebuild_index(self, why: str) -> None:
        """Derive the whole index again from every chunk (a full scan)."""
        self._warn(f"index rebuilt from the chunks: {why}")
        with self._state:
            saved = None
            before = self._head, self._scan_from
            if not self.readonly:
                if self._acknowledged() is not None:
                    saved = self.index.snapshot()
                self.index.truncate_to(0)
                self.index.broken = False
            else:
                kept = self.index.count, dict(self.index.tail), self._last_id
                self.index.count = 0
            self.index.tail.clear()
            self._head = NIL_ID
            self._last_id = ""
            self._scan_from = (0, 0)
            try:
                self._scan_tail()
            except CorruptionError as exc:
                self._head, self._scan_from = before
                if self.readonly:
                    # A reader changed nothing on disk: the index it had is
                    # as good as before, and the scan met one damaged record.
                    # Go back to that index, so the events around the damage
                    # stay readable through this session.
                    self.index.count, self.index.tail, self._last_id = kept
                    raise
                # The index now stops before the damage: a later append would
                # fork off an old HEAD and lookups past it would miss. Refuse
                # further use; the next open reports the damage (repair is explicit).
                if saved is not None and self._refused_cut:
                    # Its entries are the evidence that the cut records were
                    # acknowledged: the next open (and repair) need them. (Any
                    # other damage stays behind the shortened index, where
                    # the next open meets it again.)
                    self.index.restore(saved)
                self._poisoned = exc
                raise

    def _scan_tail(self) -> None:
        """Apply every record after ``_scan_from``: complete the index, find HEAD.

        A torn final line, and a batch that a crash cut short, are cut off
        (by the writer) with a warning; any other bad line is corruption."""
        pending: list[tuple[dict[str, Any], Line]] = []
        last_chunk = len(self.log.numbers) - 1
        start_chunk, start_offset = self._scan_from
        for line in self.log.scan(start_chunk, start_offset):
            path = self.log.path(line.chunk)
            if not line.complete:
                if line.chunk != last_chunk:
                    raise CorruptionError(path, line.offset, "record cut short before the end of a non-final chunk")
                why = f"torn final record of {line.length} bytes"
                if pending:
                    why = f"batch cut short: {len(pending)} of {pending[0][0]['txn'][1]} records, then a {why}"
                self._cut_tail(line.chunk, line.offset, pending, why)
                return
            try:
                rec = decode_line(line.data)
            except LineError as exc:
                raise CorruptionError(path, line.offset, str(exc)) from None
            txn = rec.get("txn")
            if txn is not None and not (
                isinstance(txn, list)
                and len(txn) == 2
                and isinstance(txn[0], int)
                and isinstance(txn[1], int)
                and 0 <= txn[0] < txn[1]
            ):
                raise CorruptionError(path, line.offset, f"malformed batch marker {str(txn)[:60]}")
            if pending and (txn is None or txn[0] != len(pending)):
                first = pending[0][1]
                raise CorruptionError(
                    self.log.path(first.chunk),
                    first.offset,
                    "batch is missing members before the next record",
                )
            if txn is not None:
                if txn[0] != len(pending):
                    raise CorruptionError(path, line.offset, "batch member out of order")
                pending.append((rec, line))
                if len(pending) < txn[1]:
                    continue
                group, pending = pending, []
            else:
                group = [(rec, line)]
            self._apply(group)
        if pending:
            first = pending[0][1]
            self._cut_tail(
                first.chunk,
                first.offset,
                pending,
                f"batch cut short: {len(pending)} of {pending[0][0]['txn'][1]} records",
            )

    def _cut_tail(self, chunk: int, offset: int, pending: list[tuple[dict[str, Any], Line]], why: str) -> None:
        """Cut off what a crash left unfinished at the end of the log: kept
        aside in the chunk's quarantine file, never deleted. A tail the
        index shows was acknowledged (synced, then indexed) is not a crash's
        and is not cut: the log was damaged after the fact (a chunk cut
        short by hand, a copy, a disk), which only fsck --repair mends,
        keeping every intact record."""
        if pending:
            first = pending[0][1]
            chunk, offset = first.chunk, first.offset
        path = self.log.path(chunk)
        acknowledged = self._acknowledged()
        if acknowledged is not None and (chunk, offset) < acknowledged:
            self._refused_cut = True
            raise CorruptionError(
                path,
                offset,
                f"{why}, where the index shows records acknowledged up to byte {acknowledged[1]} of chunk "
                f"{acknowledged[0]}: the log was cut short after they were synced (damage, not a crash); "
                "nothing was removed; fsck --repair keeps every intact record",
            )
        if self.readonly:
            return  # a writer may be mid-append; readers never see it
        size = self.log.size(chunk)
        kept = set_aside(self.fs, path, self.log.read(chunk, offset, size - offset))
        self._warn(f"{path} truncated at byte {offset}: {why}; the {size - offset} bytes cut off are kept in {kept}")
        self.log.truncate(chunk, offset)

    def _apply(self, group: list[tuple[dict[str, Any], Line]]) -> None:
        if not self.readonly and self.durable and not self._tail_synced:
            # Recovery adopts records it found after the index: a crash may
            # have come between their write and its sync, and an entry must
            # never reach the disk before its record (the index's mark).
            for number in range(group[0][1].chunk, len(self.log.numbers)):
                self.log.sync_chunk(number)
            self._tail_synced = True
        entries: list[Placed] = []
        for rec, line in group:
            if is_event(rec):
                problem = stored_record_problem(rec)
                if not problem and rec["id"] <= self._last_id:
                    problem = f"event id {rec['id']} does not increase"
                if problem:
                    raise CorruptionError(self.log.path(line.chunk), line.offset, problem)
                self._last_id = rec["id"]
                entries.append((rec, line.chunk, line.offset, line.length))
                self._head = rec["id"]
            elif rec.get("op") == "checkout" and is_event_id(rec.get("head")):
                self._head = rec["head"]
            else:
                raise CorruptionError(self.log.path(line.chunk), line.offset, f"unknown record {str(rec)[:60]}")
        last = group[-1][1]
        self._scan_from = (last.chunk, last.offset + last.length)
        if entries:
            self.index.add_records(entries)

    def _sync_head_file(self) -> None:
        """Bring the HEAD file in line with the log (a cache; no sync needed)."""
        path = self.layout.head(self.session_id)
        try:
            current = self.fs.read_file(path).decode("ascii", "replace").strip()
        except StorageError:
            current = None
        if current != self._head or self.fs.exists(path + ".tmp"):
            try:
                self.fs.write_atomic(path, self._head.encode() + b"\n", durable=False)
            except StorageError as exc:
                # The log holds every commit already acknowledged: failing the
                # close (a full disk, say) would report a stored event as lost,
                # and a retry would store it twice. The file is derived.
                self._warn(f"the HEAD file was not updated ({exc.detail}); it is a cache the next writer corrects")

    def refresh(self) -> None:
        """A reader picks up what the writer appended since it opened."""
        if not self.readonly:
            return
        with self._state:
            try:
                self.log.refresh()
            except (StorageError, CorruptionError):
                self._raise_if_deleted()
                raise
            self._scan_tail()

    def _raise_if_deleted(self) -> None:
        """Deleted by another process while this reader had it open: a
        missing file then means the session is gone, not that it is damaged
        (``delete`` renames the whole directory away first)."""
        if not self.fs.exists(self.dir):
            raise SessionNotFound(self.session_id) from None

    # --- checks ------------------------------------------------------------
    def _check_writable(self) -> None:
        if self._closed:
            raise SessionClosed(self.session_id)
        if self.readonly:
            raise ReadOnlySession(self.session_id)
        if self._poisoned is not None:
            raise SessionPoisoned(self.session_id, self._poisoned)

    # --- sidecars ----------------------------------------------------------
    def write_sidecar(self, name: str, data: bytes | None) -> None:
        """Replace (or with None remove) ``artifacts/<name>`` atomically."""
        self._check_writable()
        directory = self.layout.artifacts(self.session_id)
        path = os.path.join(directory, check_sidecar_name(name))
        if data is None:
            if self.fs.exists(path):
                self.fs.unlink(path)
                if self.durable:
                    self.fs.fsync_dir(directory)
            return
        if not self.fs.exists(directory):
            self.fs.mkdir(directory)
            if self.durable:
                self.fs.fsync_dir(self.dir)
        self.fs.write_atomic(path, data, durable=self.durable)

    def read_sidecar(self, name: str) -> bytes | None:
        path = os.path.join(self.layout.artifacts(self.session_id), check_sidecar_name(name))
        if not self.fs.exists(path):
            return None
        return self.fs.read_file(path)

    def sidecar_names(self) -> list[str]:
        directory = self.layout.artifacts(self.session_id)
        if not self.fs.exists(directory):
            return []
        names = []
        for name in sorted(self.fs.listdir(directory)):
            # artifacts_dir is also the session's directory for its own files:
            # a subdirectory, or a name read_sidecar refuses ("my notes.md"),
            # is not a sidecar (copy would fail on it, reading it as one).
            try:
                check_sidecar_name(name)
            except InvalidName:
                continue  # not a sidecar's name (the comment above): left where it is
            if stat.S_ISREG(self.fs.stat(os.path.join(directory, name)).st_mode):
                names.append(name)
        return names

    def artifacts_dir(self) -> str | None:
        return self.layout.artifacts(self.session_id)

    # --- reads ---------------------------------------------------------------
    def head(self) -> str:
        return self._head

    def last_id(self) -> str:
        return self._last_id

    def _lookup(self, event_id: str) -> Entry | None:
        with self._state:
            try:
                return self.index.lookup(event_id)
            except IndexDamaged as exc:
                self._rebuild_index(str(exc))
                return self.index.lookup(event_id)

    def ancestors(
        self,
        from_id: str,
        *,
        limit: int | None = None,
        until_kind: str | None = None,
        until_id: str | None = None,
    ) -> list[Event]:
        """The path read backwards in large blocks of the log (``pathread``)."""
        self._check_open()
        return read_ancestors(self, from_id, limit=limit, until_kind=until_kind, until_id=until_id)

    def contains(self, event_id: str) -> bool:
        self._check_open()
        return self._lookup(event_id) is not None

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed(self.session_id)
        if isinstance(self._poisoned, CorruptionError):
            exc = self._poisoned
            raise CorruptionError(exc.path, exc.offset, exc.reason)

    def get(self, event_id: str) -> Event:
        self._check_open()
        entry = self._lookup(event_id)
        if entry is None:
            raise EventNotFound(event_id, self.session_id)
        try:
            rec = self._check_entry(entry)
        except IndexDamaged as exc:
            with self._state:
                self._rebuild_index(str(exc))
            entry = self._lookup(event_id)
            if entry is None:
                raise EventNotFound(event_id, self.session_id) from None
            try:
                rec = self._check_entry(entry)
            except IndexDamaged as exc2:  # the rebuilt index read the log: it is the log
                raise CorruptionError(self.log.path(entry.chunk), entry.offset, str(exc2)) from None
        return event_of(rec)

    def events(self) -> Iterator[Event]:
        """Every event in log order, the log read in large blocks (``scan``)."""
        self._check_open()
        return scan_events(self, self._index_items())

    def has_children(self, event_id: str) -> bool:
        self._check_open()
        if event_id != NIL_ID and event_id == self._last_id:
            return False  # children sort after their parent: the newest has none
        with self._state:
            try:
                return self.index.has_child(event_id)
            except IndexDamaged as exc:
                self._rebuild_index(str(exc))
                return self.index.has_child(event_id)

    def entries(self) -> Iterator[IndexEntry]:
        self._check_open()
        for e in self._index_items():
            yield entry_to_index(e if e.complete else self._completed(e))

    def _index_items(self) -> list[Entry]:
        with self._state:
            try:
                return list(self.index)
            except IndexDamaged as exc:
                self._rebuild_index(str(exc))
                return list(self.index)

    def _completed(self, entry: Entry) -> Entry:
        """An entry with the fields the index could not hold, from its record."""
        try:
            rec = self._check_entry(entry)
        except IndexDamaged as exc:
            raise CorruptionError(self.log.path(entry.chunk), entry.offset, str(exc)) from None
        return entry_of(rec, entry.chunk, entry.offset, entry.length)

    def event_count(self) -> int:
        return len(self.index)

    def get_blob(self, digest: str) -> bytes:
        self._check_open()
        try:
            return self.blobs.get(digest)
        except (StorageError, CorruptionError):
            self._raise_if_deleted()
            raise

    def read_meta(self) -> dict[str, Any]:
        try:
            return read_meta_file(self.fs, self.layout.meta(self.session_id), self.session_id)
        except (StorageError, CorruptionError):
            self._raise_if_deleted()
            raise

    def write_meta(self, meta: dict[str, Any]) -> None:
        self._check_writable()
        self.fs.write_atomic(
            self.layout.meta(self.session_id),
            encode_meta(meta),
            durable=self.durable,
        )

    def set_updated_ns(self, updated_ns: int) -> None:
        self._check_writable()
        # Listing dates a session by its index file's mtime (one stat).
        self.fs.set_mtime(self.layout.index(self.session_id), updated_ns)

    # --- closing -------------------------------------------------------------
    def _close_files(self) -> None:
        _close_quietly(self.log)
        _close_quietly(self.index)

    def close(self) -> None:
        if self._closed:
            return
        self._stop_writes()  # commits nobody waited for are written, not dropped
        try:
            if not self.readonly and self._poisoned is None:
                self._sync_head_file()
        finally:
            self._close_files()

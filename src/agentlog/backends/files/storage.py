"""One session of the embedded file backend: its files opened, its reads,
its meta, and closing.

The parts it is made of live beside it: opening and recovery in
recovery.py, applying the log's tail in log_tail.py, sidecars in
sidecars.py, group commit in groupcommit.py, the state they share in
session_base.py; the line shapes are in lines.py.

The write path costs one ``fdatasync`` per group of concurrent appends:
blobs first (each synced, then their directory once), then every line of
the group in one ``write`` to the chunk, then one ``fdatasync``. The index
and the HEAD file are derived caches written without syncs; opening
validates them against the log and completes them from its tail
(invariant 2), so the log alone decides what happened.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Iterator
from typing import Any

from ..._fs import OsFs
from ...errors import CorruptionError, EventNotFound, SessionClosed, StorageError
from ...event import NIL_ID, Event
from ..base import IndexEntry, SessionStorage
from .blobs import BlobStore
from .chunklog import ChunkLog
from .groupcommit import GroupCommit
from .index import Entry, Index, IndexDamaged, entry_of
from .layout import Layout
from .legacy_index import LegacyIndex
from .lines import entry_to_index, event_of
from .meta import encode_meta, read_meta_file
from .pathread import read_ancestors
from .recovery import FileRecovery
from .scan import scan_events
from .sidecars import FileSidecars

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


# GroupCommit comes after the parts: its ``_check_writable`` is a stub that
# FileSessionBase's (reached through them) must come before.
class FileSessionStorage(FileRecovery, FileSidecars, GroupCommit, SessionStorage):
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

"""Group commit for one file session: one ``fdatasync`` per group of commits.

``commit()`` only queues; the first waiter that finds no write in progress
becomes the leader and writes everything queued: blobs first (each synced,
then their directory once), then every line of the group in one ``write``
to the chunk, then one ``fdatasync``. A commit whose expected HEAD is not
the HEAD before it fails, and so does every commit queued behind it.
"""

from __future__ import annotations

import collections
import threading
from typing import Any

from ..._fs import OsFs
from ...errors import HeadConflict, SessionClosed, SessionPoisoned, StorageError
from ..base import BlobCopy, Commit, Ticket
from .blobs import BlobStore
from .chunklog import ChunkLog
from .index import Index, entry_of
from .lines import frame_commit

__all__ = ["GroupCommit"]


class _Request:
    """A submitted commit waiting in the group-commit queue."""

    __slots__ = ("commit", "done", "error")

    def __init__(self, commit: Commit) -> None:
        self.commit = commit
        self.done = False
        self.error: BaseException | None = None


class _FileTicket(Ticket):
    __slots__ = ("_storage", "_request")

    def __init__(self, storage: GroupCommit, request: _Request) -> None:
        super().__init__()
        self._storage = storage
        self._request = request

    def wait(self) -> None:
        self._storage._finish(self._request)


class GroupCommit:
    """The write path of ``FileSessionStorage`` (which sets these attributes)."""

    session_id: str
    fs: OsFs
    log: ChunkLog
    index: Index
    blobs: BlobStore
    _cv: threading.Condition
    _state: threading.RLock
    _queue: collections.deque[_Request]
    _writing: bool
    _closed: bool
    _poisoned: BaseException | None
    _head: str
    _last_id: str
    _scan_from: tuple[int, int]

    def _start_group_commit(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._queue = collections.deque()
        self._writing = False  # a leader is writing a group

    def _check_writable(self) -> None:
        raise NotImplementedError  # the storage says when it may write

    def commit(self, commit: Commit) -> Ticket:
        """Queue ``commit``; its ticket's ``wait()`` writes it (group commit)."""
        self._check_writable()
        req = _Request(commit)
        with self._cv:
            self._queue.append(req)
        return _FileTicket(self, req)

    def _finish(self, req: _Request) -> None:
        """Group commit: a waiter finding no write in progress becomes the
        leader and writes everything queued with one sync; the others wait."""
        while True:
            with self._cv:
                while not req.done and self._writing:
                    self._cv.wait()
                if req.done:
                    break
                self._writing = True
                group = list(self._queue)
                self._queue.clear()
            try:
                self._write_group(group)
            finally:
                with self._cv:
                    for r in group:
                        r.done = True
                    self._writing = False
                    self._cv.notify_all()
        if req.error is not None:
            raise req.error

    def _write_group(self, group: list[_Request]) -> None:
        """Write the commits of ``group`` that apply, in order, with one sync.

        A commit whose expected HEAD is not the HEAD before it fails, and so
        does every commit after it in the group (they build on it)."""
        failure: BaseException | None = None
        if self._poisoned is not None:
            failure = SessionPoisoned(self.session_id, self._poisoned)
        elif self._closed:
            failure = SessionClosed(self.session_id)
        head = self._head
        lines: list[bytes] = []
        records: list[dict[str, Any] | None] = []
        blobs: dict[str, bytes | BlobCopy] = {}
        written: list[_Request] = []
        for req in group:
            c = req.commit
            if failure is None and c.expected_head != head:
                failure = HeadConflict(self.session_id, c.expected_head, head)
            if failure is not None:
                req.error = failure
                continue
            more_lines, more_records = frame_commit(c)
            lines += more_lines
            records += more_records
            blobs.update(c.blobs)
            head = c.head
            written.append(req)
        if not written:
            return
        try:
            self._write_lines(lines, records, blobs, head)
        except BaseException as exc:  # every commit of the group gets the failure
            for r in written:
                r.error = exc

    def _write_lines(
        self,
        lines: list[bytes],
        records: list[dict[str, Any] | None],
        blobs: dict[str, bytes | BlobCopy],
        head: str,
    ) -> None:
        total = sum(map(len, lines))
        if self.log.needs_rotation(total):
            self.log.rotate()
        chunk, start = self.log.current, self.log.end
        wrote_blob = False
        for digest, blob in blobs.items():
            wrote_blob |= self._put_blob(digest, blob)
        if wrote_blob:
            self.blobs.sync_dir()
        try:
            self.log.append(b"".join(lines))
            self.log.sync()
        except StorageError as exc:
            self._rollback(chunk, start, exc)
            raise
        entries = []
        offset = start
        for line, obj in zip(lines, records, strict=True):
            if obj is not None:
                entries.append(entry_of(obj, chunk, offset, len(line)))
                self._last_id = obj["id"]
            offset += len(line)
        with self._state:
            self._head = head
            self._scan_from = (chunk, offset)
            if entries:
                self.index.add(entries)

    def _put_blob(self, digest: str, blob: bytes | BlobCopy) -> bool:
        """Store one blob (before any event names it); True if its directory
        entry may need a sync. A blob of another file session is hard-linked:
        blobs are immutable and every load verifies its digest, so sharing
        the inode is safe and costs no read."""
        if isinstance(blob, bytes):
            return self.blobs.put(digest, blob)
        if self.fs.exists(self.blobs.path(digest)):
            return self.blobs.unsynced
        source = blob.source
        if isinstance(source, GroupCommit):
            try:
                self.fs.link(source.blobs.path(digest), self.blobs.path(digest))
                self.blobs.unsynced = True
                return True
            except StorageError:
                pass  # another file system, or no link support: copy below
        return self.blobs.put(digest, source.get_blob(digest))

    def _rollback(self, chunk: int, size: int, cause: BaseException) -> None:
        """Cut a failed write off so it is never glued to the next record."""
        try:
            self.log.truncate(chunk, size)
        except StorageError:
            self._poisoned = cause

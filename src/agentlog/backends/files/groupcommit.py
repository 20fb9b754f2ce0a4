"""Group commit for one file session: one ``fdatasync`` per group of commits.

``commit()`` only queues; the first waiter that finds no write in progress
becomes the leader and writes everything queued: blobs first (each synced,
then their directory once), then every line of the group in one ``write``
to the chunk, then one ``fdatasync``. A commit whose expected HEAD is not
the HEAD before it fails, and so does every commit queued behind it.

Waking is targeted, because every wake-up costs a GIL hand-off: a waiter
blocks on a lock of its own, the leader releases exactly the waiters of
the commits it wrote, then passes the lead to the first queued commit
whose thread is already waiting (so the group that queued during its sync
is written next without a thundering herd). An append nobody else
competes with takes no wait at all: it leads its own group.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ..._fs import OsFs
from ...errors import HeadConflict, SessionClosed, SessionPoisoned, StorageError
from ..base import BlobCopy, Commit, Ticket
from .blobs import BlobStore
from .chunklog import ChunkLog
from .index import Index, Placed
from .lines import frame_commit

__all__ = ["GroupCommit"]

_Lines = list[bytes]
_Records = list[dict[str, Any] | None]


class _Request(Ticket):
    """A submitted commit and its own ticket, completed by a group's leader.

    Its lines are framed when it is submitted, by the submitting thread, so
    that a leader between two syncs only checks HEAD, joins and writes."""

    __slots__ = ("_storage", "commit", "lines", "records", "settled", "waiters")

    def __init__(self, storage: GroupCommit, commit: Commit) -> None:
        self._error: BaseException | None = None  # Ticket's slot, set without a super() call
        self._storage = storage
        self.commit = commit
        self.lines, self.records = frame_commit(commit)
        self.settled = False  # set (under the queue lock) after ``_error``
        self.waiters: list[threading.Lock] | None = None  # held locks of threads blocked on it

    def wait(self) -> None:
        if not self.settled:
            self._storage._finish(self)
        if self._error is not None:
            raise self._error


def _wake(req: _Request) -> None:
    """Release the threads blocked on ``req`` (caller holds the queue lock)."""
    waiters, req.waiters = req.waiters, None
    if waiters:
        for lock in waiters:
            lock.release()


class GroupCommit:
    """The write path of ``FileSessionStorage`` (which sets these attributes)."""

    session_id: str
    fs: OsFs
    log: ChunkLog
    index: Index
    blobs: BlobStore
    _state: threading.RLock
    _closed: bool
    _poisoned: BaseException | None
    _head: str
    _last_id: str
    _scan_from: tuple[int, int]

    def _start_group_commit(self) -> None:
        self._mu = threading.Lock()  # guards the four below; never held across I/O
        self._queue: list[_Request] = []
        self._writing = False  # a leader is writing a group
        self._inflight: _Request | None = None  # the last commit of that group

    def _check_writable(self) -> None:
        raise NotImplementedError  # the storage says when it may write

    def commit(self, commit: Commit) -> Ticket:
        """Queue ``commit``; its ticket's ``wait()`` writes it (group commit)."""
        self._check_writable()
        req = _Request(self, commit)
        with self._mu:
            self._queue.append(req)
        return req

    def _finish(self, req: _Request) -> None:
        """Return once ``req`` is written (or has failed): lead a group if
        no write is in progress, else block until a leader wakes us."""
        mu = self._mu
        while True:
            mu.acquire()
            if req.settled:
                mu.release()
                return
            if self._writing:
                lock = threading.Lock()
                lock.acquire()
                if req.waiters is None:
                    req.waiters = [lock]
                else:
                    req.waiters.append(lock)
                mu.release()
                lock.acquire()  # released by the leader that wrote req, or passed us the lead
                continue
            self._writing = True
            group, self._queue = self._queue, []  # req is in it: nothing was in flight
            self._inflight = group[-1] if group else None
            mu.release()
            try:
                self._write_group(group)
            except BaseException as exc:  # bookkeeping failed (a bug, an interrupt): nothing is acknowledged
                for r in group:
                    if r._error is None:
                        r._error = exc
            finally:
                with mu:
                    for r in group:
                        r.settled = True
                        if r.waiters is not None:
                            _wake(r)
                    self._writing = False
                    self._inflight = None
                    for r in self._queue:  # pass the lead to a thread already waiting
                        if r.waiters is not None:
                            _wake(r)
                            break

    def _stop_writes(self) -> None:
        """Write what is queued (commits nobody waited for are written, not
        dropped), wait for a group in flight, then refuse further commits."""
        while True:
            with self._mu:
                target = self._queue[-1] if self._queue else self._inflight
                if target is None:
                    self._closed = True
                    return
            self._finish(target)  # a failure stays on its ticket, for its submitter to report

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
        if len(group) == 1 and failure is None:  # the common case: a group of one
            req = group[0]
            c = req.commit
            if c.expected_head != head:
                req._error = HeadConflict(self.session_id, c.expected_head, head)
                return
            try:
                self._write_lines(req.lines, req.records, c.blobs, c.head)
            except BaseException as exc:
                req._error = exc
            return
        lines: _Lines = []
        records: _Records = []
        blobs: dict[str, bytes | BlobCopy] = {}
        written: list[_Request] = []
        for req in group:
            c = req.commit
            if failure is None and c.expected_head != head:
                failure = HeadConflict(self.session_id, c.expected_head, head)
            if failure is not None:
                req._error = failure
                continue
            lines += req.lines
            records += req.records
            if c.blobs:
                blobs.update(c.blobs)
            head = c.head
            written.append(req)
        if not written:
            return
        try:
            self._write_lines(lines, records, blobs, head)
        except BaseException as exc:  # every commit of the group gets the failure
            for r in written:
                r._error = exc

    def _write_lines(
        self,
        lines: _Lines,
        records: _Records,
        blobs: Mapping[str, bytes | BlobCopy],
        head: str,
    ) -> None:
        """Blobs, then the lines in one write and one sync; then the derived
        state. Only the log and its sync must precede the acknowledgement:
        HEAD and the index are caches that the next open completes."""
        log = self.log
        data = lines[0] if len(lines) == 1 else b"".join(lines)
        if log.needs_rotation(len(data)):
            log.rotate()
        chunk, start = log.current, log.end
        if blobs:
            wrote_blob = False
            for digest, blob in blobs.items():
                wrote_blob |= self._put_blob(digest, blob)
            if wrote_blob:
                self.blobs.sync_dir()
        try:
            log.append(data)
            log.sync()
        except StorageError as exc:
            self._rollback(chunk, start, exc)
            raise
        end = start + len(data)
        last = None
        placed: list[Placed]
        if len(lines) == 1:  # an append: one line, one entry
            last = records[0]
            placed = [] if last is None else [(last, chunk, start, end - start)]
        else:
            placed = []
            offset = start
            for line, obj in zip(lines, records, strict=True):
                if obj is not None:
                    placed.append((obj, chunk, offset, len(line)))
                    last = obj
                offset += len(line)
        with self._state:
            self._head = head
            self._scan_from = (chunk, end)
            if last is not None:
                self._last_id = last["id"]
                self.index.add_records(placed)

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

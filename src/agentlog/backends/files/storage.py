"""One session of the embedded file backend: recovery, group commit, reads.

The write path costs one ``fdatasync`` per group of concurrent appends:
blobs first (each synced, then their directory once), then every line of
the group in one ``write`` to the chunk, then one ``fdatasync``. The index
and the HEAD file are derived caches written without syncs; opening
validates them against the log and completes them from its tail
(invariant 2), so the log alone decides what happened.
"""

from __future__ import annotations

import collections
import os
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import orjson

from ..._codec import LineError, decode_line, encode_line
from ..._fs import OsFs
from ...errors import (
    AgentlogError,
    CorruptionError,
    EventNotFound,
    HeadConflict,
    ReadOnlySession,
    RecoveryWarning,
    SessionClosed,
    SessionPoisoned,
    StorageError,
)
from ...event import NIL_ID, Event, check_sidecar_name, format_timestamp, is_event_id, stored_record_problem
from ..base import BlobCopy, Commit, IndexEntry, SessionStorage, Ticket
from .blobs import BlobStore
from .chunklog import ChunkLog, Line
from .index import Index, IndexDamaged
from .layout import Layout
from .meta import read_meta_file
from .pathread import read_ancestors

__all__ = ["FileSessionStorage"]


class _Request:
    """A submitted commit waiting in the group-commit queue."""

    __slots__ = ("commit", "done", "error")

    def __init__(self, commit: Commit) -> None:
        self.commit = commit
        self.done = False
        self.error: BaseException | None = None


class _FileTicket(Ticket):
    __slots__ = ("_storage", "_request")

    def __init__(self, storage: FileSessionStorage, request: _Request) -> None:
        super().__init__()
        self._storage = storage
        self._request = request

    def wait(self) -> None:
        self._storage._finish(self._request)


def _entry_to_index(e: dict[str, Any]) -> IndexEntry:
    return IndexEntry(
        e["id"],
        e["parent_id"],
        e.get("branch_from"),
        e["kind"],
        e.get("role"),
        e["timestamp"],
        e.get("digest"),
    )


def _index_entry(rec: dict[str, Any], chunk: int, offset: int, length: int) -> dict[str, Any]:
    return {
        "id": rec["id"],
        "parent_id": rec["parent_id"],
        "branch_from": rec.get("branch_from"),
        "kind": rec["kind"],
        "role": rec.get("role"),
        "timestamp": rec["timestamp"],
        "location": {"chunk": chunk, "offset": offset, "length": length},
        "digest": rec.get("digest"),
    }


def _is_event(rec: dict[str, Any]) -> bool:
    return "op" not in rec


def _close_quietly(part: ChunkLog | Index) -> None:
    try:
        part.close()
    except StorageError:
        pass  # closing a descriptor after its data is synced (or never written) loses nothing


def _frame(commit: Commit) -> tuple[list[bytes], list[dict[str, Any] | None]]:
    """The log lines of one commit: its events, then a checkout record when
    HEAD does not end on the last of them; members of a commit of more than
    one line carry ``txn`` markers so a crash keeps all or none."""
    objs: list[dict[str, Any]] = [
        {
            "id": e.id,
            "parent_id": e.parent_id,
            "branch_from": e.branch_from,
            "kind": e.kind,
            "role": e.role,
            "timestamp": e.timestamp,
            "record": None if e.payload is None else orjson.Fragment(e.payload),
            "digest": e.digest,
        }
        for e in commit.events
    ]
    if not commit.events or commit.events[-1].id != commit.head:
        stamp = commit.events[-1].timestamp if commit.events else format_timestamp(time.time_ns())
        objs.append({"op": "checkout", "head": commit.head, "timestamp": stamp})
    n = len(objs)
    if n > 1:
        for i, obj in enumerate(objs):
            obj["txn"] = [i, n]
    return [encode_line(obj) for obj in objs], [obj if _is_event(obj) else None for obj in objs]


class FileSessionStorage(SessionStorage):
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
        self._cv = threading.Condition(threading.Lock())
        self._state = threading.RLock()
        self._queue: collections.deque[_Request] = collections.deque()
        self._closed = False
        self._poisoned: BaseException | None = None
        self._head = NIL_ID
        self._writing = False  # a group-commit leader is writing
        self._last_id = ""  # the newest event applied: ids must increase (invariant 11)
        self.warnings: list[str] = []
        self.blobs = BlobStore(fs, layout.blobs(session_id), durable=durable)
        writable = not readonly
        self.log = ChunkLog(fs, layout.chunks(session_id), chunk_size=chunk_size, durable=durable, writable=writable)
        try:
            self.index = Index(fs, layout.index(session_id), writable=writable)
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
        self._head = NIL_ID
        self._last_id = ""  # the newest event applied: ids must increase (invariant 11)
        self._scan_from = (0, 0)
        try:
            last = self.index.last()
            if last is not None:
                last = self._resume_entry(last, self._check_entry(last))
        except IndexDamaged as exc:
            self._rebuild_index(str(exc))
        else:
            if last is not None:
                loc = last["location"]
                self._head = self._last_id = last["id"]
                self._scan_from = (loc["chunk"], loc["offset"] + loc["length"])
            self._scan_tail()
        if writable:
            self._sync_head_file()

    def _resume_entry(self, last: dict[str, Any], rec: dict[str, Any]) -> dict[str, Any] | None:
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
            raise IndexDamaged(f"index entry for {last['id']} is inside a batch the index does not begin")
        if self.readonly:
            self.index.count = keep
        else:
            self.index.truncate_to(keep)
        if not keep:
            return None
        before = self.index.entry_at(keep - 1)
        self._check_entry(before)
        return before

    def _check_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """The log record an index entry points at, or IndexDamaged."""
        loc = entry.get("location") or {}
        try:
            chunk, offset, length = loc["chunk"], loc["offset"], loc["length"]
        except (KeyError, TypeError):
            raise IndexDamaged(f"index entry for {entry.get('id')} has no location") from None
        if not (isinstance(chunk, int) and 0 <= chunk < len(self.log.numbers)):
            raise IndexDamaged(f"index entry for {entry['id']} names chunk {chunk!r}")
        if not (isinstance(offset, int) and isinstance(length, int) and offset >= 0 and length > 0):
            raise IndexDamaged(f"index entry for {entry['id']} has a malformed location")
        if length > self._chunk_size and offset + length > self.log.size(chunk):
            # Checked only past chunk_size (a record may outgrow a chunk, never
            # its file): a damaged huge length must not become a huge read.
            raise IndexDamaged(f"index entry for {entry['id']} runs past the end of its chunk")
        data = self.log.read(chunk, offset, length)
        if len(data) != length or not data.endswith(b"\n"):
            raise IndexDamaged(f"index entry for {entry['id']} does not frame a record")
        try:
            rec = decode_line(data)
        except LineError as exc:
            raise IndexDamaged(f"index entry for {entry['id']}: {exc}") from None
        if rec.get("id") != entry["id"] or not _is_event(rec):
            raise IndexDamaged(f"index entry for {entry['id']} points at another record")
        problem = stored_record_problem(rec)
        if problem:  # a rebuild reaches the line and reports it as corruption
            raise IndexDamaged(f"index entry for {entry['id']}: {problem}")
        return rec

    def _rebuild_index(self, why: str) -> None:
        """Derive the whole index again from every chunk (a full scan)."""
        self._warn(f"index rebuilt from the chunks: {why}")
        with self._state:
            if not self.readonly:
                self.index.truncate_to(0)
                self.index.broken = False
            else:
                self.index.count = 0
            self.index.tail.clear()
            saved = self._head, self._scan_from
            self._head = NIL_ID
            self._last_id = ""
            self._scan_from = (0, 0)
            try:
                self._scan_tail()
            except CorruptionError as exc:
                # The index now stops before the damage: a later append would
                # fork off an old HEAD and lookups past it would miss. Refuse
                # further use; the next open reports the damage (repair is explicit).
                self._head, self._scan_from = saved
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
                self._cut_tail(line.chunk, line.offset, pending, f"torn final record of {line.length} bytes")
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
        if pending:
            first = pending[0][1]
            chunk, offset = first.chunk, first.offset
        if self.readonly:
            return  # a writer may be mid-append; readers never see it
        self._warn(f"{self.log.path(chunk)} truncated at byte {offset}: {why}")
        self.log.truncate(chunk, offset)

    def _apply(self, group: list[tuple[dict[str, Any], Line]]) -> None:
        entries = []
        for rec, line in group:
            if _is_event(rec):
                problem = stored_record_problem(rec)
                if not problem and rec["id"] <= self._last_id:
                    problem = f"event id {rec['id']} does not increase"
                if problem:
                    raise CorruptionError(self.log.path(line.chunk), line.offset, problem)
                self._last_id = rec["id"]
                entries.append(_index_entry(rec, line.chunk, line.offset, line.length))
                self._head = rec["id"]
            elif rec.get("op") == "checkout" and is_event_id(rec.get("head")):
                self._head = rec["head"]
            else:
                raise CorruptionError(self.log.path(line.chunk), line.offset, f"unknown record {str(rec)[:60]}")
        last = group[-1][1]
        self._scan_from = (last.chunk, last.offset + last.length)
        if entries:
            self.index.add(entries)

    def _sync_head_file(self) -> None:
        """Bring the HEAD file in line with the log (a cache; no sync needed)."""
        path = self.layout.head(self.session_id)
        try:
            current = self.fs.read_file(path).decode("ascii", "replace").strip()
        except StorageError:
            current = None
        if current != self._head or self.fs.exists(path + ".tmp"):
            self.fs.write_atomic(path, self._head.encode() + b"\n", durable=False)

    def refresh(self) -> None:
        """A reader picks up what the writer appended since it opened."""
        if not self.readonly:
            return
        with self._state:
            self.log.refresh()
            self._scan_tail()

    # --- the write path ---------------------------------------------------
    def _check_writable(self) -> None:
        if self._closed:
            raise SessionClosed(self.session_id)
        if self.readonly:
            raise ReadOnlySession(self.session_id)
        if self._poisoned is not None:
            raise SessionPoisoned(self.session_id, self._poisoned)

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
            more_lines, more_records = _frame(c)
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
                entries.append(_index_entry(obj, chunk, offset, len(line)))
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
        if isinstance(source, FileSessionStorage):
            try:
                self.fs.link(source.blobs.path(digest), self.blobs.path(digest))
                self.blobs.unsynced = True
                return True
            except StorageError:
                pass  # another file system, or no link support: copy below
        return self.blobs.put(digest, source.get_blob(digest))

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
        return sorted(n for n in self.fs.listdir(directory) if not n.endswith(".tmp"))

    def artifacts_dir(self) -> str | None:
        return self.layout.artifacts(self.session_id)

    def _rollback(self, chunk: int, size: int, cause: BaseException) -> None:
        """Cut a failed write off so it is never glued to the next record."""
        try:
            self.log.truncate(chunk, size)
        except StorageError:
            self._poisoned = cause

    # --- reads ---------------------------------------------------------------
    def head(self) -> str:
        return self._head

    def last_id(self) -> str:
        return self._last_id

    def _lookup(self, event_id: str) -> dict[str, Any] | None:
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
                loc = entry["location"]
                raise CorruptionError(self.log.path(loc["chunk"]), loc["offset"], str(exc2)) from None
        return Event(
            rec["id"],
            rec["parent_id"],
            rec["kind"],
            rec.get("role"),
            rec["timestamp"],
            rec.get("record"),
            rec.get("digest"),
            rec.get("branch_from"),
        )

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
        with self._state:
            try:
                items = list(self.index)
            except IndexDamaged as exc:
                self._rebuild_index(str(exc))
                items = list(self.index)
        for e in items:
            yield _entry_to_index(e)

    def event_count(self) -> int:
        return len(self.index)

    def get_blob(self, digest: str) -> bytes:
        self._check_open()
        return self.blobs.get(digest)

    def read_meta(self) -> dict[str, Any]:
        return read_meta_file(self.fs, self.layout.meta(self.session_id))

    def write_meta(self, meta: dict[str, Any]) -> None:
        self._check_writable()
        self.fs.write_atomic(
            self.layout.meta(self.session_id),
            orjson.dumps(meta, option=orjson.OPT_INDENT_2),
            durable=self.durable,
        )

    # --- closing -------------------------------------------------------------
    def _close_files(self) -> None:
        _close_quietly(self.log)
        _close_quietly(self.index)

    def close(self) -> None:
        if self._closed:
            return
        with self._cv:
            pending = self._queue[-1] if self._queue else None
        if pending is not None:
            try:
                self._finish(pending)  # commits nobody waited for are written, not dropped
            except AgentlogError:
                pass  # that commit's submitter is told by its own ticket
        with self._cv:
            while self._writing:
                self._cv.wait()
            self._closed = True
        try:
            if not self.readonly and self._poisoned is None:
                self._sync_head_file()
        finally:
            self._close_files()

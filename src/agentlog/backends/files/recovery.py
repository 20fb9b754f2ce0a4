"""Opening a file session: the index checked against the log, and rebuilt
from it when it cannot be believed (invariant 2, 3, 5).

Opening trusts the index's last entry only after reading the record it
frames, then applies the log after it (log_tail.py). A damaged entry met
later, on a read, rebuilds the whole index from every chunk. The HEAD file
is a cache brought in line with the log. A reader picks up what the
writer appended since it opened (``refresh``).
"""

from __future__ import annotations

from typing import Any

from ..._codec import LineError, batch_marker, decode_line
from ...errors import CorruptionError, StorageError
from ...event import NIL_ID, stored_record_problem
from .index import Entry, IndexDamaged, entry_of
from .lines import is_event
from .log_tail import LogTail

__all__ = ["FileRecovery"]


class FileRecovery(LogTail):
    """Opening and recovery; the reads call ``_check_entry`` and
    ``_rebuild_index`` when an entry is damaged."""

    # --- opening and recovery (invariant 2, 3, 5) ----------------------------
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

    def _resume_entry(self, last: Entry, rec: dict[str, Any]) -> Entry | None:
        """The index entry the log scan resumes after. An index write cut at a
        line boundary (a crash; a reader racing the writer) can end inside a
        batch: then the batch's entries are set aside and it is rescanned whole."""
        marker = batch_marker(rec.get("txn"))
        if marker is None or marker[0] + 1 == marker[1]:  # not in a batch, or its last line
            return last
        keep = self.index.count - 1 - marker[0]
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

"""Applying the log's tail: every record after the index's last entry.

Opening, a rebuild and a reader's refresh all read the log from where the
index stops (invariant 2): each event record is checked and indexed, a
checkout moves HEAD, and a batch is applied whole or not at all. What a
crash left unfinished at the end (a torn final line, a batch cut short) is
cut off by the writer and kept aside, never deleted; a tail the index
shows was acknowledged is damage, not a crash's, and is refused.
"""

from __future__ import annotations

from typing import Any

from ..._codec import LineError, batch_marker, decode_line
from ...errors import CorruptionError
from ...event import is_event_id, stored_record_problem
from .chunklog import Line, set_aside
from .index import Placed
from .lines import is_event
from .session_base import FileSessionBase

__all__ = ["LogTail"]


class LogTail(FileSessionBase):
    """The log read from ``_scan_from`` on, and what a crash left cut."""

    _acknowledged_end: tuple[int, int] | None  # the index's word, read once (``_acknowledged``)
    _acknowledged_read: bool
    _refused_cut: bool  # set when that end refused to cut a tail
    _tail_synced: bool  # set once recovery synced the log it indexes

    def _acknowledged(self) -> tuple[int, int] | None:
        """The end of the newest record the index vouches was synced (read
        once, before any rebuild can shorten the index)."""
        if not self._acknowledged_read:
            self._acknowledged_end = self.index.acknowledged_end()
            self._acknowledged_read = True
        return self._acknowledged_end

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
            if txn is not None and batch_marker(txn) is None:
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

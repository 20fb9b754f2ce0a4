"""Every event of a session in log order, the log read in large blocks.

``agentlog tree``, the exports and the search index read every event of
a session. One ``get`` each costs an index probe and a positioned read
(about 40 µs an event); here the index's entries, which are in log order
and say where each line is, guide reads of up to ``BLOCK`` bytes of a
chunk at a time. Each line is checked by the code that checks it for
``get`` (``FileSessionStorage.checked_line``); an entry its block cannot
give (damage, a line larger than a block, a chunk this reader has not
listed yet) is read by ``get`` itself, which owns the index rebuild and
the corruption report. So the events, and the errors, are those of a
``get`` of each id in turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...event import Event
from .index import Entry, IndexDamaged
from .lines import event_of
from .pathread import BLOCK

if TYPE_CHECKING:
    from .storage import FileSessionStorage

__all__ = ["scan_events"]


def scan_events(storage: FileSessionStorage, entries: list[Entry]) -> Iterator[Event]:
    block, chunk, base = b"", -1, 0
    for entry in entries:
        start = entry.offset - base
        if entry.chunk != chunk or start < 0 or start + entry.length > len(block):
            block, chunk, base = _block_at(storage, entry), entry.chunk, entry.offset
            start = 0
        line = block[start : start + entry.length]
        rec = None
        if len(line) == entry.length:
            try:
                rec = storage.checked_line(entry, line)
            except IndexDamaged:
                rec = None  # get reads it again, and rebuilds the index or reports the damage
        yield event_of(rec) if rec is not None else storage.get(entry.id)


def _block_at(storage: FileSessionStorage, entry: Entry) -> bytes:
    """The log from ``entry``'s line on, up to ``BLOCK`` bytes; empty where
    a block cannot hold it (``get`` then reads it alone)."""
    if not 0 <= entry.chunk < len(storage.log.numbers) or not 0 < entry.length <= BLOCK:
        return b""
    return storage.log.read(entry.chunk, entry.offset, BLOCK)

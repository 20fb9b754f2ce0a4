"""What every store in the peers comparison implements, and small shared helpers.

A *location* (``loc``) is where one store keeps its data: a directory, a
PostgreSQL schema, or a named in-process store. Every operation is the
one a user of that store would write with its public API; where the
store has none (listing, for the SQL peers), the cheapest query on its
tables, so that the comparison leans in the peer's favour.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, TypeVar

from .peers_data import Ev

T = TypeVar("T")


def batched(items: Iterable[T], n: int) -> Iterator[list[T]]:
    it = iter(items)
    while batch := list(islice(it, n)):
        yield batch


def dir_bytes(root: str) -> int:
    """Bytes of every file under ``root`` (the cache's ready.json aside)."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if name != "ready.json":
                total += os.path.getsize(os.path.join(dirpath, name))
    return total


class Writer:
    """An open session taking appends. ``prepare`` turns a neutral event
    into the store's own item (the caller's work, untimed); ``append``
    stores it (timed). May be shared by threads when the peer says so."""

    def prepare(self, ev: Ev) -> Any:
        raise NotImplementedError

    def append(self, native: Any) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class Peer:
    key = ""
    label = ""
    #: What an acknowledged append survives, in a few words.
    durability = ""
    #: The same in a word or two, for plot legends.
    sync = ""
    #: True: the 8-writer figure runs 8 threads on one session (one Writer
    #: shared); False: 8 sessions, a writer each, in the same store.
    shares_session = False
    writers_note = ""
    #: A variant measured only in the 8-writer figure.
    eight_only = False
    #: Why this peer's browse loads the whole session, when it must.
    loads_everything: str | None = None

    def unavailable(self) -> str | None:
        """None when the peer can run here, else why not (it is then skipped)."""
        return None

    def release(self) -> None:
        """Drop what the peer keeps open between operations."""

    def preload(self) -> None:
        """Import what the operations need (before a memory probe's baseline)."""

    def build(self, loc: str, events: Iterable[Ev], name: str = "bench") -> str:
        """One session holding ``events`` (fast path, untimed); its id."""
        raise NotImplementedError

    def build_many(self, loc: str, sessions: Iterable[tuple[str, list[Ev]]]) -> None:
        """Many sessions: (summary, events) each."""
        raise NotImplementedError

    def writer(self, loc: str, sid: str) -> Writer:
        raise NotImplementedError

    def count(self, loc: str, sid: str) -> int:
        """Events stored (a cache check, untimed)."""
        return self.whole(loc, sid)

    def whole(self, loc: str, sid: str) -> int:
        """Open the session, read its whole history, close; the count."""
        raise NotImplementedError

    def last(self, loc: str, sid: str, n: int) -> int:
        """Open, read the newest ``n`` items, close."""
        raise NotImplementedError

    def listing(self, loc: str) -> int:
        """List every session of the store, newest first; the count."""
        raise NotImplementedError

    def disk_bytes(self, loc: str) -> int | None:
        return dir_bytes(loc)

    def browse(self, loc: str, sid: str, context_len: int, pages: int, page: int) -> dict[str, int]:
        """Open, what resuming loads, then ``pages`` page-backs of ``page``."""
        raise NotImplementedError

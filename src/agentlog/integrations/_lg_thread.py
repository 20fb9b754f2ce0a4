"""An open LangGraph thread and the in-memory index built when it is opened.

The index holds every checkpoint record (not the channel values), the
pending writes by checkpoint, the value digests the thread already stores,
and the end of the values/writes side chain. It is built by reading the
checkpoint and writes records once; a record of the wrong shape is
reported as corruption, never skipped.
"""

from __future__ import annotations

import base64
import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from .. import NIL_ID, CorruptionError, Session
from ._lg_refs import Lookup, check_ref

__all__ = [
    "CHECKPOINT",
    "MALFORMED",
    "VALUE",
    "WRITES",
    "Stored",
    "Thread",
    "Typed",
    "value_digest",
    "index_checkpoint",
    "index_writes",
    "is_current",
    "lookup_in",
    "open_thread",
    "pack",
    "unpack",
]

Typed = tuple[str, bytes]

# The three kinds of event a thread's session holds (see langgraph.py).
CHECKPOINT = "lg.checkpoint"
VALUE = "lg.value"
WRITES = "lg.writes"


def pack(typed: Typed) -> list[str]:
    return [typed[0], base64.b64encode(typed[1]).decode("ascii")]


def unpack(packed: Any) -> Typed:
    if not (isinstance(packed, list) and len(packed) == 2 and all(isinstance(p, str) for p in packed)):
        raise ValueError(f"expected a [type, base64] pair, found {type(packed).__name__}")
    return packed[0], base64.b64decode(packed[1], validate=True)


#: What a record of the wrong shape raises while it is read (binascii.Error is a ValueError).
MALFORMED = (KeyError, IndexError, TypeError, ValueError, AttributeError)


def value_digest(typed: Typed) -> str:
    return hashlib.sha256(typed[0].encode() + b"\0" + typed[1]).hexdigest()


CACHE_BYTES = 8 << 20  # per open thread


class ValueCache:
    """Packed value records by event id, least recently used out past a byte budget."""

    def __init__(self, budget: int) -> None:
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._budget = budget
        self._used = 0

    def get(self, event_id: str) -> Any:
        packed = self._items.get(event_id)
        if packed is not None:
            self._items.move_to_end(event_id)
        return packed

    def put(self, event_id: str, packed: Any) -> None:
        size = len(packed[1]) if isinstance(packed, list) and len(packed) == 2 else 0
        if size > self._budget // 4 or event_id in self._items:
            return  # a value this large is cheaper to read again than to keep
        self._items[event_id] = packed
        self._sizes[event_id] = size
        self._used += size
        while self._used > self._budget:
            old, _ = self._items.popitem(last=False)
            self._used -= self._sizes.pop(old)


@dataclass
class Stored:
    """What the index keeps of one checkpoint (no channel values)."""

    event_id: str
    parent_id: str | None  # the parent checkpoint's id
    record: dict[str, Any]


@dataclass
class Thread:
    """An open thread: its session and the index built when it was opened."""

    session: Session
    checkpoints: dict[str, dict[str, Stored]] = field(default_factory=dict)  # ns -> id -> stored
    writes: dict[tuple[str, str], dict[tuple[str, int], list[Any]]] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)  # sha256 -> value event id
    side_tail: str = NIL_ID  # last event of the values/writes chain
    # Events the index accounts for. Another writer of this session in the
    # process (a second saver: writers share one lease) appends behind this
    # index's back; a count that differs from the session's means the index
    # is stale and must be built again (``is_current``).
    indexed: int = 0
    # Value records read lately. A value event never changes (its id names
    # it), so a read of the same list element again needs no store read.
    cache: ValueCache = field(default_factory=lambda: ValueCache(CACHE_BYTES))


def open_thread(session: Session) -> Thread:
    """The thread held by ``session``, indexed; the session is closed if that fails."""
    thread = Thread(session)
    try:
        _load(thread)
    except BaseException:
        session.close()
        raise
    return thread


def _load(thread: Thread) -> None:
    """Build the index from the checkpoint and writes records (values stay unread)."""
    session = thread.session
    entries = session.entries()
    thread.indexed = len(entries)
    for entry in entries:
        if entry.kind in (VALUE, WRITES):
            thread.side_tail = entry.id
        if entry.kind not in (CHECKPOINT, WRITES):
            continue
        event = session.resolve(session.event(entry.id))
        record = event.record
        try:
            if not isinstance(record, dict):
                raise TypeError("the record is not an object")
            if entry.kind == CHECKPOINT:
                index_checkpoint(thread, event.id, record)
            else:
                index_writes(thread, event.id, record)
        except MALFORMED as exc:
            raise CorruptionError(
                f"session {session.id}", None, f"{entry.kind} event {entry.id} is malformed: {exc!r}"
            ) from None


def is_current(thread: Thread) -> bool:
    """Whether the index accounts for every event the session holds."""
    return len(thread.session) == thread.indexed


def index_checkpoint(thread: Thread, event_id: str, record: dict[str, Any]) -> None:
    # The shape later reads rely on; a record without it is corruption.
    for key, kind in (
        ("ns", str),
        ("id", str),
        ("values", dict),
        ("checkpoint", list),
        ("metadata", list),
    ):
        if not isinstance(record.get(key), kind):
            raise TypeError(f"{key!r} is missing or not a {kind.__name__}")
    for channel, ref in record["values"].items():
        if not check_ref(ref):
            raise TypeError(f"value reference of channel {channel!r} is malformed")
    stored = Stored(event_id, record.get("parent"), record)
    thread.checkpoints.setdefault(record["ns"], {})[record["id"]] = stored
    thread.digests.update(record.get("new", {}))


def index_writes(thread: Thread, event_id: str, record: dict[str, Any]) -> None:
    slot = thread.writes.setdefault((record["ns"], record["checkpoint"]), {})
    for task_id, idx, channel, packed, task_path in record["writes"]:
        slot[(task_id, idx)] = [task_id, channel, packed, task_path, event_id]


def lookup_in(thread: Thread) -> Lookup:
    """Checkpoint records by (ns, id), from the thread's index."""

    def lookup(ns: str, checkpoint_id: str) -> dict[str, Any] | None:
        stored = thread.checkpoints.get(ns, {}).get(checkpoint_id)
        return stored.record if stored is not None else None

    return lookup

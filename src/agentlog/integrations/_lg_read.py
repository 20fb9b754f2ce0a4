"""Reading LangGraph checkpoints back from a thread's index.

A checkpoint record names its channel values by event (a list element by
element, possibly as a delta on its parent's list, ``_lg_refs``); reading
one loads those values through the thread's cache and decodes them with
the saver's serde into the ``CheckpointTuple`` LangGraph expects, its
pending writes in LangGraph's order. A record of the wrong shape is
reported as corruption, never skipped.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import Checkpoint, CheckpointTuple, writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol

from .. import CorruptionError, Session
from ._lg_refs import list_items
from ._lg_thread import VALUE, Stored, Thread, lookup_in, unpack

__all__ = ["checkpoint_tuple", "decode", "list_thread", "load_value"]


def load_value(serde: SerializerProtocol, thread: Thread, event_id: str) -> Any:
    packed = thread.cache.get(event_id)
    if packed is None:
        session = thread.session
        event = session.resolve(session.event(event_id))
        if event.kind != VALUE:
            raise CorruptionError(f"session {session.id}", None, f"event {event_id} is not a value")
        packed = event.record
        thread.cache.put(event_id, packed)
    return decode(serde, thread.session, event_id, packed)


def decode(serde: SerializerProtocol, session: Session, event_id: str, packed: Any) -> Any:
    """A serialized value from one of our records, loaded with the serde.

    A packed value of the wrong shape is corruption (named here); what
    the serde raises for bytes it cannot load is its own error, passed on."""
    try:
        typed = unpack(packed)
    except ValueError as exc:
        raise CorruptionError(f"session {session.id}", None, f"event {event_id}: {exc}") from None
    return serde.loads_typed(typed)


def checkpoint_tuple(
    serde: SerializerProtocol, thread_id: str, ns: str, thread: Thread, stored: Stored
) -> CheckpointTuple:
    record = stored.record
    session = thread.session
    checkpoint: Checkpoint = decode(serde, session, stored.event_id, record["checkpoint"])
    values: dict[str, Any] = {}
    for channel, ref in record["values"].items():
        if ref is None:
            continue  # the channel was empty at this checkpoint
        if isinstance(ref, dict):  # a list stored element by element
            try:
                item_ids = list_items(ref, lookup_in(thread))
            except KeyError as exc:
                where = f"session {session.id}"
                raise CorruptionError(where, None, f"checkpoint event {stored.event_id}: {exc}") from None
            values[channel] = [load_value(serde, thread, eid) for eid in item_ids]
        else:
            values[channel] = load_value(serde, thread, ref[0])
    checkpoint = {**checkpoint, "channel_values": values}
    pending = thread.writes.get((ns, record["id"]), {})
    order = sorted(pending, key=lambda k: writes_sort_key(pending[k][3], *k))
    writes = [(pending[k][0], pending[k][1], decode(serde, session, pending[k][4], pending[k][2])) for k in order]
    parent = stored.parent_id
    return CheckpointTuple(
        config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": record["id"]}},
        checkpoint=checkpoint,
        metadata=decode(serde, session, stored.event_id, record["metadata"]),
        parent_config=(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}} if parent else None
        ),
        pending_writes=writes,
    )


def list_thread(
    serde: SerializerProtocol,
    thread_id: str,
    thread: Thread,
    out: list[CheckpointTuple],
    want_ns: str | None,
    want_id: str | None,
    before_id: str | None,
    filter: dict[str, Any] | None,
    limit: int | None,
) -> bool:
    """Add one thread's matches to ``out``, newest first; False once ``limit`` is reached."""
    for ns, in_ns in thread.checkpoints.items():
        if want_ns is not None and ns != want_ns:
            continue
        for checkpoint_id in sorted(in_ns, reverse=True):
            if want_id and checkpoint_id != want_id:
                continue
            if before_id and checkpoint_id >= before_id:
                continue
            stored = in_ns[checkpoint_id]
            if filter:
                metadata = serde.loads_typed(unpack(stored.record["metadata"]))
                if not all(metadata.get(k) == v for k, v in filter.items()):
                    continue
            if limit is not None and len(out) >= limit:
                return False
            out.append(checkpoint_tuple(serde, thread_id, ns, thread, stored))
    return True

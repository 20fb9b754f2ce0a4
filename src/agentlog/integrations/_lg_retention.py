"""Retention for LangGraph threads: keep some checkpoints, drop the rest.

LangGraph's ``prune`` and ``delete_for_runs`` delete checkpoints. A session's
log is never rewritten in place (invariant 4), so a thread is rewritten
into a new session holding only what is kept, in three steps that each
leave a readable state behind:

1. the kept events are imported, in one all-or-nothing batch, into a
   staging session (``<prefix>--h--<digest>``, metadata ``staging_for``);
2. the thread's session is deleted;
3. the thread's session is created again and the staging copy imported
   into it in one batch; then the staging session is deleted.

``finish_rewrite`` finishes an interrupted rewrite when a thread is next opened:
a staging session exists only while a rewrite is under way, and if the
thread's session is then missing or empty, step 3 is run again from the
staging copy (which step 1 made complete before step 2 began); otherwise
the staging session is dropped (the rewrite either finished, or never
removed anything).

Kept: the chosen checkpoint events (their list references written out in
full, since a delta's base may be dropped), the pending writes of those
checkpoints, and the value events they refer to. Event ids, records and
blob payloads are kept; parent links are re-made: a kept checkpoint keeps
its parent if that was kept too and becomes a root otherwise, and the kept
values and writes form a new side chain. Each kept checkpoint record's
``new`` map is widened to every value it refers to, so later puts still
find those values by digest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .. import NIL_ID, CorruptionError, Event, Session, SessionNotFound, Store
from ._ids import session_key
from ._lg_refs import Lookup, list_items
from ._lg_thread import CHECKPOINT, WRITES

__all__ = ["Keep", "finish_rewrite", "rewrite", "staging_id"]


#: Decides from a checkpoint record whether it is kept.
Keep = Callable[[dict[str, Any]], bool]


def staging_id(thread_id: str) -> str:
    return session_key("lg-staging", thread_id)


def _full_values(record: dict[str, Any], lookup: Lookup) -> dict[str, Any]:
    """The record's value references with every list written out in full
    (a delta's base may be among what is dropped)."""
    return {
        channel: {"items": list_items(ref, lookup)} if isinstance(ref, dict) else ref
        for channel, ref in record["values"].items()
    }


def _value_ids(values: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    for ref in values.values():
        if isinstance(ref, dict):
            ids.extend(ref["items"])
        elif ref is not None:
            ids.append(ref[0])
    return ids


def _kept_events(session: Session, keep: Keep) -> tuple[list[Event], bool]:
    """The events a rewrite keeps, relinked; and whether anything is dropped."""
    records: dict[str, dict[str, Any]] = {}
    kinds: dict[str, str] = {}
    for entry in session.entries():
        kinds[entry.id] = entry.kind
        if entry.kind in (CHECKPOINT, WRITES):
            records[entry.id] = session.resolve(session.event(entry.id)).record
    digest_of: dict[str, str] = {}  # value event id -> sha256
    for event_id, record in records.items():
        if kinds[event_id] == CHECKPOINT:
            digest_of.update({eid: d for d, eid in record.get("new", {}).items()})
    by_key = {(rec["ns"], rec["id"]): rec for eid, rec in records.items() if kinds[eid] == CHECKPOINT}

    def lookup(ns: str, checkpoint_id: str) -> dict[str, Any] | None:
        return by_key.get((ns, checkpoint_id))

    kept_checkpoints: dict[str, dict[str, Any]] = {}
    for eid, rec in records.items():
        if kinds[eid] == CHECKPOINT and keep(rec):
            try:
                kept_checkpoints[eid] = {**rec, "values": _full_values(rec, lookup)}
            except KeyError as exc:
                # Rewriting would lose the list for good: stop, change nothing.
                raise CorruptionError(f"session {session.id}", None, f"checkpoint event {eid}: {exc}") from None
    kept_keys = {(rec["ns"], rec["id"]) for rec in kept_checkpoints.values()}
    by_checkpoint_id = {(rec["ns"], rec["id"]): eid for eid, rec in kept_checkpoints.items()}
    wanted_values = {vid for rec in kept_checkpoints.values() for vid in _value_ids(rec["values"])}
    wanted = set(kept_checkpoints) | wanted_values
    wanted |= {
        eid for eid, rec in records.items() if kinds[eid] == WRITES and (rec["ns"], rec["checkpoint"]) in kept_keys
    }
    out: list[Event] = []
    side_tail = NIL_ID
    for event_id in sorted(wanted):  # ids are time-ordered: the order they were written
        event = session.event(event_id)
        if event_id in kept_checkpoints:
            record = dict(kept_checkpoints[event_id])
            record["new"] = {digest_of[v]: v for v in _value_ids(record["values"]) if v in digest_of}
            parent = by_checkpoint_id.get((record["ns"], record.get("parent")), NIL_ID)
            out.append(dataclasses.replace(event, parent_id=parent, branch_from=None, record=record, digest=None))
        else:
            out.append(dataclasses.replace(event, parent_id=side_tail, branch_from=None))
            side_tail = event_id
    return out, len(wanted) < len(kinds)


def _copy_into(store: Store, sid: str, events: list[Event], source: Session, meta: dict[str, Any]) -> None:
    target = store.create(session_id=sid, **meta)
    try:
        if events:
            target.import_events(events, source=source)
    finally:
        target.close()


def rewrite(store: Store, session: Session, thread_id: str, keep: Keep) -> None:
    """Rewrite the thread ``session`` (open for writing) keeping what ``keep``
    accepts. The session is closed on return; reopen the thread afterwards."""
    sid = session.id
    meta = {k: v for k, v in session.meta.items() if k in ("name", "framework", "thread_id")}
    events, drops = _kept_events(session, keep)
    if not drops:
        session.close()
        return
    staging = staging_id(thread_id)
    if store.exists(staging):
        store.delete(staging)
    staging_meta = {"staging_for": sid, "framework": "langgraph-staging", "thread_id": thread_id}
    _copy_into(store, staging, events, session, staging_meta)
    session.close()
    store.delete(sid)
    try:
        _finish(store, sid, staging, meta)
    except SessionNotFound:
        # A reader in another process came between the delete and the copy
        # and finished the rewrite itself (finish_rewrite): its result is
        # this one's, the staging copy gone. Anything else is an error.
        if not (store.exists(sid) and store.info(sid).event_count > 0 and not store.exists(staging)):
            raise


def _finish(store: Store, sid: str, staging: str, meta: dict[str, Any]) -> None:
    source = store.open(staging, readonly=True)
    try:
        events = [source.event(entry.id) for entry in source.entries()]
        if store.exists(sid):
            store.delete(sid)  # an empty session left by a crash inside this step
        _copy_into(store, sid, events, source, meta)
    finally:
        source.close()
    store.delete(staging)


def finish_rewrite(store: Store, sid: str, thread_id: str, meta: dict[str, Any]) -> None:
    """Finish or drop an interrupted rewrite of this thread (see the module doc)."""
    staging = staging_id(thread_id)
    if not store.exists(staging):
        return
    if store.exists(sid) and store.info(sid).event_count > 0:
        store.delete(staging)
        return
    _finish(store, sid, staging, meta)

"""Read routes: sessions, entries (the tree), path, context, events, blobs."""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import NIL_ID, Event, IndexEntry, Session, __version__
from . import params
from .encode import entry_json, event_json, info_json, json_response, source_cwd, usage_totals
from .errors import ApiError
from .service import Service

__all__ = ["read_routes"]

log = logging.getLogger("agentlog.server")

_NOTE_KINDS = ("compaction", "branch_summary", "label")
_NOTE_CHARS = 2000


def _notes(session: Session) -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    """Labels by target, and the summaries of compactions and branch summaries:
    what the tree shows beside its nodes (small records, read one by one).
    Labels are those ``agentlog label`` keeps in the session's metadata, as
    ``tree`` and the exports show them, and the ``label`` events an import
    wrote."""
    labels: dict[str, list[str]] = {}
    named = session.meta.get("labels")
    if isinstance(named, dict):
        for name, target in sorted(named.items()):
            if isinstance(target, str):
                labels.setdefault(target, []).append(str(name))
    notes: dict[str, dict[str, Any]] = {}
    for entry in session.entries():
        if entry.kind not in _NOTE_KINDS:
            continue
        record = session.resolve(session.event(entry.id)).record
        if not isinstance(record, dict):
            continue
        if entry.kind == "label":
            target, name = record.get("target"), record.get("name")
            if isinstance(target, str) and isinstance(name, str) and name not in labels.get(target, ()):
                labels.setdefault(target, []).append(name)
            continue
        summary = record.get("summary")
        note: dict[str, Any] = {
            "kind": entry.kind,
            "summary": summary[:_NOTE_CHARS] if isinstance(summary, str) else None,
        }
        for key in ("first_kept_event_id", "tokens_before", "tokens_after", "abandoned_head"):
            if key in record:
                note[key] = record[key]
        notes[entry.id] = note
    return labels, notes


def _warned(session_id: str, session: Session, document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with ``warnings``: what opening the session had to repair
    on its own (a torn tail, an index rebuilt from the chunks), also logged.
    An empty list when the log is whole."""
    warnings = session.warnings
    for warning in warnings:
        log.warning("session %s: %s", session_id, warning)
    document["warnings"] = warnings
    return document


#: Reads of the tree that a busy writer may spoil before one is taken as it is.
_TREE_TRIES = 5


def _tree(session: Session) -> tuple[str, list[IndexEntry]]:
    """HEAD and every entry as of one moment. SQLite, PostgreSQL and memory
    sessions read the live store at each call, so an append between the two
    reads gave entries ending past HEAD (HEAD then stayed behind in the
    viewer: its stream goes on after the last entry). HEAD unchanged across
    the read of the entries means no append came in between; under a writer
    that never pauses, HEAD read first is kept, which the entries hold."""
    for _ in range(_TREE_TRIES):
        head = session.head
        entries = session.entries()
        if session.head == head:
            break
    return head, entries


def _events(session: Session, events: list[Event], resolve: bool) -> list[Event]:
    return [session.resolve(e) for e in events] if resolve else events


def read_routes(service: Service) -> list[Route]:
    store = service.store

    async def health(request: Request) -> Response:
        return json_response({"ok": True, "version": __version__, "store": store.home, "feeds": service.feeds.active()})

    async def list_sessions(request: Request) -> Response:
        archived = params.flag(request, "archived")
        query = (params.text(request, "q") or "").lower()
        working_dir = params.absolute_path(request, "working_dir")
        status = params.text(request, "status", 64)
        limit = params.integer(request, "limit", 50, 1, 500)
        offset = params.integer(request, "offset", 0, 0, 10_000_000)
        infos, broken = await service.run(store.scan)
        if not archived:
            infos = [info for info in infos if not info.archived]
        rows = []
        for info in infos:
            # An imported session lives where it was recorded, as search's cwd has it.
            directory = info.working_dir or source_cwd(info)
            if working_dir is not None and directory != working_dir:
                continue
            if status is not None and info.status != status:
                continue
            if query:
                hay = " ".join(str(v) for v in (info.id, info.title, info.name, directory, info.summary) if v).lower()
                if query not in hay:
                    continue
            rows.append(info)
        page = rows[offset : offset + limit]
        following = offset + limit if offset + limit < len(rows) else None
        return json_response(
            {
                "sessions": [info_json(i) for i in page],
                "total": len(rows),
                "offset": offset,
                "next_offset": following,
                # Sessions that cannot be listed (as `agentlog ls --all` shows
                # them): never left out without a word, whatever the filters.
                "broken": [{"session_id": b.id, "reason": b.reason} for b in broken],
            }
        )

    async def get_session(request: Request) -> Response:
        sid = params.session_id(request)

        def work(session: Session) -> dict[str, Any]:
            document = {"session": info_json(store.info(sid)), "meta": session.meta, "head": session.head}
            return _warned(sid, session, document)

        return json_response(await service.read(sid, work))

    async def entries(request: Request) -> Response:
        sid = params.session_id(request)

        def work(session: Session) -> dict[str, Any]:
            labels, notes = _notes(session)
            head, tree = _tree(session)
            document = {
                "head": head,
                "root": NIL_ID,
                "entries": [entry_json(e) for e in tree],
                "labels": labels,
                "notes": notes,
            }
            return _warned(sid, session, document)

        return json_response(await service.read(sid, work))

    async def path(request: Request) -> Response:
        sid = params.session_id(request)
        at = params.optional_event_id(request, "at")
        resolve = params.flag(request, "resolve")

        def work(session: Session) -> dict[str, Any]:
            # HEAD read once, then its path: read after the path, HEAD could
            # name an event appended meanwhile that the path lacks, and a
            # client comparing HEADs would never know it is missing.
            head = session.head
            events = _events(session, session.path(at or head), resolve)
            document = {
                "head": head,
                "at": at or head,
                "events": [event_json(e) for e in events],
                "totals": usage_totals(events),
            }
            return _warned(sid, session, document)

        return json_response(await service.read(sid, work))

    async def context(request: Request) -> Response:
        sid = params.session_id(request)
        resolve = params.flag(request, "resolve")

        def work(session: Session) -> dict[str, Any]:
            head = session.head  # once, as for the path above
            events = session.context(at=head, resolve=resolve)
            document = {
                "head": head,
                "events": [event_json(e) for e in events],
                "totals": usage_totals(events),
            }
            return _warned(sid, session, document)

        return json_response(await service.read(sid, work))

    async def event(request: Request) -> Response:
        sid = params.session_id(request)
        eid = params.event_id(request)
        resolve = params.flag(request, "resolve")

        def work(session: Session) -> dict[str, Any]:
            found = session.event(eid)
            return event_json(session.resolve(found) if resolve else found)

        return json_response(await service.read(sid, work))

    async def blob(request: Request) -> Response:
        sid = params.session_id(request)
        eid = params.event_id(request)

        def work(session: Session) -> Event:
            found = session.event(eid)
            if found.digest is None:
                raise ApiError(404, "no_blob", f"event {eid} keeps its record inline, not in a blob")
            return session.resolve(found)  # verifies the digest (invariant 9)

        resolved = await service.read(sid, work)
        return json_response(
            resolved.record,
            headers={"Digest": str(resolved.digest), "Cache-Control": "private, max-age=31536000, immutable"},
        )

    prefix = "/api/v1"
    return [
        Route(f"{prefix}/health", health, methods=["GET"], name="health"),
        Route(f"{prefix}/sessions", list_sessions, methods=["GET"], name="list_sessions"),
        Route(f"{prefix}/sessions/{{session_id}}", get_session, methods=["GET"], name="get_session"),
        Route(f"{prefix}/sessions/{{session_id}}/entries", entries, methods=["GET"], name="entries"),
        Route(f"{prefix}/sessions/{{session_id}}/path", path, methods=["GET"], name="path"),
        Route(f"{prefix}/sessions/{{session_id}}/context", context, methods=["GET"], name="context"),
        Route(f"{prefix}/sessions/{{session_id}}/events/{{event_id}}", event, methods=["GET"], name="event"),
        Route(f"{prefix}/sessions/{{session_id}}/events/{{event_id}}/blob", blob, methods=["GET"], name="blob"),
    ]

"""Write routes: create, append, batch, checkout, fork, compact, live deltas.

Appends, checkout and compact honour ``If-Match: <head>``: the write
happens only if HEAD is that event (compare-and-swap), else 409
``head_mismatch`` carrying the current head.
"""

from __future__ import annotations

import os
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import Session
from ..event import RESERVED_KINDS, check_event_id, check_session_id
from . import params
from .encode import event_json, field, info_json, json_response, only_fields, read_json_object
from .errors import ApiError
from .service import Service, if_match_header

__all__ = ["write_routes"]

MAX_BATCH = 10_000
MAX_LIVE_ITEMS = 1_000


#: The fields of an event to append, on its own or in a batch.
DRAFT_FIELDS = ("kind", "record", "role")


def _draft(document: Any, where: str) -> tuple[str, Any, str | None]:
    if not isinstance(document, dict):
        raise ApiError(400, "invalid_body", f"{where} must be a JSON object")
    only_fields(document, DRAFT_FIELDS, where)
    kind = field(document, "kind", str, required=True)
    if kind in RESERVED_KINDS:
        raise ApiError(400, "invalid_event", f"{where}: kind {kind!r} is reserved: {RESERVED_KINDS[kind]}")
    role = field(document, "role", str)
    return kind, document.get("record"), role


def _if_match(request: Request) -> str | None:
    value = if_match_header(request.headers.get("if-match"))
    if value == "*":
        # RFC 9110: "*" matches any current state; the session must exist,
        # which opening it for the write checks anyway.
        return None
    return None if value is None else check_event_id(value)


def write_routes(service: Service) -> list[Route]:
    store = service.store

    async def create(request: Request) -> Response:
        body = await read_json_object(request, ("name", "working_dir", "model", "session_id"))
        name = field(body, "name", str)
        working_dir = field(body, "working_dir", str)
        if working_dir is not None and not os.path.isabs(working_dir):
            # Relative to what? The server cannot know the client's directory.
            raise ApiError(400, "invalid_body", "working_dir must be an absolute path")
        model = field(body, "model", str)
        sid = field(body, "session_id", str)
        if sid is not None:
            check_session_id(sid)

        def work() -> dict[str, Any]:
            with store.create(name=name, working_dir=working_dir, model=model, session_id=sid) as session:
                created = session.id
                head = session.head
            return {"session": info_json(store.info(created)), "head": head}

        return json_response(await service.run(work), status=201)

    async def append(request: Request) -> Response:
        sid = params.session_id(request)
        expected = _if_match(request)
        kind, record, role = _draft(await read_json_object(request, DRAFT_FIELDS), "the body")

        def work(session: Session) -> dict[str, Any]:
            event = session.append(kind, record, role=role)
            return {"event": event_json(event), "head": session.head}

        return json_response(await service.write(sid, work, expected), status=201)

    async def batch(request: Request) -> Response:
        sid = params.session_id(request)
        expected = _if_match(request)
        body = await read_json_object(request, ("events",))
        items = body.get("events")
        if not isinstance(items, list) or not items:
            raise ApiError(400, "invalid_body", "'events' must be a non-empty list")
        if len(items) > MAX_BATCH:
            raise ApiError(400, "invalid_body", f"a batch holds at most {MAX_BATCH} events")
        drafts = [_draft(item, f"events[{i}]") for i, item in enumerate(items)]

        def work(session: Session) -> dict[str, Any]:
            events = session.append_many(drafts)
            return {"events": [event_json(e) for e in events], "head": session.head}

        return json_response(await service.write(sid, work, expected), status=201)

    async def checkout(request: Request) -> Response:
        sid = params.session_id(request)
        expected = _if_match(request)
        body = await read_json_object(request, ("event_id",))
        target = check_event_id(field(body, "event_id", str, required=True))

        def work(session: Session) -> dict[str, Any]:
            session.checkout(target)
            return {"head": session.head}

        return json_response(await service.write(sid, work, expected))

    async def fork(request: Request) -> Response:
        sid = params.session_id(request)
        body = await read_json_object(request, ("at", "name"))
        at = field(body, "at", str)
        at = None if at is None else check_event_id(at)
        name = field(body, "name", str)

        def work(session: Session) -> dict[str, Any]:
            with session.fork(at, name=name) as forked:
                created, head = forked.id, forked.head
            return {"session": info_json(store.info(created)), "head": head}

        return json_response(await service.read(sid, work), status=201)

    async def compact(request: Request) -> Response:
        sid = params.session_id(request)
        expected = _if_match(request)
        body = await read_json_object(request, ("keep_tokens",))
        keep = field(body, "keep_tokens", int)
        if keep is not None and not 0 <= keep <= 10_000_000:
            raise ApiError(400, "invalid_body", "keep_tokens must be between 0 and 10000000")

        def work(session: Session) -> dict[str, Any]:
            event = session.compact(keep_tokens=keep)
            return {"event": None if event is None else event_json(event), "head": session.head}

        return json_response(await service.write(sid, work, expected))

    async def live(request: Request) -> Response:
        """Deltas a running agent publishes (never stored): fanned out to the stream."""
        sid = params.session_id(request)
        body = await read_json_object(request, ("items",))
        items = body.get("items")
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ApiError(400, "invalid_body", "'items' must be a list of JSON objects")
        if len(items) > MAX_LIVE_ITEMS:
            raise ApiError(400, "invalid_body", f"send at most {MAX_LIVE_ITEMS} items at once")
        if not await service.run(lambda: store.exists(sid)):
            raise ApiError(404, "session_not_found", f"session {sid!r} not found")
        delivered = sum(service.hub.publish(sid, item) for item in items)
        return json_response({"accepted": len(items), "delivered": delivered}, status=202)

    prefix = "/api/v1/sessions"
    return [
        Route(prefix, create, methods=["POST"], name="create_session"),
        Route(f"{prefix}/{{session_id}}/events", append, methods=["POST"], name="append"),
        Route(f"{prefix}/{{session_id}}/batch", batch, methods=["POST"], name="append_batch"),
        Route(f"{prefix}/{{session_id}}/checkout", checkout, methods=["POST"], name="checkout"),
        Route(f"{prefix}/{{session_id}}/fork", fork, methods=["POST"], name="fork"),
        Route(f"{prefix}/{{session_id}}/compact", compact, methods=["POST"], name="compact"),
        Route(f"{prefix}/{{session_id}}/live", live, methods=["POST"], name="publish_live"),
    ]

"""Search and export routes: what ``agentlog search`` and ``agentlog export`` give, over HTTP."""

from __future__ import annotations

import io

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import SearchError, SearchHit, Session
from ..backends.base import Backend
from ..export import EXPORT_FORMATS, export_session
from ..search import catch_up
from . import params
from .encode import json_response
from .errors import ApiError
from .service import Service

__all__ = ["find_routes"]

_TYPES = {"md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8", "bundle": "application/x-ndjson"}


def find_routes(service: Service) -> list[Route]:
    store = service.store

    async def search(request: Request) -> Response:
        query = params.text(request, "q", 1000)
        if not query or not query.strip():
            raise ApiError(400, "bad_parameter", "q: give the words to search for")
        session = params.text(request, "session", 128)
        kind = params.text(request, "kind", 32)
        role = params.text(request, "role", 32)
        since = params.text(request, "since", 64)
        cwd = params.absolute_path(request, "cwd")
        limit = params.integer(request, "limit", 20, 1, 200)

        def work() -> tuple[list[SearchHit], tuple[tuple[str, str], ...]]:
            failed: tuple[tuple[str, str], ...] = ()
            if type(store.backend).search is Backend.search:
                # agentlog's own index: bring it up to date here, so that the
                # sessions it cannot read are known and reported, not skipped.
                failed = catch_up(store).failed
            try:
                found = store.search(
                    query, session=session, kind=kind, role=role, since=since, cwd=cwd, limit=limit, refresh=False
                )
            except SearchError as exc:
                raise ApiError(400, "invalid_parameter", str(exc)) from None
            return found, failed

        hits, failed = await service.run(work)
        return json_response(
            {
                "hits": [hit.to_dict() for hit in hits],
                "broken": [{"session_id": sid, "reason": reason} for sid, reason in failed],
            }
        )

    async def export(request: Request) -> Response:
        sid = params.session_id(request)
        fmt = params.text(request, "format", 16) or "md"
        if fmt not in EXPORT_FORMATS:
            raise ApiError(400, "bad_parameter", f"format: use one of {', '.join(EXPORT_FORMATS)}")
        all_branches = params.flag(request, "all_branches")
        redact = params.flag(request, "redact")

        def work(session: Session) -> bytes:
            out = io.BytesIO()
            export_session(session, fmt, out, all_branches=all_branches, redact=redact)
            return out.getvalue()

        body = await service.read(sid, work)
        name = f"{sid}.{'jsonl' if fmt == 'bundle' else fmt}"
        return Response(body, media_type=_TYPES[fmt], headers={"Content-Disposition": f'attachment; filename="{name}"'})

    prefix = "/api/v1"
    return [
        Route(f"{prefix}/search", search, methods=["GET"], name="search"),
        Route(f"{prefix}/sessions/{{session_id}}/export", export, methods=["GET"], name="export"),
    ]

"""Search and export routes: what ``agentlog search`` and ``agentlog export`` give, over HTTP."""

from __future__ import annotations

import io

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import Session
from ..export import EXPORT_FORMATS, export_session
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
        hits = await service.run(
            lambda: store.search(
                query,
                session=params.text(request, "session", 128),
                kind=params.text(request, "kind", 32),
                role=params.text(request, "role", 32),
                since=params.text(request, "since", 64),
                cwd=params.text(request, "cwd"),
                limit=params.integer(request, "limit", 20, 1, 200),
            )
        )
        return json_response({"hits": [hit.to_dict() for hit in hits]})

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

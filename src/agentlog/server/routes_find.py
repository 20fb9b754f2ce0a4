"""Search and export routes: what ``agentlog search`` and ``agentlog export`` give, over HTTP."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import IO

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from .. import SearchError, SearchHit, Session
from ..export import EXPORT_FORMATS, export_session
from ..export.redact import Redactor
from . import params
from .encode import json_response
from .errors import ApiError
from .service import Service

__all__ = ["find_routes"]

#: An export larger than this goes to a temporary file while it is written.
_SPOOL = 8 << 20
#: Bytes a streamed export sends at a time.
_CHUNK = 1 << 20
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
            if service.own_index:
                # Bring agentlog's own index up to date here, so that the
                # sessions it cannot read are known and reported, not skipped.
                failed = service.catch_up_search()
            try:
                found = store.search(
                    query, session=session, kind=kind, role=role, since=since, cwd=cwd, limit=limit, refresh=False
                )
            except SearchError as exc:
                raise ApiError(400, "invalid_parameter", str(exc)) from None
            return found, failed

        hits, failed = await service.run(work, service.search_limiter)
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
        name = f"{sid}.{'jsonl' if fmt == 'bundle' else fmt}"
        disposition = {"Content-Disposition": f'attachment; filename="{name}"'}
        if request.method == "HEAD":
            # A HEAD made the whole export only to throw it away: a link
            # checker's HEAD of a gigabyte session cost what a download
            # does. It gets the same checks and headers as a GET, without
            # the Content-Length, which only making the export tells (RFC
            # 9110 section 9.3.2 allows leaving it out), and no body.
            await service.read(sid, lambda _session: Redactor() if redact else None)
            return StreamingResponse(iter(()), media_type=_TYPES[fmt], headers=disposition)

        def work(session: Session) -> IO[bytes]:
            # Written to a file (in memory while small), then streamed: an
            # export of a gigabyte session is never held whole in memory.
            out = tempfile.SpooledTemporaryFile(max_size=_SPOOL)
            try:
                export_session(session, fmt, out, all_branches=all_branches, redact=redact)
            except BaseException:
                out.close()
                raise
            return out

        body = await service.read(sid, work)
        size = body.tell()
        body.seek(0)

        def chunks() -> Iterator[bytes]:
            try:
                while data := body.read(_CHUNK):
                    yield data
            finally:
                body.close()

        headers = {**disposition, "Content-Length": str(size)}
        return StreamingResponse(chunks(), media_type=_TYPES[fmt], headers=headers)

    prefix = "/api/v1"
    return [
        Route(f"{prefix}/search", search, methods=["GET"], name="search"),
        Route(f"{prefix}/sessions/{{session_id}}/export", export, methods=["GET"], name="export"),
    ]

"""Every error the HTTP API returns: JSON with a stable code, never a traceback.

A response body is ``{"error": {"code": str, "message": str, ...}}``. The
codes are part of the API (docs/server.md lists them); the messages are for
people and may change. Library errors are mapped here, in one table; an
unexpected exception becomes ``500 internal`` as a last resort (a bug, and
the tests assert it never happens).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from .. import (
    AgentlogError,
    BlobIntegrityError,
    ContextMismatch,
    CorruptionError,
    EventNotFound,
    HeadConflict,
    InvalidEvent,
    InvalidEventId,
    InvalidMeta,
    InvalidName,
    InvalidSessionId,
    ModelError,
    NothingToContinue,
    ReadOnlySession,
    RedactionUnavailable,
    SearchError,
    SessionClosed,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    SessionPoisoned,
    StorageError,
    StreamedDeltaError,
    SummarizerError,
)

__all__ = ["ApiError", "error_response", "install_handlers"]

log = logging.getLogger("agentlog.server")


class ApiError(Exception):
    """A request the API refuses: HTTP status, stable code, message, extras."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra


# Most specific first: the first matching class wins.
_LIBRARY: tuple[tuple[type[AgentlogError], int, str], ...] = (
    (InvalidSessionId, 400, "invalid_session_id"),
    (InvalidEventId, 400, "invalid_event_id"),
    (StreamedDeltaError, 400, "streamed_delta"),
    (InvalidEvent, 400, "invalid_event"),
    (InvalidMeta, 400, "invalid_body"),
    (InvalidName, 400, "invalid_body"),
    (SearchError, 400, "invalid_parameter"),
    (SessionNotFound, 404, "session_not_found"),
    (EventNotFound, 404, "event_not_found"),
    (NothingToContinue, 404, "nothing_to_continue"),
    (SessionExists, 409, "session_exists"),
    (ContextMismatch, 409, "context_mismatch"),
    (HeadConflict, 409, "head_mismatch"),
    (SessionLocked, 423, "session_locked"),
    (ReadOnlySession, 409, "read_only"),
    (SessionClosed, 409, "session_closed"),
    (SummarizerError, 422, "summarizer_failed"),
    (ModelError, 502, "model_failed"),
    (RedactionUnavailable, 501, "redaction_unavailable"),
    (BlobIntegrityError, 500, "blob_integrity"),
    (CorruptionError, 500, "corruption"),
    (SessionPoisoned, 503, "session_poisoned"),
    (StorageError, 503, "storage_error"),
)


def error_response(
    status: int, code: str, message: str, *, headers: Mapping[str, str] | None = None, **extra: Any
) -> Response:
    body = {"error": {"code": code, "message": message, **extra}}
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)


def library_error(exc: AgentlogError) -> ApiError:
    """The API error for a library error (the one mapping table)."""
    for cls, status, code in _LIBRARY:
        if isinstance(exc, cls):
            return ApiError(status, code, str(exc))
    return ApiError(400, "agentlog_error", str(exc))


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message, **exc.extra)


async def _agentlog_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AgentlogError)
    api = library_error(exc)
    if api.status >= 500:
        log.error("%s %s: %s", request.method, request.url.path, exc)
    return error_response(api.status, api.code, api.message)


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    # Starlette's headers are kept: a 405 must say which methods are allowed
    # (``Allow``, RFC 9110 section 15.5.6).
    return error_response(exc.status_code, code, str(exc.detail), headers=exc.headers)


async def _gone(request: Request, exc: Exception) -> Response:
    # The client went away in the middle of sending its body: nobody reads
    # this answer, and it is no error of the server's (nothing is logged).
    return Response(status_code=400)


async def _unexpected(request: Request, exc: Exception) -> Response:
    # Last resort: a bug in agentlog. The client gets JSON, never a
    # traceback; the log keeps the traceback for whoever runs the server.
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(500, "internal", f"internal error: {type(exc).__name__}")


def install_handlers() -> dict[Any, Any]:
    """The exception handlers for ``Starlette(exception_handlers=...)``."""
    return {
        ApiError: _api_error,
        AgentlogError: _agentlog_error,
        HTTPException: _http_error,
        ClientDisconnect: _gone,
        Exception: _unexpected,
    }

"""The OpenAPI 3.1 document of ``/api/v1``, served at ``/api/v1/openapi.json``.

Written as data next to the routes it describes; a test checks that every
API route of the app appears here and nothing else does, so the two
cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from .. import __version__

__all__ = ["openapi_document"]

_SID = {
    "name": "session_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$"},
}
_EID = {"name": "event_id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}
_RESOLVE = {
    "name": "resolve",
    "in": "query",
    "required": False,
    "schema": {"type": "boolean"},
    "description": "Load blob payloads (digest-verified).",
}
_IF_MATCH = {
    "name": "If-Match",
    "in": "header",
    "required": False,
    "schema": {"anyOf": [{"type": "string", "format": "uuid"}, {"const": "*"}]},
    "description": "Compare-and-swap: write only if HEAD is this event (`*`: whatever HEAD is).",
}

#: What the server refuses in a path it cannot resolve itself (the client's directory).
_ABSOLUTE = {"type": "string", "pattern": "^/"}

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "head": {"type": "string"},
            },
        }
    },
}

_EVENT = {
    "type": "object",
    "required": ["id", "parent_id", "kind", "timestamp"],
    "properties": {
        "id": {"type": "string"},
        "parent_id": {"type": "string"},
        "branch_from": {"type": ["string", "null"]},
        "kind": {"type": "string"},
        "role": {"type": ["string", "null"]},
        "timestamp": {"type": "string"},
        "record": {},
        "digest": {"type": ["string", "null"]},
        "blob": {"type": "boolean"},
    },
}

_DRAFT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind"],
    "properties": {
        "kind": {"type": "string", "pattern": "^[a-z][a-z0-9_.-]{0,31}$"},
        "role": {"type": ["string", "null"], "pattern": "^[a-z][a-z0-9_.-]{0,31}$"},
        "record": {},
    },
}


def _errors(*statuses: int) -> dict[str, Any]:
    return {str(s): {"description": "error", "content": {"application/json": {"schema": _ERROR}}} for s in statuses}


def _ok(status: int, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        str(status): {
            "description": description,
            "content": {"application/json": {"schema": schema or {"type": "object"}}},
        }
    }


def _op(
    op_id: str,
    summary: str,
    parameters: list[dict[str, Any]],
    responses: dict[str, Any],
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": op_id,
        "summary": summary,
        "parameters": parameters,
        "responses": responses,
    }
    if body is not None:
        # A field the route does not know is a 400 naming it (docs/server.md).
        body = {**body, "additionalProperties": False}
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    return operation


def _query(name: str, schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _paths() -> dict[str, Any]:
    read_errors = _errors(400, 404)
    write_errors = _errors(400, 404, 409, 413, 415, 423)
    s = "/sessions/{session_id}"
    return {
        "/health": {"get": _op("health", "Server status and active feeds", [], _ok(200, "status"))},
        "/search": {
            "get": _op(
                "search",
                "Full-text search over every session, branch and compacted event, best first",
                [
                    {
                        "name": "q",
                        "in": "query",
                        "required": True,
                        "schema": {"type": "string", "minLength": 1, "maxLength": 1000},
                    },
                    _query(
                        "session",
                        {"type": "string", "maxLength": 128},
                        "A whole session id; one that names no session is 404.",
                    ),
                    _query("kind", {"type": "string", "maxLength": 32}),
                    _query("role", {"type": "string", "maxLength": 32}),
                    _query(
                        "since", {"type": "string", "maxLength": 64}, "An age (7d, 12h), a date or an RFC 3339 time."
                    ),
                    _query("cwd", {**_ABSOLUTE, "maxLength": 4096}, "An absolute path."),
                    _query("limit", {"type": "integer", "minimum": 1, "maximum": 200}),
                ],
                {**_ok(200, "the hits"), **_errors(400, 404)},
            )
        },
        f"{s}/export": {
            "get": {
                **_op(
                    "export",
                    "The session as Markdown, one self-contained HTML file, or a JSONL bundle",
                    [
                        _SID,
                        _query("format", {"type": "string", "enum": ["md", "html", "bundle"]}),
                        _query("all_branches", {"type": "boolean"}, "Markdown: every branch, not just the path."),
                        _query("redact", {"type": "boolean"}, "Replace secrets (detect-secrets)."),
                    ],
                    _errors(400, 404),
                ),
                "responses": {
                    "200": {
                        "description": "the export",
                        "content": {"text/markdown": {}, "text/html": {}, "application/x-ndjson": {}},
                    },
                    **_errors(400, 404, 501),
                },
            }
        },
        "/sessions": {
            "get": _op(
                "list_sessions",
                "List sessions, most recently updated first",
                [
                    _query("archived", {"type": "boolean"}, "Include archived sessions."),
                    _query(
                        "q",
                        {"type": "string", "maxLength": 4096},
                        "Substring of id, title, name, working dir or summary.",
                    ),
                    _query("working_dir", {**_ABSOLUTE, "maxLength": 4096}, "An absolute path."),
                    _query("status", {"type": "string", "maxLength": 64}),
                    _query("limit", {"type": "integer", "minimum": 1, "maximum": 500}),
                    _query("offset", {"type": "integer", "minimum": 0, "maximum": 10_000_000}),
                ],
                {**_ok(200, "a page of sessions"), **_errors(400)},
            ),
            "post": _op(
                "create_session",
                "Create a session",
                [],
                {**_ok(201, "created"), **_errors(400, 409, 413, 415)},
                {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "working_dir": {**_ABSOLUTE, "description": "An absolute path."},
                        "model": {"type": "string"},
                        "session_id": _SID["schema"],
                    },
                },
            ),
        },
        s: {
            "get": _op(
                "get_session",
                "A session's listing row, metadata and HEAD",
                [_SID],
                {**_ok(200, "the session"), **read_errors},
            )
        },
        f"{s}/entries": {
            "get": _op(
                "entries",
                "Every event's index entry (the tree), labels and summaries",
                [_SID],
                {**_ok(200, "the tree"), **read_errors},
            )
        },
        f"{s}/path": {
            "get": _op(
                "path",
                "The events from the root to `at` (default HEAD), with usage totals",
                [_SID, _query("at", {"type": "string", "format": "uuid"}), _RESOLVE],
                {**_ok(200, "the path"), **read_errors},
            )
        },
        f"{s}/context": {
            "get": _op(
                "context",
                "What the model sees at HEAD (compaction applied)",
                [_SID, _RESOLVE],
                {**_ok(200, "the context"), **read_errors},
            )
        },
        f"{s}/events/{{event_id}}": {
            "get": _op("event", "One event", [_SID, _EID, _RESOLVE], {**_ok(200, "the event", _EVENT), **read_errors})
        },
        f"{s}/events/{{event_id}}/blob": {
            "get": _op(
                "blob",
                "An event's blob payload (the record), digest-verified",
                [_SID, _EID],
                {**_ok(200, "the record", {}), **read_errors},
            )
        },
        f"{s}/events": {
            "post": _op(
                "append",
                "Append one event at HEAD",
                [_SID, _IF_MATCH],
                {**_ok(201, "appended"), **write_errors},
                _DRAFT,
            )
        },
        f"{s}/batch": {
            "post": _op(
                "append_batch",
                "Append events atomically (all or none)",
                [_SID, _IF_MATCH],
                {**_ok(201, "appended"), **write_errors},
                {
                    "type": "object",
                    "required": ["events"],
                    "properties": {"events": {"type": "array", "minItems": 1, "maxItems": 10_000, "items": _DRAFT}},
                },
            )
        },
        f"{s}/checkout": {
            "post": _op(
                "checkout",
                "Move HEAD to an event (appends nothing)",
                [_SID, _IF_MATCH],
                {**_ok(200, "moved"), **write_errors},
                {
                    "type": "object",
                    "required": ["event_id"],
                    "properties": {"event_id": {"type": "string", "format": "uuid"}},
                },
            )
        },
        f"{s}/fork": {
            "post": _op(
                "fork",
                "A new session holding the path to `at` (default HEAD)",
                [_SID],
                {**_ok(201, "forked"), **_errors(400, 404, 413, 415)},
                {
                    "type": "object",
                    "properties": {"at": {"type": "string", "format": "uuid"}, "name": {"type": "string"}},
                },
            )
        },
        f"{s}/compact": {
            "post": _op(
                "compact",
                "Summarize older context into a compaction event",
                [_SID, _IF_MATCH],
                {
                    **_ok(200, "compacted, or event null when there was nothing to compact"),
                    **write_errors,
                    **_errors(422, 502),  # the summarizer failed; a model it called failed
                },
                {
                    "type": "object",
                    "properties": {"keep_tokens": {"type": "integer", "minimum": 0, "maximum": 10_000_000}},
                },
            )
        },
        f"{s}/live": {
            "post": _op(
                "publish_live",
                "Publish live deltas (never stored) to the session's stream",
                [_SID],
                {**_ok(202, "fanned out"), **_errors(400, 404, 413, 415)},
                {
                    "type": "object",
                    "required": ["items"],
                    "properties": {"items": {"type": "array", "maxItems": 1000, "items": {"type": "object"}}},
                },
            )
        },
        f"{s}/stream": {
            "get": _op(
                "stream",
                "Server-sent events: settled events and live deltas",
                [
                    _SID,
                    _query(
                        "after",
                        {"type": "string", "format": "uuid"},
                        "Replay settled events after this id (like Last-Event-ID).",
                    ),
                    _query(
                        "queue",
                        {"type": "integer", "minimum": 1, "maximum": 1_000_000},
                        "This client's queue length before it is dropped as too slow.",
                    ),
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string", "format": "uuid"},
                    },
                ],
                {
                    "200": {
                        "description": "text/event-stream",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    },
                    **read_errors,
                },
            )
        },
    }


def openapi_document(*, token: bool) -> dict[str, Any]:
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "agentlog",
            "version": __version__,
            "description": "Sessions as durable event timelines. See docs/server.md.",
        },
        "servers": [{"url": "/api/v1"}],
        "paths": _paths(),
    }
    for path, operations in document["paths"].items():
        for operation in operations.values():
            # Any route may meet damaged data (500) or a refusing OS (503),
            # except /health, which reads nothing stored.
            if path != "/health":
                operation["responses"].update(_errors(500, 503))
            if not token:
                # Without a token, a Host that is not loopback is refused
                # (421 bad_host: DNS rebinding, docs/server.md).
                operation["responses"].update(_errors(421))
    if token:
        document["components"] = {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}
        document["security"] = [{"bearer": []}]
        # Every operation answers 401 without the token: say so where its
        # answers are listed, so that a client generated from this knows it.
        for operations in document["paths"].values():
            for operation in operations.values():
                operation["responses"].update(_errors(401))
    return document

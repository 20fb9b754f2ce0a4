"""JSON shapes of the API (events, entries, sessions) and request parsing.

One place decides what an event looks like on the wire, for the JSON
routes and the SSE stream alike; docs/server.md documents these shapes.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from .. import Event, SessionInfo
from .._json import dumps as dumps_json
from .errors import ApiError

__all__ = [
    "entry_json",
    "event_json",
    "info_json",
    "json_response",
    "only_fields",
    "read_json_object",
    "usage_totals",
]


def json_response(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps_json(document), status_code=status, media_type="application/json", headers=headers)


def event_json(event: Event) -> dict[str, Any]:
    """An event; ``record`` is null and ``blob`` true while its payload is in a blob."""
    document = event.to_dict()
    document["blob"] = event.digest is not None
    return document


def entry_json(entry: Any) -> dict[str, Any]:
    """An index entry (no payload): what the tree is drawn from."""
    return {
        "id": entry.id,
        "parent_id": entry.parent_id,
        "branch_from": entry.branch_from,
        "kind": entry.kind,
        "role": entry.role,
        "timestamp": entry.timestamp,
        "blob": entry.digest is not None,
    }


def source_cwd(info: SessionInfo) -> str | None:
    """The directory an imported session was recorded in (it has no
    working directory of its own, so --continue never picks it)."""
    value = info.meta.get("source_cwd")
    return value if isinstance(value, str) and value else None


def info_json(info: SessionInfo) -> dict[str, Any]:
    """A session's listing row, as ``agentlog ls --json`` gives it."""
    document = dataclasses.asdict(info)
    document.pop("meta", None)
    document["source_cwd"] = source_cwd(info)
    return document


def usage_totals(events: list[Event]) -> dict[str, Any]:
    """Token and cost totals of the assistant messages among ``events``.

    Events whose payload sits in an unloaded blob are counted in
    ``unknown`` rather than guessed."""
    totals: dict[str, Any] = {
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "calls": 0,
        "unknown": 0,
    }
    for event in events:
        if event.kind != "message" or event.role != "assistant":
            continue
        if event.record is None:
            totals["unknown"] += 1
            continue
        usage = event.record.get("usage") if isinstance(event.record, dict) else None
        if not isinstance(usage, dict):
            continue
        totals["calls"] += 1
        for key in ("input_tokens", "output_tokens"):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                totals[key] += value
        cost = usage.get("cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            totals["cost_usd"] += float(cost)
    return totals


async def read_json_object(request: Request, fields: tuple[str, ...]) -> dict[str, Any]:
    """The request body as a JSON object holding only ``fields``, or a 4xx
    ApiError saying why not."""
    kind, _, parameters = request.headers.get("content-type", "").partition(";")
    if kind.strip().lower() != "application/json":
        raise ApiError(415, "unsupported_media_type", "send the body as application/json")
    _check_charset(parameters)
    body = await request.body()
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, "invalid_json", f"the body is not JSON: {exc}") from None
    if _has_huge_float(document):
        _check_integers(body)
    if not isinstance(document, dict):
        raise ApiError(400, "invalid_body", "the body must be a JSON object")
    only_fields(document, fields, "the body")
    return document


def only_fields(document: dict[str, Any], fields: tuple[str, ...], where: str) -> None:
    """A 400 naming the first field of ``document`` not among ``fields``: a
    misspelt optional field (``"working_directory"``) would otherwise be
    dropped without a word, and the write done without it."""
    for name in document:
        if name not in fields:
            known = ", ".join(fields)
            raise ApiError(400, "invalid_body", f"{where} has an unknown field {name!r} (known: {known})")


def _check_charset(parameters: str) -> None:
    """A 415 for a charset other than UTF-8: JSON is UTF-8 (RFC 8259), and a
    body sent as latin-1 would otherwise be read as UTF-8 and stored wrong."""
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() != "charset":
            continue
        charset = value.strip().strip('"').lower()
        if charset not in ("utf-8", "utf8"):
            raise ApiError(415, "unsupported_media_type", f"send the body as UTF-8 JSON, not charset={charset}")


#: How many levels of arrays and objects a body may nest: a record in an
#: append's body, one level down, then nests at most 251, inside the 254 that
#: orjson writes, so the answers that carry it two levels deeper still
#: encode on orjson's fast path. (A deeper record the library stored is
#: still answered: ``_json.dumps`` falls back to the standard encoder.)
MAX_DEPTH = 252

#: The integers agentlog stores (as the library does: signed or unsigned 64-bit).
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _has_huge_float(document: Any) -> bool:
    """True if ``document`` holds a float as large as an integer beyond 64
    bits: orjson reads such an integer literal as a float, without a word.

    A 400 if it is nested deeper than MAX_DEPTH. The walk keeps its own
    stack: a recursive one ran out of Python frames on bodies orjson still
    accepts (it takes 1024 levels) and escaped as a 500."""
    stack: list[tuple[Any, int]] = [(document, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, float):
            if not -(2.0**63) < value < 2.0**64:
                return True
        elif isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                raise ApiError(400, "invalid_json", f"the body is nested more than {MAX_DEPTH} levels deep")
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)
    return False


def _check_integers(body: bytes) -> None:
    """A 400 if the body has an integer literal beyond 64 bits (a float
    literal such as 1e30 is fine: it was written as a float)."""

    def exact(text: str) -> int:
        number = int(text)
        if not _INT_MIN <= number <= _INT_MAX:
            shown = text if len(text) <= 40 else text[:37] + "..."
            raise ApiError(400, "invalid_json", f"the integer {shown} is outside the 64-bit range agentlog stores")
        return number

    try:
        json.loads(body, parse_int=exact)
    except RecursionError:
        raise ApiError(400, "invalid_json", "the body is nested too deeply") from None


def field(document: dict[str, Any], name: str, kinds: type | tuple[type, ...], *, required: bool = False) -> Any:
    """``document[name]`` checked against ``kinds`` (None allowed when optional)."""
    value = document.get(name)
    if value is None:
        if required:
            raise ApiError(400, "invalid_body", f"field {name!r} is required")
        return None
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise ApiError(400, "invalid_body", f"field {name!r} has the wrong type")
    if not isinstance(value, kinds):
        raise ApiError(400, "invalid_body", f"field {name!r} has the wrong type")
    return value

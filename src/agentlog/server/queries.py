"""Query parameters a route does not take are refused, as unknown body fields are.

A misspelt or misplaced parameter (``/context?at=X``: only ``/path`` takes
``at``) was ignored, so the answer was silently about something else (HEAD's
context). Each API route takes exactly the query parameters the OpenAPI
document lists for it, which is what every client is told; ``token`` is the
Guard's, on any route.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from .errors import ApiError

__all__ = ["only_documented_queries"]

_PREFIX = "/api/v1"
_ANYWHERE = frozenset({"token"})


def _documented(document: dict[str, Any]) -> dict[str, dict[str, frozenset[str]]]:
    """Path template -> method -> the query parameters the document lists."""
    out: dict[str, dict[str, frozenset[str]]] = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            names = frozenset(p["name"] for p in operation.get("parameters", ()) if p.get("in") == "query")
            out.setdefault(_PREFIX + path, {})[method.upper()] = names
            if method == "get":
                out[_PREFIX + path]["HEAD"] = names
    return out


def only_documented_queries(routes: list[BaseRoute], document: dict[str, Any]) -> list[BaseRoute]:
    """``routes`` with each documented API route refusing a query parameter
    it does not take (400 ``invalid_parameter``, naming it and those it takes)."""
    documented = _documented(document)
    return [_checked(r, documented[r.path]) if isinstance(r, Route) and r.path in documented else r for r in routes]


def _checked(route: Route, taken: dict[str, frozenset[str]]) -> Route:
    inner = route.endpoint

    async def endpoint(request: Request) -> Response:
        allowed = taken.get(request.method, frozenset()) | _ANYWHERE
        unknown = sorted(set(request.query_params) - allowed)
        if unknown:
            listed = ", ".join(sorted(allowed - _ANYWHERE)) or "none"
            raise ApiError(
                400,
                "invalid_parameter",
                f"this route takes no query parameter {unknown[0]!r} (it takes: {listed})",
            )
        response: Response = await inner(request)
        return response

    return Route(route.path, endpoint, methods=sorted(route.methods or ()), name=route.name)

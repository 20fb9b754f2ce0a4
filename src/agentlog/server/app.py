"""``create_app``: the Starlette application behind ``agentlog serve``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from os import PathLike
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from .. import Store
from ..agent import LiveHub
from .encode import json_response
from .errors import install_handlers
from .feed import Feeds
from .openapi import openapi_document
from .queries import only_documented_queries
from .routes_find import find_routes
from .routes_read import read_routes
from .routes_stream import quiet_cut_streams, stream_routes
from .routes_write import write_routes
from .security import COOKIE, Guard, cookie_value
from .service import Service

__all__ = ["DEFAULT_MAX_BODY", "create_app"]

STATIC = Path(__file__).with_name("static")
DEFAULT_MAX_BODY = 8 * 1024 * 1024


class _RevalidatedStaticFiles(StaticFiles):
    """The viewer's files, each with ``Cache-Control: no-cache``: a browser may
    keep them but asks again (``If-None-Match``, answered ``304`` when
    unchanged) before each use, so an upgraded viewer.js is never mixed with
    the new index.html (which is ``no-store``)."""

    def file_response(
        self, full_path: PathLike[str] | str, stat_result: os.stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = "no-cache"
        return response


def _viewer_routes(token: str | None) -> list[BaseRoute]:
    async def index(request: Request) -> Response:
        if token is not None and "token" in request.query_params:
            # The Guard has checked it; trade it for a cookie and drop it from the URL.
            response: Response = RedirectResponse("/", status_code=303)
            response.set_cookie(COOKIE, cookie_value(token), httponly=True, samesite="strict", path="/")
            return response
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    return [
        Route("/", index, methods=["GET"], name="viewer"),
        Mount("/static", _RevalidatedStaticFiles(directory=STATIC), name="static"),
    ]


def _one_route_per_path(routes: list[BaseRoute]) -> list[BaseRoute]:
    """Routes that share a path (GET and POST /api/v1/sessions, one from the
    read routes, one from the write routes) joined into one that dispatches
    by method: Starlette answers a method none of them takes with the first
    route's methods alone, so the 405's Allow header would leave POST out."""
    by_path: dict[str, list[Route]] = {}
    for route in routes:
        if isinstance(route, Route):
            by_path.setdefault(route.path, []).append(route)
    joined: list[BaseRoute] = []
    for route in routes:
        if not isinstance(route, Route) or len(by_path[route.path]) == 1:
            joined.append(route)
        elif route is by_path[route.path][0]:
            joined.append(_dispatching(by_path[route.path]))
    return joined


def _dispatching(group: list[Route]) -> Route:
    """One route for ``group`` (same path), calling each one's endpoint for its methods."""
    endpoints: dict[str, Any] = {}
    for route in group:
        for method in route.methods or ():
            endpoints.setdefault(method, route.endpoint)

    async def endpoint(request: Request) -> Response:
        response: Response = await endpoints[request.method](request)
        return response

    return Route(group[0].path, endpoint, methods=sorted(endpoints), name=group[0].name)


def create_app(
    store: Store,
    *,
    token: str | None = None,
    hub: LiveHub | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    loopback_only: bool = True,
    queue_size: int = 4096,
    poll_interval: float = 0.2,
    watch_debounce_ms: int = 20,
) -> Starlette:
    """The app serving ``store``.

    ``token``: required from every client when set (bearer or cookie).
    ``hub``: the in-process LiveHub whose deltas the streams carry (an agent
    running in this process publishes there); one is made when omitted.
    ``loopback_only``: accept only localhost Host headers (against DNS
    rebinding); ``agentlog serve`` turns it off when it binds publicly.
    ``queue_size``: items a stream client may lag behind before it is dropped.
    ``poll_interval``: seconds between looks at a backend that cannot be watched.
    """
    quiet_cut_streams()
    hub = hub if hub is not None else LiveHub()
    feeds = Feeds(store, hub, queue_size=queue_size, poll_interval=poll_interval, watch_debounce_ms=watch_debounce_ms)
    service = Service(store, hub, feeds)
    document = openapi_document(token=token is not None)

    async def openapi(request: Request) -> Response:
        return json_response(document)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        service.warm_search()
        yield
        await anyio.to_thread.run_sync(service.stop)
        await feeds.close()

    routes: list[BaseRoute] = [
        Route("/api/v1/openapi.json", openapi, methods=["GET"], name="openapi"),
        *read_routes(service),
        *find_routes(service),
        *write_routes(service),
        *stream_routes(service),
        *_viewer_routes(token),
    ]
    app = Starlette(
        routes=only_documented_queries(_one_route_per_path(routes), document),
        exception_handlers=install_handlers(),
        middleware=[
            Middleware(
                Guard,
                token=token,
                max_body=max_body,
                check_host=loopback_only and token is None,
            )
        ],
        lifespan=lifespan,
    )
    app.state.service = service
    return app

"""Run the app under uvicorn and announce its URL once the socket is bound."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import quote

import uvicorn

from ..store import Store
from .app import create_app
from .security import is_loopback

__all__ = ["run_server", "viewer_url"]


def viewer_url(host: str, port: int, token: str | None) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    if ":" in shown:
        shown = f"[{shown}]"
    query = f"?token={quote(token, safe='')}" if token else ""
    return f"http://{shown}:{port}/{query}"


def run_server(
    store: Store, *, host: str, port: int, token: str | None, max_body: int, announce: Callable[[str], None]
) -> None:
    """Serve until interrupted; ``announce(url)`` once the port is bound."""
    app = create_app(store, token=token, max_body=max_body, loopback_only=is_loopback(host))
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
    )

    async def main() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            bound = port
            for listener in server.servers:
                for sock in listener.sockets:
                    bound = sock.getsockname()[1]
            announce(viewer_url(host, bound, token))
        await task

    asyncio.run(main())

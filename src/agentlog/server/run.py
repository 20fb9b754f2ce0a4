"""Run the app under uvicorn and announce its URL once the socket is bound."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import uvicorn

from .. import Store
from .app import create_app
from .protocol import JsonErrorProtocol
from .security import is_loopback

__all__ = ["KEEP_ALIVE_SECONDS", "bind", "run_server", "server_config", "viewer_url"]

#: How long an idle keep-alive connection stays open. It must outlast the
#: idle expiry of the clients' pools (httpx: 5 s; uvicorn's own default is
#: also 5 s) and of proxies in front (nginx, load balancers: 60 s): when the
#: server closes first, a request the client sends at that moment on the
#: reused connection is reset, and clients do not resend a POST.
KEEP_ALIVE_SECONDS = 75


def viewer_url(host: str, port: int, token: str | None) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    if ":" in shown:
        shown = f"[{shown}]"
    query = f"?token={quote(token, safe='')}" if token else ""
    return f"http://{shown}:{port}/{query}"


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a busy port is a plain
    OSError for the caller to report (uvicorn would log and exit instead)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, address = infos[0]
    return socket.create_server(address[:2], family=family, backlog=2048)


def server_config(app: Any, host: str, port: int, **overrides: Any) -> uvicorn.Config:
    """uvicorn's settings for the app: quiet, with the keep-alive above, a
    JSON answer to a request it cannot parse (``protocol.py``), and no
    WebSocket upgrades."""
    settings: dict[str, Any] = {
        "log_level": "warning",
        "access_log": False,
        "lifespan": "on",
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        "http": JsonErrorProtocol,
        # No WebSocket routes: an upgrade request is answered as plain HTTP,
        # through the Guard, instead of by the websockets package's text 403.
        "ws": "none",
        **overrides,
    }
    return uvicorn.Config(app, host=host, port=port, **settings)


def run_server(
    store: Store, *, host: str, port: int, token: str | None, max_body: int, announce: Callable[[str], None]
) -> None:
    """Serve until interrupted; ``announce(url)`` once the port is bound.
    Raises OSError when the address cannot be bound."""
    sock = bind(host, port)
    app = create_app(store, token=token, max_body=max_body, loopback_only=is_loopback(host))
    server = uvicorn.Server(server_config(app, host, port))

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            announce(viewer_url(host, sock.getsockname()[1], token))
        await task

    asyncio.run(main())

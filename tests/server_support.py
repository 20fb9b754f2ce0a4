"""Fixtures and helpers of the server tests: stores, a demo session, a live server.

The ``store`` fixture is parametrized over the file and memory backends
(the lead later points it at the project-wide backend fixture).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the 'server' extra is not installed")

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from sse_starlette.sse import AppStatus  # noqa: E402

from agentlog import Session, Store  # noqa: E402
from agentlog.server import create_app  # noqa: E402
from agentlog.server.run import server_config  # noqa: E402

#: The stores every backend-independent server test runs on.
BACKENDS = ["files", "memory"]


def make_store(kind: str, tmp_path: Any) -> Store:
    """A store of ``kind`` (one of BACKENDS); a small blob threshold makes blobs cheap."""
    if kind == "files":
        return Store(tmp_path / "home", blob_threshold=4096)
    return Store.memory(blob_threshold=4096)


def usage(inp: int, out: int, cost: float) -> dict[str, Any]:
    return {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out, "cost_usd": cost}


def build_demo(store: Store) -> dict[str, Any]:
    """A session with a tool call, a blob, a compaction, a second branch with
    a branch summary and a label: what the viewer must be able to show.
    Returns the ids the tests look for."""
    ids: dict[str, Any] = {}
    with store.create(name="demo: fix the parser", working_dir="/tmp/project") as s:
        ids["session"] = s.id
        first = s.append(
            "message",
            {"content": "EARLY-QUESTION: why does the parser drop the last line of input? " + "context " * 120},
            role="user",
        )
        ids["first"] = first.id
        s.append(
            "message",
            {"content": "Let me look at the reader. " + "thinking " * 120, "usage": usage(1200, 80, 0.0123)},
            role="assistant",
        )
        call = s.append(
            "tool_call",
            {"id": "call_1", "name": "read_file", "arguments": '{"path": "parser.py"}'},
            role="assistant",
        )
        ids["call"] = call.id
        big = "line of parser.py\n" * 400  # over the blob threshold
        result = s.append(
            "tool_result",
            {"tool_call_id": "call_1", "name": "read_file", "content": big, "is_error": False},
            role="tool",
        )
        ids["blob"] = result.id
        fork_point = s.append(
            "message",
            {"content": "The loop stops at len-1. " + "detail " * 120, "usage": usage(3400, 150, 0.0311)},
            role="assistant",
        )
        ids["fork_point"] = fork_point.id
        s.append("message", {"content": "Try the off-by-one fix. " + "more " * 120}, role="user")
        abandoned = s.append(
            "message",
            {"content": "ABANDONED-ATTEMPT rewriting everything", "usage": usage(4000, 60, 0.02)},
            role="assistant",
        )
        ids["abandoned"] = abandoned.id
        s.select(fork_point.id)
        summary = s.summarize_branch()
        assert summary is not None
        ids["branch_summary"] = summary.id
        s.append("message", {"content": "Please fix only the loop bound."}, role="user")
        s.append(
            "message",
            {"content": "Fixed: range(len(lines)).", "usage": usage(3600, 40, 0.0201)},
            role="assistant",
        )
        compaction = s.compact(keep_tokens=50)
        assert compaction is not None, "the demo session should be long enough to compact"
        ids["compaction"] = compaction.id
        s.append("label", {"name": "fixed", "target": s.head})
        s.append(
            "message",
            {"content": "LATEST-REPLY all tests pass now", "usage": usage(900, 20, 0.004)},
            role="assistant",
        )
        ids["head"] = s.head
    return ids


def append_some(session: Session, n: int, prefix: str = "event") -> list[str]:
    return [session.append("message", {"content": f"{prefix} {i}"}, role="user").id for i in range(n)]


def call(app: Any, method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request to ``app`` in process (httpx's ASGI transport), as a
    client on localhost; never a 5xx (the tests assert that as they go)."""

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            return await client.request(method, url, **kwargs)

    response = asyncio.run(go())
    assert response.status_code < 500, response.text
    return response


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def live_server(store: Store, **options: Any) -> Iterator[str]:
    """The app under a real uvicorn on loopback, in a thread; yields its base URL."""
    with serve_app(create_app(store, **options)) as url:
        yield url


@contextmanager
def serve_app(app: Any) -> Iterator[str]:
    """``app`` (already made, so a test can reach ``app.state``) under a real
    uvicorn on loopback, in a thread; yields its base URL."""
    port = free_port()
    # The command's own settings (keep-alive included), with a short
    # graceful shutdown so that an open stream does not hold a test up.
    server = uvicorn.Server(server_config(app, "127.0.0.1", port, timeout_graceful_shutdown=2))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        # Open streams end (cleanly, with their last chunk) once sse-starlette
        # hears of the exit, which it does from uvicorn's signal handler, as
        # `agentlog serve` stops on Ctrl-C. A server in a thread has no
        # handler, so it is told here, and untold after for the next server
        # of this process; untold, uvicorn cancelled each stream after the
        # graceful timeout and a browser logged a torn response.
        AppStatus.should_exit = True
        server.should_exit = True
        thread.join(10)
        AppStatus.should_exit = False


class SSE:
    """A blocking SSE reader over an httpx streaming response (test side)."""

    def __init__(self, client: Any, url: str, headers: dict[str, str] | None = None) -> None:
        self._cm = client.stream("GET", url, headers=headers or {}, timeout=30)
        self.response = self._cm.__enter__()
        self._lines = self.response.iter_lines()

    def next(self) -> dict[str, Any] | None:
        """The next message: {"event", "id", "data"}; None at the end of the stream."""
        import orjson

        message: dict[str, Any] = {}
        data: list[str] = []
        for line in self._lines:
            if line == "":
                if data or message:
                    message.setdefault("event", "message")
                    message["data"] = orjson.loads("\n".join(data)) if data else None
                    return message
                continue
            if line.startswith(":"):
                continue  # a comment: sse-starlette's ping
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name in ("event", "id"):
                message[name] = value
        return None

    def until(self, predicate: Any, limit: int = 1_000_000) -> list[dict[str, Any]]:
        got = []
        while len(got) < limit:
            message = self.next()
            if message is None:
                break
            got.append(message)
            if predicate(message):
                break
        return got

    def close(self) -> None:
        self._cm.__exit__(None, None, None)

"""A request uvicorn cannot parse gets the API's JSON error, not uvicorn's
plain text (server/protocol.py); the server goes on serving. Raw bytes on
a real socket to a real uvicorn, as a broken client or a scanner sends them."""

from __future__ import annotations

import json
import logging
import socket
from urllib.parse import urlsplit

import pytest

pytest.importorskip("starlette", reason="the 'server' extra is not installed")
httpx = pytest.importorskip("httpx")

from agentlog import Store  # noqa: E402
from server_support import live_server  # noqa: E402

MALFORMED = {
    "request line": b"THIS IS NOT HTTP\r\n\r\n",
    "header without a colon": b"GET /api/v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n",
    "two content lengths": (
        b"POST /api/v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"
    ),
}


def _exchange(base: str, raw: bytes) -> tuple[str, dict[str, str], bytes]:
    """Send ``raw``, read until the server closes: (status line, headers, body)."""
    parts = urlsplit(base)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(raw)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return status, headers, body


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_request_uvicorn_cannot_parse_gets_a_json_400(tmp_path, case: str) -> None:
    store = Store(tmp_path / "home")
    with live_server(store) as base:
        status, headers, body = _exchange(base, MALFORMED[case])
        assert status.startswith("HTTP/1.1 400 ")
        assert headers["content-type"] == "application/json"
        assert int(headers["content-length"]) == len(body)
        error = json.loads(body)["error"]
        assert error["code"] == "bad_request" and error["message"]
        # the server goes on serving
        assert httpx.get(f"{base}/api/v1/sessions", timeout=10).status_code == 200
    store.close()


def test_a_malformed_body_after_the_answer_gets_no_second_response(tmp_path) -> None:
    """The app answered a request whose chunked body it did not read; the
    client then sends a malformed chunk. Nothing more is written on the
    connection (a second status line would land after, or inside, the
    first response): it closes."""
    store = Store(tmp_path / "home")
    with store.create(session_id="s") as s:
        s.append("message", {"content": "hello"}, role="user")
    with live_server(store) as base:
        parts = urlsplit(base)
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
            sock.sendall(b"GET /api/v1/sessions/s HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
            received = b""
            while b"\r\n\r\n" not in received or not received.rstrip().endswith(b"}"):
                chunk = sock.recv(65536)
                assert chunk, f"the server closed before answering: {received!r}"
                received += chunk
            assert received.startswith(b"HTTP/1.1 200 ")
            sock.sendall(b"zz\r\n")  # not a chunk size
            rest = b""
            while chunk := sock.recv(65536):
                rest += chunk
        assert rest == b""
        assert httpx.get(f"{base}/api/v1/sessions", timeout=10).status_code == 200
    store.close()


UPGRADES = {
    "websocket": b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
    "h2c": b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n",
}


@pytest.mark.parametrize("kind", sorted(UPGRADES))
def test_an_upgrade_request_is_answered_as_plain_http_through_the_guard(tmp_path, kind: str) -> None:
    """The server serves no upgrade: the request is an ordinary one, so the
    Host check and the JSON errors apply (the websockets package, when
    installed, used to answer a bare text 403 past the Guard), and nothing
    tells the operator to install a WebSocket library."""
    store = Store(tmp_path / "home")
    logged: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: logged.append(record.getMessage())  # type: ignore[method-assign]
    with live_server(store) as base:
        # uvicorn's logger does not reach the root's (caplog's): listen to it
        logging.getLogger("uvicorn.error").addHandler(handler)
        try:
            start = b"GET /api/v1/health HTTP/1.1\r\nConnection: Upgrade, close\r\n" + UPGRADES[kind]
            status, headers, body = _exchange(base, start + b"Host: 127.0.0.1\r\n\r\n")
            assert status.startswith("HTTP/1.1 200 ") and json.loads(body)["ok"] is True
            status, headers, body = _exchange(base, start + b"Host: evil.example\r\n\r\n")
            assert status.startswith("HTTP/1.1 421 ") and headers["content-type"] == "application/json"
            assert json.loads(body)["error"]["code"] == "bad_host"
        finally:
            logging.getLogger("uvicorn.error").removeHandler(handler)
    store.close()
    assert not [m for m in logged if "upgrade" in m.lower() or "websocket" in m.lower()]

"""A request uvicorn cannot parse gets the API's JSON error, not uvicorn's
plain text (server/protocol.py); the server goes on serving. Raw bytes on
a real socket to a real uvicorn, as a broken client or a scanner sends them."""

from __future__ import annotations

import json
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

"""The guard in front of every route: host check, bearer token, body limit.

Pure ASGI (not BaseHTTPMiddleware) so that it never buffers a response and
SSE streams pass straight through.

- **Token.** With a token configured, every request must carry
  ``Authorization: Bearer <token>`` or the ``agentlog_token`` cookie, which
  ``/?token=<token>`` sets (HttpOnly, SameSite=Strict) so that a browser and
  its EventSource can authenticate. Tokens are compared with
  ``hmac.compare_digest`` over bytes, in constant time.
- **Host.** Bound to loopback without a token, only ``localhost`` and
  loopback addresses are accepted in ``Host``: a web page that rebinds its
  DNS name to 127.0.0.1 still cannot read the API.
- **Body.** A request body longer than ``max_body`` bytes is refused with
  413 before it is read whole, by ``Content-Length`` or while streaming.
- **CORS.** Nothing here sends CORS headers, so browsers keep other
  origins out; writes also demand ``Content-Type: application/json``,
  which a cross-origin form cannot send without a preflight.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, quote

import orjson
from starlette.requests import cookie_parser

from .errors import ApiError

__all__ = ["COOKIE", "Guard", "cookie_value", "is_loopback", "token_matches"]

COOKIE = "agentlog_token"

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}


def is_loopback(host: str) -> bool:
    """True for a name or address that never leaves this machine."""
    host = host.strip("[]").lower()
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_matches(given: str | bytes | None, expected: str) -> bool:
    """Constant-time comparison of a presented token with the configured one
    (bytes as the client sent them, or text, compared as UTF-8)."""
    if given is None:
        return False
    presented = given.encode("utf-8") if isinstance(given, str) else given
    return hmac.compare_digest(presented, expected.encode("utf-8"))


def cookie_value(token: str) -> str:
    """The token as the cookie carries it: percent-encoded UTF-8, so that any
    token (spaces, quotes, non-ASCII) fits in a ``Set-Cookie`` header and
    comes back unchanged."""
    return quote(token, safe="")


def _host_name(value: str) -> str:
    if value.startswith("["):  # [::1]:8765
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class _TooLarge(ApiError):
    """Raised inside the app while it reads the body; the app's ApiError
    handler turns it into the 413 response."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, "body_too_large", f"request body over {limit} bytes")


class Guard:
    """ASGI middleware applying the token, host and body-size rules."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body: int, check_host: bool) -> None:
        self.app = app
        self.token = token
        self.max_body = max_body
        self.check_host = check_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.check_host and not is_loopback(_host_name(headers.get("host", "localhost"))):
            await _reply(send, 421, "bad_host", "this server answers to localhost only")
            return
        if self.token is not None and not self._authorized(scope, headers):
            await _reply(
                send,
                401,
                "unauthorized",
                "a valid bearer token is required",
                extra_headers=[(b"www-authenticate", b'Bearer realm="agentlog"')],
            )
            return
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                await _reply(send, 400, "bad_request", "Content-Length is not a number")
                return
            if int(length) > self.max_body:
                await _reply(send, 413, "body_too_large", f"request body over {self.max_body} bytes")
                return
        if "range" in headers:
            # Nothing here serves ranges (the viewer's files are small), and
            # Starlette would answer a bad Range itself, in text/plain.
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k.lower() != b"range"]}
        await self._call_limited(scope, receive, send)

    def _authorized(self, scope: Scope, headers: dict[str, str]) -> bool:
        assert self.token is not None
        auth = headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        # The header was decoded as latin-1: encoding it back gives the bytes
        # the client sent (UTF-8 for a non-ASCII token, as curl sends it).
        if scheme.lower() == "bearer" and token_matches(value.strip().encode("latin-1"), self.token):
            return True
        # Parsed leniently, as browsers send cookies: the cookies of every
        # other server on localhost (any port) come along, and one that
        # SimpleCookie rejects (a JSON value, a space) made it drop them all,
        # ours included.
        try:
            given = cookie_parser(headers.get("cookie", "")).get(COOKIE)
        except Exception:  # noqa: BLE001 - a malformed Cookie header is just no cookie
            given = None
        if given is not None:
            # As ``/?token=`` sets it (percent-encoded), or the token itself
            # set by hand; both compared, in constant time.
            encoded = token_matches(given, cookie_value(self.token))
            plain = token_matches(given.encode("latin-1", "replace"), self.token)
            if encoded or plain:
                return True
        # The viewer's entry URL carries the token once; the route sets the cookie.
        if scope["path"] == "/" and scope.get("query_string"):
            query = parse_qs(scope["query_string"].decode("latin-1"))
            given = query.get("token", [None])[0]
            return token_matches(given, self.token)
        return False

    async def _call_limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _TooLarge(self.max_body)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _reply(send, 413, "body_too_large", f"request body over {self.max_body} bytes")


async def _reply(
    send: Send, status: int, code: str, message: str, extra_headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = orjson.dumps({"error": {"code": code, "message": message}})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())] + (
        extra_headers or []
    )
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})

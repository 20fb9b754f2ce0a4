"""A tiny local stand-in for an OpenAI-compatible chat-completions server.

Listens on 127.0.0.1 with an ephemeral port (never any other address),
answers each POST with the next scripted reply, and records every request.
Replies:

- ``Stream(events)``: a ``text/event-stream``; dict events are sent as
  ``data: <json>``, str events are written raw (for malformed SSE);
  optional chunked transfer encoding and a pause point;
- ``Json(body, status)``: a plain JSON (or raw text) response;
- ``Hang()``: accept the request and never answer (until the stub stops);
- ``Disconnect()``: close the connection without a response.

Every wait is bounded, so a broken client fails a test instead of hanging.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WAIT = 10.0  # upper bound on any wait inside the stub


@dataclass
class Stream:
    events: list[Any]
    done: bool = True  # send "data: [DONE]" at the end
    chunked: bool = False  # Transfer-Encoding: chunked instead of close-delimited
    newline: str = "\n"
    pause_after: int | None = None  # stop after this many events until resumed
    paused: threading.Event = field(default_factory=threading.Event)
    resume: threading.Event = field(default_factory=threading.Event)
    # At the pause point, wait for the client to hang up instead of for resume.
    await_close: bool = False
    client_closed: threading.Event = field(default_factory=threading.Event)


@dataclass
class Json:
    body: Any
    status: int = 200
    content_type: str = "application/json"


@dataclass
class Hang:
    release: threading.Event = field(default_factory=threading.Event)


@dataclass
class Disconnect:
    pass


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def chunk(
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    *,
    usage: dict[str, Any] | None = None,
    choices: bool = True,
    model: str = "stub-model",
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` as OpenAI streams it."""
    out: dict[str, Any] = {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}] if choices else [],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def usage_chunk(prompt: int, completion: int, **extra: Any) -> dict[str, Any]:
    """The final chunk ``stream_options.include_usage`` asks for: no choices."""
    return chunk(
        usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, **extra},
        choices=False,
    )


def text_events(*pieces: str, usage: tuple[int, int] | None = (11, 3)) -> list[Any]:
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": p}) for p in pieces]
    events.append(chunk({}, "stop"))
    if usage is not None:
        events.append(usage_chunk(*usage))
    return events


class StubOpenAI:
    """Use as a context manager; ``url`` is the base URL (ends in /v1)."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies: deque[Any] = deque(replies)
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._all = list(replies)

    @property
    def url(self) -> str:
        assert self._server is not None, "stub not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> StubOpenAI:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                with stub._lock:
                    stub.requests.append(
                        Request("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    reply = stub.replies.popleft() if stub.replies else None
                self.close_connection = True
                if reply is None:
                    reply = Json({"error": {"message": "stub: no scripted reply left"}}, 500)
                try:
                    stub._answer(self, reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away; that is its business

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval keeps shutdown() (and so each test) quick.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for reply in self._all:  # let paused or hanging handlers finish
            if isinstance(reply, Stream):
                reply.resume.set()
            elif isinstance(reply, Hang):
                reply.release.set()
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(_WAIT)

    def _answer(self, h: BaseHTTPRequestHandler, reply: Any) -> None:
        if isinstance(reply, Disconnect):
            return
        if isinstance(reply, Hang):
            reply.release.wait(_WAIT)
            return
        if isinstance(reply, Json):
            data = reply.body if isinstance(reply.body, (str, bytes)) else json.dumps(reply.body)
            payload = data.encode() if isinstance(data, str) else data
            h.send_response(reply.status)
            h.send_header("Content-Type", reply.content_type)
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
            return
        assert isinstance(reply, Stream)
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        if reply.chunked:
            h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def send(text: str) -> None:
            data = text.encode()
            if reply.chunked:
                data = b"%x\r\n%s\r\n" % (len(data), data)
            h.wfile.write(data)
            h.wfile.flush()

        nl = reply.newline
        for n, event in enumerate(reply.events):
            if reply.pause_after is not None and n == reply.pause_after:
                reply.paused.set()
                if reply.await_close:
                    h.connection.settimeout(_WAIT)
                    try:
                        if h.rfile.read(1) == b"":  # EOF: the client closed
                            reply.client_closed.set()
                    except OSError:
                        pass
                    return
                if not reply.resume.wait(_WAIT):
                    return  # never resumed: cut the stream short
            send(event if isinstance(event, str) else f"data: {json.dumps(event)}{nl}{nl}")
        if reply.done:
            send(f"data: [DONE]{nl}{nl}")
        if reply.chunked:
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()

"""``GET /api/v1/sessions/{id}/stream``: settled events and live deltas over SSE.

Stream format (docs/server.md):

- ``ready``: first, ``{"head", "last_event_id", "replayed"}``.
- ``settled``: one per durable event, SSE ``id:`` = event id, data = the
  event (``record`` null for a blob) plus ``head`` as read with it.
- ``head``: HEAD moved without a new event (a checkout).
- ``delta``: ``{"delta": true, "item": {...}}``, live only, never stored.
- ``problem``: the server could not read the log, found it damaged, could
  not place ``Last-Event-ID``, lost deltas, or the session was deleted.
- ``dropped``: the client was too slow; the stream ends after it.

A client that reconnects with ``Last-Event-ID`` (browsers do it on their
own) or passes ``?after=<event id>`` first gets every settled event after
that id from the log, then the live stream; duplicates are never sent. An
id that is not an event of the session gives a ``problem`` and the whole
session. An error once the headers are out ends the stream after a
``problem`` (never a torn connection).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator

from sse_starlette.sse import EventSourceResponse, SendTimeoutError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..event import check_event_id
from . import params
from .feed import Item, problem_item, read_after
from .service import Service

__all__ = ["stream_routes"]

log = logging.getLogger("agentlog.server")

PING_SECONDS = 15
SEND_TIMEOUT_SECONDS = 30


#: At most this many queued messages go out in one write.
BATCH = 256


#: Streams cut (below) that uvicorn has not yet reported as unfinished.
_cut = 0
_UNFINISHED = "ASGI callable returned without completing response."


class _Stream(EventSourceResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        global _cut
        try:
            await super().__call__(scope, receive, send)
        except SendTimeoutError:
            # The client stopped reading for SEND_TIMEOUT_SECONDS: it is cut
            # off, which is the intended end of this stream, not an error.
            log.info("a client stopped reading its stream for %d s: cut off", SEND_TIMEOUT_SECONDS)
            _cut += 1
            return


class QuietCutStreams(logging.Filter):
    """Drop uvicorn's error line for a stream cut on purpose.

    uvicorn logs every response an app returns from unfinished as an error;
    a stream cut off for a client that stopped reading is one by design
    (the client is not reading, so nothing more can be sent to finish it).
    The count is exact: uvicorn logs right after the app returns, with no
    await in between, so the line it logs is the cut stream's."""

    def filter(self, record: logging.LogRecord) -> bool:
        global _cut
        if _cut and record.getMessage() == _UNFINISHED:
            _cut -= 1
            return False
        return True


def quiet_cut_streams() -> None:
    """Install ``QuietCutStreams`` on uvicorn's error logger (once)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietCutStreams) for f in logger.filters):
        logger.addFilter(QuietCutStreams())


def stream_routes(service: Service) -> list[Route]:
    store = service.store

    async def stream(request: Request) -> Response:
        sid = params.session_id(request)
        after_text = request.headers.get("last-event-id") or request.query_params.get("after")
        after = check_event_id(after_text.strip()) if after_text else None
        queue_size = params.integer(request, "queue", service.feeds.queue_size, 1, 1_000_000)
        # Opened once before the headers go out: a session that is missing
        # or cannot be opened at all gets its JSON error (404, 500 corruption).
        await service.read(sid, lambda session: session.head)

        async def messages() -> AsyncIterator[bytes]:
            # aclosing: when this generator is closed, the inner one (and its
            # subscription) is closed at once, not whenever it is collected.
            async with contextlib.aclosing(_messages()) as inner:
                try:
                    async for chunk in inner:
                        yield chunk
                except Exception as exc:  # noqa: BLE001 - the headers are out: say it on the stream, end cleanly
                    log.warning("stream %s: %s: %s", sid, type(exc).__name__, exc)
                    yield problem_item(f"{type(exc).__name__}: {exc}").wire()

        async def _messages() -> AsyncGenerator[bytes, None]:
            async with service.feeds.subscribe(sid, queue_size) as sub:
                # Subscribed before reading the log: nothing committed in
                # between is missed, and ids filter out what both deliver.
                replay = await service.run(lambda: read_after(store, sid, after))
                sent = replay.after
                ready = Item(
                    "ready",
                    None,
                    {
                        "head": replay.head,
                        "last_event_id": replay.last or None,
                        "replayed": sum(1 for item in replay.items if item.name == "settled"),
                    },
                )
                yield ready.wire()
                if replay.problems:
                    for problem in replay.problems:
                        log.warning("stream %s: %s", sid, problem.data["message"])
                    yield b"".join(problem.wire() for problem in replay.problems)
                for start in range(0, len(replay.items), BATCH):
                    yield b"".join(item.wire() for item in replay.items[start : start + BATCH])
                while True:
                    batch = await sub.get_many(BATCH)
                    if not batch:
                        return
                    out = []
                    for item in batch:
                        if item.name == "settled":
                            assert item.id is not None
                            if item.id <= sent:
                                continue
                            sent = item.id
                        out.append(item.wire())
                    if out:
                        yield b"".join(out)
                    if batch[-1].name == "dropped":
                        return

        return _Stream(
            messages(),
            ping=PING_SECONDS,
            send_timeout=SEND_TIMEOUT_SECONDS,
            headers={"Cache-Control": "no-store"},
        )

    return [Route("/api/v1/sessions/{session_id}/stream", stream, methods=["GET"], name="stream")]

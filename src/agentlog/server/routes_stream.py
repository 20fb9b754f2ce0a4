"""``GET /api/v1/sessions/{id}/stream``: settled events and live deltas over SSE.

Stream format (docs/server.md):

- ``ready``: first, ``{"head", "last_event_id", "replayed"}``.
- ``settled``: one per durable event, SSE ``id:`` = event id, data = the
  event (``record`` null for a blob) plus ``head`` after its batch.
- ``head``: HEAD moved without a new event (a checkout).
- ``delta``: ``{"delta": true, "item": {...}}``, live only, never stored.
- ``problem``: the server could not read the log or lost deltas.
- ``dropped``: the client was too slow; the stream ends after it.

A client that reconnects with ``Last-Event-ID`` (browsers do it on their
own) or passes ``?after=<event id>`` first gets every settled event after
that id from the log, then the live stream; duplicates are never sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from sse_starlette.sse import EventSourceResponse, SendTimeoutError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..event import check_event_id
from . import params
from .errors import ApiError
from .feed import Item, read_after
from .service import Service

__all__ = ["stream_routes"]

PING_SECONDS = 15
SEND_TIMEOUT_SECONDS = 30


#: At most this many queued messages go out in one write.
BATCH = 256


class _Stream(EventSourceResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except SendTimeoutError:
            # The client stopped reading for SEND_TIMEOUT_SECONDS: it is cut
            # off, which is the intended end of this stream, not an error.
            return


def stream_routes(service: Service) -> list[Route]:
    store = service.store

    async def stream(request: Request) -> Response:
        sid = params.session_id(request)
        after_text = request.headers.get("last-event-id") or request.query_params.get("after")
        after = check_event_id(after_text.strip()) if after_text else None
        queue_size = params.integer(request, "queue", service.feeds.queue_size, 1, 1_000_000)
        if not await service.run(lambda: store.exists(sid)):
            raise ApiError(404, "session_not_found", f"session {sid!r} not found")

        async def messages() -> AsyncIterator[bytes]:
            async with service.feeds.subscribe(sid, queue_size) as sub:
                # Subscribed before reading the log: nothing committed in
                # between is missed, and ids filter out what both deliver.
                replay, head, last = await service.run(lambda: read_after(store, sid, after))
                sent = max(after or "", last)
                ready = Item("ready", None, {"head": head, "last_event_id": last or None, "replayed": len(replay)})
                yield ready.wire()
                for start in range(0, len(replay), BATCH):
                    yield b"".join(item.wire() for item in replay[start : start + BATCH])
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

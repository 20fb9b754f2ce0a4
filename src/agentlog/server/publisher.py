"""RemoteHub: a LiveHub that also sends an agent's deltas to a running server.

Give it to the reference agent loop (``Agent(..., hub=RemoteHub(url))``)
and ``agentlog serve`` shows the agent typing. Deltas are batched and
POSTed to ``/api/v1/sessions/{id}/live`` by one background thread with the
standard library's HTTP client (the agent needs no extra package). The
agent never waits for the network: when the outgoing queue is full a delta
is dropped and counted in :attr:`RemoteHub.lost`. Settled events are not
sent: the server reads those from the log itself, so they arrive once,
in order, even if this process dies.
"""

from __future__ import annotations

import dataclasses
import http.client
import queue
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import orjson

from .. import Event
from ..agent import LiveHub

__all__ = ["RemoteHub"]

_STOP = object()
_BATCH = 256


def _jsonable(item: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        body: dict[str, Any] = dataclasses.asdict(item)
        body.setdefault("type", type(item).__name__.lower())
        return body
    if isinstance(item, dict):
        return item
    return {"type": type(item).__name__.lower(), "value": repr(item)}


class RemoteHub(LiveHub):
    """Local fan-out as a LiveHub, plus a copy of every delta to ``url``."""

    def __init__(self, url: str, *, token: str | None = None, max_pending: int = 10_000, timeout: float = 5.0) -> None:
        super().__init__()
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            # refused here: the sender thread could only fail on every delta
            raise ValueError(f"RemoteHub needs an http:// or https:// URL, not {url!r}")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.lost = 0
        self.sent = 0
        self.last_error: str | None = None
        self._queue: queue.Queue[Any] = queue.Queue(max_pending)
        self._thread = threading.Thread(target=self._run, daemon=True, name="agentlog-remote-hub")
        self._thread.start()

    def publish(self, session_id: str, item: Any) -> int:
        delivered = super().publish(session_id, item)
        if not isinstance(item, Event):
            try:
                # Encoded here, so that a delta JSON cannot hold (a lone
                # surrogate, a set) is this delta's loss, not the sender's.
                body = orjson.dumps(_jsonable(item))
            except orjson.JSONEncodeError as exc:
                self.lost += 1
                self.last_error = f"a delta could not be sent as JSON: {exc}"
                return delivered
            try:
                self._queue.put_nowait((session_id, body))
            except queue.Full:
                self.lost += 1  # never block the agent: a lost delta is only a live preview
        return delivered

    def close(self, session_id: str | None = None) -> None:
        """With a session id: end its local subscriptions (as LiveHub). Without:
        send what is queued and stop the sender thread."""
        if session_id is not None:
            super().close(session_id)
            return
        try:
            # A full queue drains while the sender lives; never wait longer than a send.
            self._queue.put(_STOP, timeout=self.timeout)
        except queue.Full:
            self.last_error = "closed with deltas still queued; they were not sent"
        self._thread.join(self.timeout * 2)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch = [first]
            stop = False
            while len(batch) < _BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is _STOP:
                    stop = True
                    break
                batch.append(more)
            by_session: dict[str, list[bytes]] = {}
            for session_id, body in batch:
                by_session.setdefault(session_id, []).append(body)
            for session_id, items in by_session.items():
                self._post(session_id, items)
            if stop:
                return

    def _post(self, session_id: str, items: list[bytes]) -> None:
        request = urllib.request.Request(
            f"{self.url}/api/v1/sessions/{session_id}/live",
            data=b'{"items":[' + b",".join(items) + b"]}",
            method="POST",
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {self.token}"} if self.token else {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
            self.sent += len(items)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            # The server is down or refused: deltas are a preview, the log
            # holds the truth; count the loss and keep the agent running.
            self.lost += len(items)
            self.last_error = str(exc)

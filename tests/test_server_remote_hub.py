"""RemoteHub never lets one delta, or a server gone, stop the agent's preview.

A delta orjson cannot encode (a lone surrogate from a stream cut inside an
emoji, a set) used to end the sender thread: every later delta was lost
without being counted, and ``close()`` then blocked for good on the full
queue."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agentlog import Store
from server_support import live_server

httpx = pytest.importorskip("httpx")

from agentlog.agent.models import Delta  # noqa: E402
from agentlog.server import RemoteHub  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def _wait(check: Any, seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def test_a_delta_json_cannot_hold_is_counted_and_the_rest_are_sent(tmp_path: Any) -> None:
    store = Store(tmp_path / "home")
    with store.create(name="live") as s:
        sid = s.id
    with live_server(store) as url:
        hub = RemoteHub(url, timeout=2)
        hub.publish(sid, Delta(text="half an emoji \ud83d"))
        hub.publish(sid, {"type": "note", "when": {1, 2}})
        for i in range(5):
            hub.publish(sid, Delta(text=f"later {i}"))
        _wait(lambda: hub.sent == 5)
        assert hub.lost == 2 and "JSON" in (hub.last_error or "")
        hub.close()
        assert not hub._thread.is_alive()


def test_close_never_blocks_on_a_full_queue(tmp_path: Any) -> None:
    # a port nobody listens on: every send fails fast, and the queue fills
    hub = RemoteHub("http://127.0.0.1:9", max_pending=3, timeout=0.5)
    for i in range(50):
        hub.publish("s", Delta(text=f"d{i}"))
    started = time.monotonic()
    hub.close()
    assert time.monotonic() - started < 5
    assert hub.lost + hub.sent >= 3 and hub.sent == 0


def test_a_url_that_is_not_http_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="http"):
        RemoteHub("localhost:8000")

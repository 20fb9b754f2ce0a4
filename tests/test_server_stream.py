"""SSE streams on a real server: replay with Last-Event-ID, deltas, slow clients."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import pytest

from server_support import SSE, append_some, live_server

httpx = pytest.importorskip("httpx")

from agentlog import Store  # noqa: E402
from agentlog.agent import LiveHub  # noqa: E402
from agentlog.agent.loop import Agent  # noqa: E402
from agentlog.agent.models import Delta  # noqa: E402
from agentlog.agent.scripted import ScriptedModel  # noqa: E402
from agentlog.server import RemoteHub  # noqa: E402
from agentlog.server.feed import Item, Subscriber  # noqa: E402

API = "/api/v1"
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def store(make_store: Any) -> Store:
    """Each backend of conftest.BACKENDS (a small blob threshold makes blobs cheap)."""
    return make_store(blob_threshold=4096)


def settled_ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in messages if m["event"] == "settled"]


def test_reconnect_with_last_event_id_loses_nothing(store: Store) -> None:
    """A client reads part of a writer's commits, disconnects while the writer
    goes on, reconnects with Last-Event-ID: it ends with every event exactly
    once, in append order (file store: watched; memory store: polled)."""
    writer = store.create(name="stream")
    sid = writer.id
    total = 300
    written: list[str] = []

    def write() -> None:
        for i in range(total):
            written.append(writer.append("message", {"content": f"n{i}"}, role="user").id)
            if i % 10 == 0:
                time.sleep(0.005)  # let the reader see it in several pieces

    with live_server(store) as url, httpx.Client(base_url=url) as client:
        first = SSE(client, f"{API}/sessions/{sid}/stream")
        ready = first.next()
        assert ready is not None and ready["event"] == "ready"
        thread = threading.Thread(target=write)
        thread.start()
        part = settled_ids(first.until(lambda m: m["event"] == "settled" and m["data"]["record"]["content"] == "n99"))
        first.close()
        # A commit can reach the stream before append() returns to the writer
        # thread that records its id (PostgreSQL notifies at COMMIT): wait for it.
        deadline = time.monotonic() + 30
        while len(written) < 100 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert part == written[:100]
        time.sleep(0.2)  # the writer keeps committing while nobody listens
        second = SSE(client, f"{API}/sessions/{sid}/stream", headers={"Last-Event-ID": part[-1]})
        assert (second.next() or {})["event"] == "ready"
        thread.join()
        rest = settled_ids(second.until(lambda m: m.get("id") == written[-1]))
        second.close()
    writer.close()
    assert part + rest == written
    with store.open(sid, readonly=True) as s:
        assert [e.id for e in s.entries()] == written


def test_settled_events_carry_head_and_checkout_moves_it(store: Store) -> None:
    with store.create(name="s") as s:
        ids = append_some(s, 3)
        sid = s.id
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        sse = SSE(client, f"{API}/sessions/{sid}/stream?after={ids[0]}")
        ready = sse.next()
        assert ready is not None and ready["data"]["replayed"] == 2
        replayed = [sse.next() for _ in range(2)]
        assert [m["id"] for m in replayed if m] == ids[1:]
        assert all(m and m["data"]["head"] == ids[2] and m["data"]["record"] for m in replayed)
        posted = client.post(
            f"{API}/sessions/{sid}/events",
            json={"kind": "message", "role": "assistant", "record": {"content": "x"}},
        )
        new = posted.json()["event"]["id"]
        got = sse.until(lambda m: m["event"] == "settled")
        assert got[-1]["id"] == new and got[-1]["data"]["parent_id"] == ids[2]
        assert got[-1]["data"]["head"] == new
        client.post(f"{API}/sessions/{sid}/checkout", json={"event_id": ids[0]})
        moved = sse.until(lambda m: m["event"] == "head")
        assert moved[-1]["data"] == {"head": ids[0]}
        sse.close()


def test_hub_deltas_and_remote_publisher(tmp_path: Any) -> None:
    """Deltas from the in-process hub and from an agent in another place
    (RemoteHub, over HTTP) reach the stream marked as deltas; the agent's
    settled events come from the log."""
    store = Store(tmp_path / "home")
    with store.create(name="agent") as s:
        sid = s.id
    hub = LiveHub()
    with live_server(store, hub=hub) as url, httpx.Client(base_url=url) as client:
        sse = SSE(client, f"{API}/sessions/{sid}/stream")
        assert (sse.next() or {})["event"] == "ready"
        hub.publish(sid, Delta(text="in-process"))
        local = sse.until(lambda m: m["event"] == "delta")[-1]
        assert local["data"] == {
            "delta": True,
            "item": {"text": "in-process", "reasoning": "", "tool_call_delta": None, "type": "delta"},
        }
        assert "id" not in local  # deltas never move Last-Event-ID

        remote = RemoteHub(url)
        model = ScriptedModel(["Hello there from the scripted model"])
        with store.open(sid) as session:
            result = Agent(session, model, hub=remote).run("say hello")
        remote.close()
        assert remote.lost == 0 and remote.sent > 0
        got = sse.until(lambda m: m["event"] == "settled" and m["data"]["role"] == "assistant")
        sse.close()
    typed = "".join(m["data"]["item"]["text"] for m in got if m["event"] == "delta")
    assert typed == result.text == "Hello there from the scripted model"
    settled = [m for m in got if m["event"] == "settled"]
    assert [m["data"]["role"] for m in settled if m["data"]["kind"] == "message"] == ["user", "assistant"]


def test_slow_subscriber_is_dropped_without_blocking() -> None:
    """The queue itself: a subscriber that never reads is cut off at its
    bound; offering never waits; the notice comes after what was queued."""

    async def main() -> None:
        sub = Subscriber(maxsize=5)
        for i in range(10_000):  # offer() is synchronous: it cannot wait for the reader
            sub.offer(Item("settled", f"{i:08d}", {}))
        got = [await sub.get() for _ in range(6)]
        assert [g.id for g in got[:5] if g] == [f"{i:08d}" for i in range(5)]
        assert got[5] is not None and got[5].name == "dropped"
        assert await sub.get() is None

    asyncio.run(main())


def test_slow_client_does_not_slow_the_writer(tmp_path: Any) -> None:
    """A client that never reads its socket while a writer appends 500 events
    of 14 KB each through the API (7 MB: more than the kernel buffers on
    loopback hold): every append succeeds, a normal client gets every
    event, and the stalled client is told it was dropped."""
    store = Store(tmp_path / "home", durability="off")
    with store.create(name="busy") as s:
        sid = s.id
    with live_server(store, queue_size=8) as url, httpx.Client(base_url=url) as client:
        host, port = url.removeprefix("http://").split(":")
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a tiny window
        stalled.connect((host, int(port)))
        stalled.sendall(
            f"GET {API}/sessions/{sid}/stream HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n".encode()
        )
        fast = SSE(client, f"{API}/sessions/{sid}/stream?queue=100000")
        assert (fast.next() or {})["event"] == "ready"
        time.sleep(0.3)  # the stalled client is subscribed too
        written = []
        for i in range(500):
            response = client.post(
                f"{API}/sessions/{sid}/events",
                json={"kind": "message", "role": "user", "record": {"content": f"{i} " + "z" * 14_000}},
            )
            assert response.status_code == 201
            written.append(response.json()["event"]["id"])
        got = settled_ids(fast.until(lambda m: m.get("id") == written[-1]))
        fast.close()
        assert got == written
        stalled.settimeout(20)
        received = b""
        while b"event: dropped" not in received:
            try:
                chunk = stalled.recv(1 << 20)
            except TimeoutError:
                break
            if not chunk:
                break
            received += chunk
        stalled.close()
        assert b"event: dropped" in received
        assert b"subscriber too slow" in received

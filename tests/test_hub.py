"""LiveHub: per-session fan-out that never blocks the publisher.

Synchronization is by events and joins, never by sleeping; the bounded
waits are deadlock guards only.
"""

from __future__ import annotations

import threading

import pytest

from agentlog import InvalidSessionId
from agentlog.agent import Delta, Dropped, LiveHub

GUARD = 10.0  # seconds; only reached if the code under test deadlocks


def collect(sub, into: list, started: threading.Event | None = None) -> threading.Thread:
    def run():
        if started is not None:
            started.set()
        for item in sub:
            into.append(item)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_every_subscriber_gets_every_item_in_order():
    hub = LiveHub()
    items = [Delta(text=str(i)) for i in range(500)]
    got_a: list = []
    got_b: list = []
    sub_a = hub.subscribe("s1", maxsize=len(items))
    sub_b = hub.subscribe("s1", maxsize=len(items))
    threads = [collect(sub_a, got_a), collect(sub_b, got_b)]

    delivered = [hub.publish("s1", item) for item in items]
    hub.close("s1")
    for t in threads:
        t.join(GUARD)
        assert not t.is_alive()

    assert delivered == [2] * len(items)
    assert got_a == items
    assert got_b == items
    assert hub.subscribers("s1") == 0


def test_slow_subscriber_is_dropped_and_publisher_never_waits():
    hub = LiveHub()
    n = 200
    fast_got: list = []
    fast = hub.subscribe("s1", maxsize=n)
    fast_thread = collect(fast, fast_got)

    slow = hub.subscribe("s1", maxsize=4)
    slow_got: list = []
    slow_holding = threading.Event()
    release_slow = threading.Event()

    def slow_reader():
        for item in slow:
            slow_got.append(item)
            if len(slow_got) == 1:
                slow_holding.set()
                release_slow.wait(GUARD)  # stuck while the publisher runs

    slow_thread = threading.Thread(target=slow_reader, daemon=True)
    slow_thread.start()

    published = threading.Event()

    def publisher():
        hub.publish("s1", 0)
        assert slow_holding.wait(GUARD)
        for i in range(1, n):
            hub.publish("s1", i)
        published.set()

    pub_thread = threading.Thread(target=publisher, daemon=True)
    pub_thread.start()

    # The publisher finishes all n items while the slow reader is still blocked.
    assert published.wait(GUARD)
    assert not release_slow.is_set() and slow_thread.is_alive()
    assert hub.subscribers("s1") == 1  # only the fast one is left

    release_slow.set()
    slow_thread.join(GUARD)
    assert not slow_thread.is_alive()  # its iterator ended after the notice
    assert isinstance(slow_got[-1], Dropped)
    assert "queue of 4 items was full" in slow_got[-1].reason
    assert slow.dropped == slow_got[-1]
    # What it did get is the head of the stream, in order: 1 taken + 4 queued.
    assert slow_got[:-1] == list(range(5))

    hub.close("s1")
    fast_thread.join(GUARD)
    assert fast_got == list(range(n))


def test_unsubscribe_stops_delivery():
    hub = LiveHub()
    with hub.subscribe("s1") as sub:
        hub.publish("s1", "a")
    assert hub.subscribers("s1") == 0
    assert hub.publish("s1", "b") == 0
    assert list(sub) == ["a"]  # the backlog drains, then iteration ends
    assert sub.ended and sub.dropped is None


def test_other_sessions_items_are_not_delivered():
    hub = LiveHub()
    mine = hub.subscribe("s1")
    other = hub.subscribe("s2")
    hub.publish("s1", "for s1")
    hub.publish("s2", "for s2")
    hub.publish("s3", "for nobody")
    hub.close("s1")
    hub.close("s2")
    assert list(mine) == ["for s1"]
    assert list(other) == ["for s2"]


def test_close_wakes_a_blocked_subscriber():
    hub = LiveHub()
    sub = hub.subscribe("s1")
    got: list = []
    started = threading.Event()
    thread = collect(sub, got, started)
    assert started.wait(GUARD)
    hub.close("s1")
    thread.join(GUARD)
    assert not thread.is_alive()
    assert got == []


def test_close_ends_only_that_session_and_allows_resubscribing():
    hub = LiveHub()
    old = hub.subscribe("s1")
    keep = hub.subscribe("s2")
    hub.close("s1")
    new = hub.subscribe("s1")
    hub.publish("s1", 1)
    hub.publish("s2", 2)
    assert list(old) == []
    assert new.poll(0) == 1
    assert keep.poll(0) == 2
    assert not keep.ended


def test_poll_returns_none_when_nothing_arrives():
    hub = LiveHub()
    sub = hub.subscribe("s1")
    assert sub.poll(0) is None
    assert not sub.ended


def test_none_is_an_item_like_any_other():
    hub = LiveHub()
    sub = hub.subscribe("s1")
    hub.publish("s1", None)
    hub.publish("s1", "after")
    hub.close("s1")
    assert list(sub) == [None, "after"]


def test_dropped_notice_is_delivered_once():
    hub = LiveHub()
    sub = hub.subscribe("s1", maxsize=1)
    assert hub.publish("s1", "kept") == 1
    assert hub.publish("s1", "lost") == 0
    assert hub.publish("s1", "lost too") == 0
    assert sub.poll(0) == "kept"
    notice = sub.poll(0)
    assert isinstance(notice, Dropped) and "dropped after 1 items" in notice.reason
    assert sub.poll(0) is None
    assert list(sub) == []


def test_bad_arguments():
    hub = LiveHub()
    with pytest.raises(InvalidSessionId):
        hub.subscribe("../etc")
    with pytest.raises(ValueError):
        hub.subscribe("s1", maxsize=0)

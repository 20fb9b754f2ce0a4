"""An open of a session while another thread closes its last handle. The
registry used to forget the writer before closing it, so the open made a
second core while the first still held the lease: on PostgreSQL,
SessionLocked against this very process (an Agents SDK session made per
request, closed by the garbage collector's thread, hit it one request in
twenty); on files, two cores racing on the HEAD cache."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from agentlog import Store
from agentlog.timeline import Timeline


def test_open_waits_for_a_close_in_progress(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    session = store.create()
    session.append("message", {"content": "one"}, role="user")
    sid = session.id
    real_close = Timeline.close
    closing = threading.Event()

    def slow_close(self: Timeline, *args: Any, **kwargs: Any) -> Any:
        closing.set()
        time.sleep(0.3)  # the window the open used to fall into
        return real_close(self, *args, **kwargs)

    monkeypatch.setattr(Timeline, "close", slow_close)
    closer = threading.Thread(target=session.close)
    closer.start()
    assert closing.wait(5)
    with store.open(sid) as again:  # waits for the close, then opens
        again.append("message", {"content": "two"}, role="user")
        assert [e.record["content"] for e in again.transcript()] == ["one", "two"]
    closer.join(5)
    assert not closer.is_alive()
    with store.open(sid) as third:
        assert len(third) == 2


def test_many_short_lived_handles_from_threads(store: Store) -> None:
    with store.create() as created:  # closed: each request below is the session's only writer
        sid = created.id
    errors: list[BaseException] = []

    def request(i: int) -> None:
        try:
            handle = store.open(sid)
            handle.append("message", {"content": str(i)}, role="user")
            threading.Thread(target=handle.close).start()  # closed elsewhere, as a finalizer does
        except BaseException as exc:  # reported below, with the request that raised it
            errors.append(exc)

    for i in range(40):
        request(i)
    deadline = time.monotonic() + 10
    while threading.active_count() > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert errors == []
    with store.open(sid) as final:
        assert len(final) == 40

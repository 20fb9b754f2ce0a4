"""A session deleted under an open read-only handle never reads as empty.

On SQLite and PostgreSQL the rows go with the session, and a handle opened
before read HEAD as the root and every list as empty, with no error: a
viewer or harness tailing it would have sent the model an empty
conversation. Every backend now either says the session is gone
(``SessionNotFound``) or answers from what the handle already holds (the
file backend reads through files it has open, the memory backend through
the objects it has); never a whole session that reads as empty."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentlog import SessionNotFound, Store


def _read(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except SessionNotFound:
        return SessionNotFound


def test_reads_of_a_session_deleted_under_a_reader(make_store: Callable[..., Store]) -> None:
    store = make_store()
    with store.create() as s:
        first = s.append("message", {"content": "hello"}, role="user")
        sid = s.id
    reader = store.open(sid, readonly=True)
    store.delete(sid)
    reads: dict[str, Callable[[], Any]] = {
        "head": lambda: reader.head,
        "len": lambda: len(reader),
        "path": lambda: [e.id for e in reader.path()],
        "context": lambda: [e.id for e in reader.context()],
        "events": lambda: [e.id for e in reader.events()],
        "entries": lambda: [e.id for e in reader.entries()],
        "event": lambda: reader.event(first.id).id,
    }
    as_before = {"head": first.id, "len": 1, "path": [first.id], "context": [first.id],
                 "events": [first.id], "entries": [first.id], "event": first.id}  # fmt: skip
    for name, call in reads.items():
        got = _read(call)
        assert got is SessionNotFound or got == as_before[name], (name, got)
    with pytest.raises(SessionNotFound):
        reader.refresh()
    reader.close()

"""fsck of a SQLite, PostgreSQL or memory session that another writer is
appending to reports no false damage. The count and the newest id were
read after the events, as separate queries, so the appends in between
read as "its event count says 21326, and it holds 21066 events" (SQLite:
36 runs in 40 against a busy writer)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from agentlog import Store
from agentlog.backends.base import IndexEntry, SessionStorage


def test_appends_during_fsck_are_no_damage(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    if store.url.startswith("file:"):
        pytest.skip("the file backend's own case: test_fsck_while_appending.py")
    writer = store.create()
    for i in range(5):
        writer.append("message", {"content": f"m{i}"}, role="user")
    listed: list[type[SessionStorage]] = []

    def entries_then_appends(self: SessionStorage) -> Iterator[IndexEntry]:
        yield from real_entries(self)
        if not listed:  # once: the listing fsck makes first
            listed.append(type(self))
            for i in range(3):
                writer.append("message", {"content": f"later {i}"}, role="user")

    storage_type = type(writer._timeline.storage)  # the backend's storage class
    real_entries = storage_type.entries
    monkeypatch.setattr(storage_type, "entries", entries_then_appends)
    problems = store.fsck(writer.id)
    assert listed, "fsck did not list the events"
    assert [p.message for p in problems] == []
    monkeypatch.undo()
    assert store.fsck(writer.id) == []
    writer.close()


def test_a_count_that_disagrees_is_still_found(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    if store.url.startswith("file:"):
        pytest.skip("rows only")
    with store.create() as writer:
        writer.append("message", {"content": "m"}, role="user")
        sid = writer.id
    real_stats = type(store.backend).stats

    def stats_off_by_two(self: Any, session_id: str) -> Any:
        stats = real_stats(self, session_id)
        return dataclasses.replace(stats, event_count=stats.event_count + 2)

    monkeypatch.setattr(type(store.backend), "stats", stats_off_by_two)
    messages = [p.message for p in store.fsck(sid)]
    assert any("its event count says 3, and it holds 1 events" in m for m in messages), messages

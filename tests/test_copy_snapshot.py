"""A copy takes one snapshot of its source, HEAD first: a writer appending
while the copy runs (a SQL store's reader sees it at once) must never
leave the copy with a HEAD that names an event it does not hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentlog import InvalidEvent, Store
from agentlog.copying import copy_sessions
from agentlog.session import Session


def test_an_append_during_the_copy_leaves_a_whole_copy_and_the_next_copy_extends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = Store(f"sqlite:///{tmp_path}/source.db")
    writer = source.create(session_id="live")
    for n in range(3):
        writer.append("message", {"content": f"m{n}"}, role="user")
    before = writer.head
    entries = Session.entries
    appended: list[str] = []

    def entries_then_a_writer_appends(self: Session) -> Any:
        got = entries(self)
        if self.readonly and not appended:  # the copy's reader, between its reads
            appended.append(writer.append("message", {"content": "landed mid-copy"}, role="user").id)
        return got

    target = Store(tmp_path / "target")
    monkeypatch.setattr(Session, "entries", entries_then_a_writer_appends)
    copy_sessions(source, target)
    monkeypatch.setattr(Session, "entries", entries)
    assert appended  # the race happened
    with target.open("live", readonly=True) as copy:
        assert copy.head == before and len(copy.entries()) == 3  # the snapshot, whole
        assert [e.record["content"] for e in copy.transcript()] == ["m0", "m1", "m2"]
    assert target.fsck() == []
    report = copy_sessions(source, target)  # the next copy brings what landed after the snapshot
    assert report.extended == ["live"]
    with target.open("live", readonly=True) as copy:
        assert copy.head == appended[0] and len(copy.entries()) == 4
    writer.close()


def test_a_session_is_never_created_with_a_head_outside_its_events(store: Store) -> None:
    with store.create(session_id="s") as s:
        events = [s.append("message", {"content": f"m{n}"}, role="user") for n in range(3)]
    with store.open("s", readonly=True) as s:
        first = [s.event(e.id) for e in events[:2]]
        with pytest.raises(InvalidEvent, match="is not one of the 2 events"):
            store.create_timeline("copy", s.meta, first, s.storage, events[2].id)
    assert not store.exists("copy")


def test_a_bundle_round_trip_keeps_the_sessions_date(tmp_path: Path) -> None:
    import io
    import os
    import time

    from agentlog.export import export_session
    from agentlog.export.bundle import import_bundle

    source = Store(tmp_path / "source")
    with source.create(session_id="old") as s:
        s.append("message", {"content": "long ago"}, role="user")
        s.storage.set_updated_ns(1_700_000_000 * 10**9)  # 2023-11-14
    dated = source.info("old").updated_at
    with source.open("old", readonly=True) as s:
        out = io.BytesIO()
        export_session(s, "bundle", out)
    path = tmp_path / "old.bundle"
    path.write_bytes(out.getvalue())
    time.sleep(0.01)
    target = Store(tmp_path / "target")
    assert import_bundle(target, os.fspath(path)).outcome == "created"
    assert target.info("old").updated_at == dated  # not the import's time

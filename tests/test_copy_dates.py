"""A copy keeps each session's last-change date (QA finding: every copied
session was dated the moment of the copy, so ``ls`` order flipped and
``prune --older-than`` took old sessions for new)."""

from __future__ import annotations

import time
from collections.abc import Callable

from agentlog import Store
from agentlog.copying import copy_sessions


def test_copy_keeps_each_sessions_date_on_every_backend(make_store: Callable[..., Store], tmp_path) -> None:
    source = Store(tmp_path / "source")
    for sid in ("old", "new"):
        with source.create(session_id=sid) as s:
            s.append("message", {"content": sid}, role="user")
        time.sleep(0.02)
    before = {i.id: i.updated_at for i in source.list()}
    assert [i.id for i in source.list()] == ["new", "old"]
    target = make_store()
    time.sleep(0.02)
    copy_sessions(source, target)
    assert {i.id: i.updated_at for i in target.list()} == before
    assert [i.id for i in target.list()] == ["new", "old"]
    stats = {sid: target.backend.stats(sid).updated_ns for sid in ("old", "new")}
    assert stats == {sid: source.backend.stats(sid).updated_ns for sid in ("old", "new")}
    with target.open("old") as s:  # the next change dates it again
        s.append("message", {"content": "later"}, role="user")
    assert [i.id for i in target.list()] == ["old", "new"]

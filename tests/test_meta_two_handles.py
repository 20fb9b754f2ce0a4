"""Two writer handles of one session in one process, changing the metadata
from two threads. Each handle read, changed and wrote the document under
its own lock only, so one's update undid the other's (PostgreSQL kept 209
of 400 fields), and on files the two writes raced on one temporary file
(session.json left torn, the session dropped from ls)."""

from __future__ import annotations

import threading

from agentlog import Store


def test_no_update_is_lost(store: Store) -> None:
    sid = store.create().id
    handles = [store.open(sid), store.open(sid)]

    def work(handle, name):  # type: ignore[no-untyped-def]
        for i in range(60):
            handle.update_meta(**{f"{name}{i}": True})
            if i % 20 == 0:
                handle.set_draft(f"{name} {i}")

    threads = [threading.Thread(target=work, args=(h, n)) for h, n in zip(handles, "ab", strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    meta = handles[0].meta
    assert sum(1 for key in meta if key[0] in "ab" and key[1:].isdigit()) == 120
    assert handles[1].draft() in {"a 40", "b 40"}
    for handle in handles:
        handle.close()
    assert store.fsck(sid) == []

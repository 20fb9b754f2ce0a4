"""A session deleted and imported again from a bundle (the --redact flow:
export redacted, delete, import the redacted bundle) is searched as it is
now. The re-created session had as many events and the same dates, so the
index took it for unchanged and search went on showing the deleted text,
the secret included."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlog import Store
from agentlog.export import export_session
from agentlog.export.bundle import import_bundle

pytest.importorskip("detect_secrets", reason="the 'redact' extra is not installed")

SECRET = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"[:40]


@pytest.mark.parametrize("kind", ["file", "sqlite", "memory"])
def test_search_forgets_a_deleted_session(tmp_path: Path, kind: str) -> None:
    store = {
        "file": lambda: Store(tmp_path / "home"),
        "sqlite": lambda: Store(f"sqlite://{tmp_path}/s.db"),
        "memory": Store.memory,
    }[kind]()
    with store.create(name="leak") as s:
        s.append("message", {"content": f"my token is {SECRET} ok"}, role="user")
        sid = s.id
        redacted = tmp_path / "red.bundle"
        with redacted.open("wb") as out:
            export_session(s, "bundle", out, redact=True)
    assert [h.event_id for h in store.search("token")]  # indexed, with the secret
    store.delete(sid)
    import_bundle(store, redacted)
    hits = store.search("token")
    assert len(hits) == 1
    assert SECRET not in hits[0].snippet and "REDACTED" in hits[0].snippet
    assert store.search(SECRET[:12]) == []

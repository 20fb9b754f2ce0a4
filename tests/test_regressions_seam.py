"""Regressions found while redesigning the backend seam, each named after its bug.

Each of these failed on the code before the redesign (checked by running
this module against that commit): the lazy gate lost or refused an append
that raced its switch, sidecar names reached the file system unchecked,
and ``create`` accepted ids that command lines read as options.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from agentlog import InvalidName, InvalidSessionId, Store
from helpers import reopen_store, tree


def test_regression_lazy_gate_race_loses_no_acknowledged_append(store, monkeypatch):
    """An append that read the lazy buffer just before another thread's first
    assistant message persisted the session used to land in the buffer after
    it was copied (lost), or hit the closed buffer. Appends are now submitted
    under the lock the gate switches under."""
    session = store.create(lazy=True)
    buffer_class = type(session.storage)
    name = "commit" if hasattr(buffer_class, "commit") else "append"  # the old seam called it append
    original = getattr(buffer_class, name)
    inside = threading.Event()

    def slow(self, *args, **kwargs):
        if threading.current_thread().name == "racing-user":
            inside.set()
            time.sleep(0.3)  # widen the window between reading the buffer and writing it
        return original(self, *args, **kwargs)

    monkeypatch.setattr(buffer_class, name, slow)
    results, errors = [], []

    def user() -> None:
        try:
            results.append(session.append("message", {"content": "typed while the reply streamed"}, role="user"))
        except Exception as exc:  # the test reports it below
            errors.append(exc)

    racer = threading.Thread(target=user, name="racing-user")
    racer.start()
    assert inside.wait(5)
    reply = session.append("message", {"content": "the reply"}, role="assistant")
    racer.join(10)
    assert errors == [] and len(results) == 1
    session.close()
    with reopen_store(store).open(session.id, readonly=True) as again:
        stored = {e.id for e in again.entries()}
    assert {results[0].id, reply.id} <= stored


@pytest.mark.parametrize(
    "bad", ["../escape", "/etc/passwd", "a/b", "..", ".hidden", "", "x.tmp", "nul\x00byte", "-option", "x" * 200]
)
def test_regression_sidecar_names_are_validated_at_the_seam(store, tmp_path, bad):
    """A sidecar name used to be joined into a path unchecked (``../escape``
    wrote beside the session). Every backend now gets only safe names."""
    with store.create(session_id="s") as session:
        session.set_draft("kept")
        before = tree(tmp_path)
        with pytest.raises(InvalidName):
            session.write_sidecar(bad, b"x")
        with pytest.raises(InvalidName):
            session.read_sidecar(bad)
        if store.backend.home:  # the file backend checks at its own door too
            with pytest.raises(InvalidName):
                session.storage.write_sidecar(bad, b"x")
        assert tree(tmp_path) == before
        assert session.draft() == "kept"


def test_regression_create_refuses_ids_starting_with_a_dash(store):
    """``create`` used to accept ``-rf``, which every shell tool reads as an
    option (``agentlog log -rf``)."""
    for bad in ("-rf", "-", "--help"):
        with pytest.raises(InvalidSessionId, match="option"):
            store.create(session_id=bad)
    assert store.list() == []
    with store.create(session_id="ok-with-dash_inside") as s:
        assert s.id == "ok-with-dash_inside"


def test_sessions_with_a_leading_dash_made_before_still_open(file_store):
    """Only creation refuses them: a session an older version made stays readable."""
    with file_store.create(session_id="old") as s:
        event = s.append("message", {"content": "from before"}, role="user")
    sessions = Path(file_store.home) / "sessions"
    os.rename(sessions / "old", sessions / "-old")
    again = Store(file_store.home)
    with again.open("-old") as s:
        assert s.event(event.id).record == {"content": "from before"}
        s.append("message", {"content": "still writable"}, role="user")

"""Session lifecycle: the lazy gate, title, archive, status, summaries, drafts.

The lazy gate is the seed's promise that a session the user never used
leaves no trace: nothing is on disk until the first assistant message or
an explicit ``persist()``, and then everything buffered moves over whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentlog import NIL_ID, FileBackend, StorageError, Store
from agentlog._fs import OsFs
from agentlog.lifecycle import DEFAULT_META, SUMMARY_CHARS
from helpers import BLOB_THRESHOLD, session_dir

# --- the lazy gate -----------------------------------------------------------------


def test_lazy_session_writes_nothing_until_the_first_assistant_message(file_store, tmp_path):
    before = sorted(p.relative_to(file_store.home) for p in Path(file_store.home).rglob("*"))
    s = file_store.create(name="lazy", working_dir=str(tmp_path), lazy=True)
    user = s.append("message", {"content": "hello"}, role="user")
    note = s.append("custom", {"note": "harness bookkeeping"})
    after = sorted(p.relative_to(file_store.home) for p in Path(file_store.home).rglob("*"))
    assert after == before, "a lazy session touched the disk before its gate opened"
    assert not s.persisted
    assert [r.id for r in file_store.list()] == []
    assert file_store.latest_for(str(tmp_path)) is None  # no breadcrumb either

    reply = s.append("message", {"content": "hi"}, role="assistant")
    assert s.persisted
    assert session_dir(file_store, s.id).is_dir()
    s.close()
    with file_store.open(s.id, readonly=True) as again:
        assert [e.id for e in again.path()] == [user.id, note.id, reply.id]
        assert again.head == reply.id
        assert again.event(user.id).timestamp == user.timestamp
        assert again.meta["name"] == "lazy"
    assert file_store.latest_for(str(tmp_path)) == s.id


def test_a_lazy_session_never_used_leaves_no_trace(file_store):
    before = sorted(p.relative_to(file_store.home) for p in Path(file_store.home).rglob("*"))
    s = file_store.create(lazy=True)
    s.append("message", {"content": "typed, then quit"}, role="user")
    s.set_draft("half a thought")
    s.close()
    after = sorted(p.relative_to(file_store.home) for p in Path(file_store.home).rglob("*"))
    assert after == before
    assert not file_store.exists(s.id)


def test_persist_carries_events_head_blobs_and_draft(file_store):
    s = file_store.create(lazy=True)
    a = s.append("message", {"content": "first"}, role="user")
    big = s.append("tool_result", {"content": "x" * (BLOB_THRESHOLD * 3)}, role="tool")
    s.append("message", {"content": "second"}, role="user")
    s.checkout(a.id)  # HEAD on an older event, as after a branch switch
    s.set_draft("unsent words")
    assert big.digest is not None
    s.persist()
    s.persist()  # idempotent
    assert s.persisted
    s.close()

    with file_store.open(s.id) as again:
        assert again.head == a.id
        assert len(again) == 3
        assert again.resolve(again.event(big.id)).record == {"content": "x" * (BLOB_THRESHOLD * 3)}
        assert again.draft() == "unsent words"
    assert (session_dir(file_store, s.id) / "artifacts" / "draft.txt").read_text() == "unsent words"
    assert file_store.fsck(s.id) == []


def test_persist_of_a_lazy_session_whose_id_was_taken_meanwhile(file_store):
    """Another process created the same id first: persist raises, nothing is merged."""
    from agentlog import SessionExists

    s = file_store.create(session_id="taken", lazy=True)
    s.append("message", {"content": "mine"}, role="user")
    # Another process: within this one, the lazy session holds its id.
    other = (
        "import sys; from agentlog import Store; s = Store(sys.argv[1]).create(session_id='taken'); "
        "s.append('message', {'content': 'theirs'}, role='user'); s.close()"
    )
    subprocess.run([sys.executable, "-c", other, file_store.home], check=True)
    with pytest.raises(SessionExists):
        s.persist()
    with file_store.open("taken", readonly=True) as theirs:
        assert [e.record["content"] for e in theirs.path()] == ["theirs"]


class FailSyncFs(OsFs):
    """The next data sync fails while armed, as on an I/O error."""

    armed = False

    def fdatasync(self, fd: int, path: str = "?") -> None:
        if self.armed:
            self.armed = False
            raise StorageError("fdatasync", path, 5, "Input/output error")
        super().fdatasync(fd, path)


def test_a_failed_persist_leaves_nothing_and_can_be_retried(tmp_path):
    fs = FailSyncFs()
    store = Store(backend=FileBackend(str(tmp_path / "home"), fs=fs))
    s = store.create(lazy=True)
    user = s.append("message", {"content": "my words"}, role="user")
    fs.armed = True
    with pytest.raises(StorageError):
        s.append("message", {"content": "reply"}, role="assistant")
    assert not s.persisted
    assert not store.exists(s.id) and store.list() == [] and store.broken() == []
    s.append("message", {"content": "reply"}, role="assistant")  # the retry goes through
    assert s.persisted
    s.close()
    with store.open(s.id, readonly=True) as again:
        assert [e.record["content"] for e in again.path()] == ["my words", "reply"]
        assert again.path()[0].id == user.id


def test_lazy_on_an_existing_id_is_refused(file_store):
    from agentlog import SessionExists

    file_store.create(session_id="x").close()
    with pytest.raises(SessionExists):
        file_store.create(session_id="x", lazy=True)


def test_lazy_gate_on_the_memory_backend(tmp_path):
    store = Store.memory()
    s = store.create(lazy=True)
    s.append("message", {"content": "q"}, role="user")
    assert not store.exists(s.id)
    s.append_many(
        [
            ("message", {"content": "a"}, "assistant"),
            ("tool_call", {"id": "c1", "name": "t", "arguments": "{}"}, "assistant"),
        ]
    )
    assert store.exists(s.id)
    assert [e.kind for e in s.path()] == ["message", "message", "tool_call"]


# --- title, archive, status ----------------------------------------------------------


def test_title_falls_back_to_the_name_and_is_listed(store):
    with store.create(name="named") as s:
        assert s.title == "named"
        s.set_title("A better title")
        assert s.title == "A better title"
    (row,) = store.list()
    assert (row.title, row.name) == ("A better title", "named")


def test_archive_hides_from_list_until_unarchived(store):
    with store.create(name="keep") as keep, store.create(name="old") as old:
        old.archive()
        assert [r.id for r in store.list()] == [keep.id]
        assert {r.id for r in store.list(archived=True)} == {keep.id, old.id}
        assert next(r for r in store.list(archived=True) if r.id == old.id).archived
        old.unarchive()
        assert {r.id for r in store.list()} == {keep.id, old.id}


def test_status_is_kept_and_listed(store):
    with store.create() as s:
        assert store.info(s.id).status == "active"
        s.set_status("waiting")
    assert store.info(s.id).status == "waiting"
    # Store.update_meta works without holding the session open.
    store.update_meta(s.id, status="done")
    assert store.list()[0].status == "done"


def test_metadata_changes_survive_reopen(file_store):
    with file_store.create(name="n") as s:
        s.set_title("t")
        s.set_status("blocked")
        s.archive()
        sid = s.id
    reopened = Store(file_store.home)
    meta = reopened.meta(sid)
    assert (meta["title"], meta["status"], meta["archived"]) == ("t", "blocked", True)


# --- summaries -------------------------------------------------------------------------


def test_set_summary_from_fields(store):
    with store.create() as s:
        text = s.set_summary(goal="Ship v1", completed=["parser", "CLI"], decisions="use orjson", remaining=["docs"])
        assert "Ship v1" in text and "parser; CLI" in text and "use orjson" in text and "docs" in text
        meta = s.meta
        assert meta["summary"] == text
        assert meta["summary_structured"] == {
            "goal": "Ship v1",
            "completed": ["parser", "CLI"],
            "decisions": ["use orjson"],
            "remaining": ["docs"],
        }
        s.set_summary("plain words")
        assert (s.meta["summary"], s.meta["summary_structured"]) == ("plain words", None)
    assert store.info(s.id).summary == "plain words"


def test_ensure_summary_takes_the_last_six_messages_with_content(store):
    with store.create() as s:
        for i in range(8):
            s.append("message", {"content": f"question {i}"}, role="user")
            s.append("message", {"content": None}, role="assistant")  # only tool calls
            s.append("tool_call", {"id": f"c{i}", "name": "t", "arguments": "{}"}, role="assistant")
            s.append(
                "tool_result", {"tool_call_id": f"c{i}", "name": "t", "content": "out", "is_error": False}, role="tool"
            )
            s.append("message", {"content": [{"type": "text", "text": f"answer {i}"}]}, role="assistant")
        s.append("message", {"content": "   "}, role="user")  # no content worth a line
        s.append("message", {"content": "system words"}, role="system")
        text = s.ensure_summary()
        assert text.splitlines() == [
            "user: question 5",
            "assistant: answer 5",
            "user: question 6",
            "assistant: answer 6",
            "user: question 7",
            "assistant: answer 7",
        ]
        assert s.meta["summary"] == text


def test_ensure_summary_is_bounded_and_only_fills_an_empty_summary(store):
    with store.create() as s:
        for i in range(6):
            s.append("message", {"content": f"{i} " + "word " * 400}, role="user")
        text = s.ensure_summary()
        assert 0 < len(text) <= SUMMARY_CHARS
        assert text.startswith("user: 0 word")
        s.set_summary("chosen by the agent")
        assert s.ensure_summary() == "chosen by the agent"
        assert s.meta["summary"] == "chosen by the agent"


def test_ensure_summary_of_an_empty_session_writes_nothing(store):
    with store.create() as s:
        before = s.meta
        assert s.ensure_summary() == ""
        assert s.meta == before


def test_ensure_summary_reads_blob_payloads(store):
    with store.create() as s:
        s.append("message", {"content": "long " * BLOB_THRESHOLD}, role="user")
        assert "user: long long" in s.ensure_summary()


# --- drafts and artifacts ---------------------------------------------------------------


def test_draft_round_trip_and_clear(store):
    with store.create() as s:
        assert s.draft() is None
        s.set_draft("héllo\nworld")
        assert s.draft() == "héllo\nworld"
        s.set_draft(None)
        assert s.draft() is None
        s.set_draft(None)  # clearing twice is fine


class FailRenameFs(OsFs):
    """Renames fail while armed, as on a full or read-only disk."""

    armed = False

    def rename(self, src: str, dst: str) -> None:
        if self.armed:
            raise StorageError("rename", f"{src} -> {dst}", 28, "No space left on device")
        super().rename(src, dst)


def test_a_failed_draft_write_leaves_the_old_draft_whole(tmp_path):
    fs = FailRenameFs()
    store = Store(backend=FileBackend(str(tmp_path / "home"), fs=fs))
    with store.create() as s:
        s.set_draft("old draft")
        fs.armed = True
        with pytest.raises(StorageError):
            s.set_draft("new draft " * 1000)
        fs.armed = False
        assert s.draft() == "old draft"
        assert s.storage.sidecar_names() == ["draft.txt"]  # the temp file is not a sidecar


def test_draft_survives_reopen_in_another_store(file_store):
    with file_store.create() as s:
        s.set_draft("later")
    with Store(file_store.home).open(s.id, readonly=True) as again:
        assert again.draft() == "later"


def test_delete_removes_drafts_and_artifacts(file_store):
    with file_store.create() as s:
        s.append("message", {"content": "x"}, role="user")
        s.set_draft("unsent")
        artifacts = Path(s.artifacts_dir)
        (artifacts / "plan.md").write_text("# plan")
    assert artifacts.parent == session_dir(file_store, s.id)
    file_store.delete(s.id)
    assert not artifacts.exists()
    assert not session_dir(file_store, s.id).exists()
    leftovers = [p.name for p in (Path(file_store.home) / "sessions").iterdir()]
    assert leftovers == []


def test_delete_on_memory_removes_the_draft():
    store = Store.memory()
    with store.create(session_id="m") as s:
        s.set_draft("unsent")
    store.delete("m")
    with store.create(session_id="m") as s:
        assert s.draft() is None


# --- defaults ------------------------------------------------------------------------------


def test_new_sessions_have_every_default_field(store, tmp_path):
    with store.create(name="n", working_dir=str(tmp_path), model="m") as s:
        meta = s.meta
    assert set(DEFAULT_META) <= set(meta)
    assert meta["working_dir"] == os.path.abspath(tmp_path)
    assert (meta["name"], meta["model"], meta["archived"], meta["status"]) == ("n", "m", False, "active")
    assert meta["created_at"] and meta["updated_at"]


def test_empty_lazy_session_head_is_the_root(store):
    s = store.create(lazy=True)
    assert s.head == NIL_ID and s.path() == [] and s.context() == []
    s.close()

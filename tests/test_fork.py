"""fork(): a new session holding the path to one event.

The fork keeps ids, parents and times, records where it came from, and
shares blob files with its source by hard link: a fork of a session with
gigabytes of tool output costs no payload read and no copy.
"""

from __future__ import annotations

import os

import pytest

from agentlog import NIL_ID, EventNotFound, InvalidEventId, Store
from helpers import BLOB_THRESHOLD, blob_path, session_dir


def branched(s):
    """root - a - b - c (HEAD), plus a branch a - x."""
    root = s.append("message", {"content": "root"}, role="user")
    a = s.append("message", {"content": "a"}, role="assistant")
    b = s.append(
        "tool_result", {"tool_call_id": "c1", "name": "cat", "content": "B" * 5000, "is_error": False}, role="tool"
    )
    c = s.append("message", {"content": "c"}, role="assistant")
    s.select(a.id)
    x = s.append("message", {"content": "x"}, role="user")
    s.checkout(c.id)
    return root, a, b, c, x


def test_fork_at_head_copies_the_path_only(store):
    with store.create(name="src", working_dir="/tmp", model="m") as s:
        root, a, b, c, x = branched(s)
        with s.fork() as f:
            assert f.id != s.id
            assert [e.id for e in f.path()] == [root.id, a.id, b.id, c.id]
            assert len(f) == 4  # the branch to x stays behind
            assert x.id not in f
            assert f.head == c.id
            assert [(e.parent_id, e.timestamp, e.kind, e.role) for e in f.path()] == [
                (e.parent_id, e.timestamp, e.kind, e.role) for e in s.path()
            ]
            assert [f.resolve(e).record for e in f.path()] == [s.resolve(e).record for e in s.path()]
            meta = f.meta
            assert meta["forked_from"]["session"] == s.id
            assert meta["forked_from"]["event"] == c.id
            assert (meta["name"], meta["working_dir"], meta["model"]) == (
                "src (fork)",
                "/tmp",
                "m",
            )  # not the same name: a name is a ref
        assert len(s) == 5 and s.head == c.id  # the source is untouched


def test_fork_at_an_earlier_event_with_a_name(store):
    with store.create(name="src") as s:
        root, a, b, c, x = branched(s)
        with s.fork(x.id, name="try x", session_id="forked") as f:
            assert f.id == "forked"
            assert [e.id for e in f.path()] == [root.id, a.id, x.id]
            assert f.meta["name"] == "try x"
            assert f.meta["forked_from"]["event"] == x.id
            f.append("message", {"content": "continues on its own"}, role="assistant")
        assert x.id in s and len(s) == 5


def test_fork_of_an_empty_session(store):
    with store.create() as s:
        with s.fork() as f:
            assert len(f) == 0 and f.head == NIL_ID
            assert f.meta["forked_from"]["event"] is None


def test_fork_is_listed_and_survives_reopen(tmp_path):
    store = Store(tmp_path / "home", blob_threshold=BLOB_THRESHOLD)
    with store.create() as s:
        branched(s)
        with s.fork() as f:
            fid = f.id
    again = Store(tmp_path / "home")
    assert {r.id for r in again.list()} == {s.id, fid}
    with again.open(fid, readonly=True) as f:
        assert len(f) == 4
    assert again.fsck() == []


def test_fork_of_bad_events(store):
    with store.create() as s:
        s.append("message", {"content": "x"}, role="user")
        with pytest.raises(InvalidEventId):
            s.fork("not-an-id")
        with pytest.raises(EventNotFound):
            s.fork("01234567-89ab-7def-8123-456789abcdef")
    assert len(store.list()) == 1


def test_fork_hard_links_blobs_instead_of_copying(tmp_path):
    store = Store(tmp_path / "home", blob_threshold=BLOB_THRESHOLD)
    with store.create() as s:
        big = s.append("tool_result", {"content": "out " * 10_000}, role="tool")
        s.append("message", {"content": "done"}, role="assistant")
        with s.fork() as f:
            src, dst = blob_path(store, s.id, big.digest), blob_path(store, f.id, big.digest)
            assert os.stat(src).st_ino == os.stat(dst).st_ino
            assert os.stat(src).st_nlink == 2
            assert f.resolve(f.event(big.id)).record == {"content": "out " * 10_000}
    store.delete(s.id)  # the fork keeps the payload through its own link
    with store.open(f.id, readonly=True) as f:
        assert f.resolve(f.event(big.id)).record == {"content": "out " * 10_000}
    assert store.fsck() == []


def test_fork_reads_no_blob_payload(tmp_path, monkeypatch):
    from agentlog.backends.files.blobs import BlobStore

    store = Store(tmp_path / "home", blob_threshold=BLOB_THRESHOLD)
    with store.create() as s:
        s.append("tool_result", {"content": "y" * 50_000}, role="tool")

        def no_reads(self, digest):
            raise AssertionError(f"fork read blob {digest}")

        monkeypatch.setattr(BlobStore, "get", no_reads)
        s.fork().close()


def test_a_failed_fork_leaves_no_session(tmp_path, monkeypatch):
    from agentlog import StorageError
    from agentlog.backends.files.storage import FileSessionStorage

    store = Store(tmp_path / "home")
    with store.create() as s:
        s.append("message", {"content": "x"}, role="user")

        def fail(self, *args):
            raise StorageError("write", "chunk", 28, "No space left on device")

        monkeypatch.setattr(FileSessionStorage, "_write_lines", fail)
        with pytest.raises(StorageError):
            s.fork(session_id="doomed")
    assert [r.id for r in store.list()] == [s.id]
    assert not session_dir(store, "doomed").exists()


def test_regression_fork_is_all_or_nothing_when_its_write_fails(tmp_path):
    """Found by the crash-state simulator: a fork used to create the new
    session, then append its path in a second step, so a crash between the
    two left an empty forked session. The path now goes in before the
    session's directory is renamed into place (invariant 6)."""
    import os

    from agentlog import FileBackend, StorageError
    from agentlog._fs import OsFs

    class FailStagedSync(OsFs):
        def fdatasync(self, fd, path="?"):
            if ".new-" in path:
                raise StorageError("fdatasync", path, 5, "Input/output error")
            super().fdatasync(fd, path)

    store = Store(backend=FileBackend(str(tmp_path), fs=FailStagedSync()))
    with store.create(session_id="src") as s:
        s.append("message", {"content": "one"}, role="user")
        s.append("message", {"content": "two"}, role="assistant")
        with pytest.raises(StorageError):
            s.fork(session_id="copy")
    assert not store.exists("copy")
    assert [r.id for r in store.list()] == ["src"]
    assert not [n for n in os.listdir(tmp_path / "sessions") if n.startswith(".new-")]

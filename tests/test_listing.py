"""store.list(): rows from session.json and one stat, never from the event logs.

Invariant 10: listing reads no event payloads. The anchors' users report
listings that parse every session file; here a listing of sessions with
megabytes of tool output opens no chunk and no blob, which the tests
prove by watching every file the backend opens.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agentlog import FileBackend, Store
from agentlog._fs import OsFs
from helpers import BLOB_THRESHOLD, errors_of, index_path, session_dir


class CountingFs(OsFs):
    """The real file system, remembering every path opened or listed."""

    def __init__(self) -> None:
        self.opened: list[str] = []

    def open(self, path: str, flags: int, mode: int = 0o600) -> int:
        self.opened.append(path)
        return super().open(path, flags, mode)

    def listdir(self, path: str) -> list[str]:
        self.opened.append(path + "/")
        return super().listdir(path)


def _pause() -> None:
    # File times come from a coarse clock (one tick is a few ms); a pause
    # keeps "updated later" distinguishable. Nothing here times anything.
    time.sleep(0.02)


def fill(store: Store, name: str, n: int, big: bool = False, **meta) -> str:
    with store.create(name=name, **meta) as s:
        for i in range(n):
            s.append("message", {"content": f"{name} {i}"}, role="user" if i % 2 == 0 else "assistant")
        if big:
            s.append(
                "tool_result",
                {"tool_call_id": "c", "name": "cat", "content": "z" * 200_000, "is_error": False},
                role="tool",
            )
        return s.id


def test_rows_carry_every_listed_field(tmp_path, file_store):
    work = tmp_path / "proj"
    work.mkdir()
    with file_store.create(name="n", working_dir=str(work), model="m") as s:
        s.append("message", {"content": "q"}, role="user")
        s.append("message", {"content": "a"}, role="assistant")
        s.set_title("Title")
        s.set_summary("what happened")
        s.set_status("done")
    (row,) = file_store.list()
    assert row.id == s.id
    assert (row.title, row.name, row.model, row.summary, row.status) == ("Title", "n", "m", "what happened", "done")
    assert row.working_dir == str(work)
    assert row.event_count == 2
    assert not row.archived
    assert row.created_at <= row.updated_at


def test_most_recently_updated_first(file_store):
    a = fill(file_store, "a", 2)
    _pause()
    b = fill(file_store, "b", 2)
    _pause()
    c = fill(file_store, "c", 2)
    assert [r.id for r in file_store.list()] == [c, b, a]
    _pause()
    with file_store.open(a) as s:  # an append makes "a" the latest
        s.append("message", {"content": "again"}, role="user")
    assert [r.id for r in file_store.list()] == [a, c, b]
    _pause()
    file_store.update_meta(b, title="renamed")  # so does a metadata change
    assert [r.id for r in file_store.list()][0] == b


def test_memory_backend_lists_the_same_way():
    store = Store.memory()
    a = fill(store, "a", 3)
    b = fill(store, "b", 1)
    store.update_meta(a, archived=True)
    assert [r.id for r in store.list()] == [b]
    # archiving is an update: "a" is now the most recent
    assert [(r.id, r.event_count) for r in store.list(archived=True)] == [(a, 3), (b, 1)]


def test_listing_opens_no_chunk_and_no_blob(tmp_path):
    """Invariant 10, proven: every open during list() is of session.json."""
    home = str(tmp_path / "home")
    setup = Store(home, blob_threshold=BLOB_THRESHOLD)
    ids = [fill(setup, f"s{i}", 5, big=True) for i in range(4)]
    setup.update_meta(ids[0], archived=True)

    fs = CountingFs()
    store = Store(backend=FileBackend(home, fs=fs), blob_threshold=BLOB_THRESHOLD)
    fs.opened.clear()
    rows = store.list(archived=True)
    assert {r.id for r in rows} == set(ids)
    assert all(r.event_count == 6 for r in rows)
    names = {os.path.basename(p) for p in fs.opened}
    assert names == {"session.json"}, fs.opened
    assert not any(
        f"{os.sep}chunks{os.sep}" in p or f"{os.sep}blobs{os.sep}" in p or p.endswith("index.bin") for p in fs.opened
    )


def test_listing_counts_match_the_sessions(file_store):
    ids = {fill(file_store, f"s{i}", i) for i in range(5)}
    counts = {r.id: r.event_count for r in file_store.list()}
    assert set(counts) == ids
    for sid, count in counts.items():
        with file_store.open(sid, readonly=True) as s:
            assert len(s) == count


# --- damaged sessions never break a listing -------------------------------------


def test_malformed_sessions_are_left_out_and_reported(file_store):
    good = fill(file_store, "good", 2)
    bad_json = fill(file_store, "badjson", 2)
    (session_dir(file_store, bad_json) / "session.json").write_bytes(b'{"name": "x", trunc')
    not_object = fill(file_store, "notobj", 1)
    (session_dir(file_store, not_object) / "session.json").write_bytes(b"[1, 2]")
    no_index = fill(file_store, "noindex", 2)
    index_path(file_store, no_index).unlink()
    no_meta = fill(file_store, "nometa", 1)
    (session_dir(file_store, no_meta) / "session.json").unlink()
    sessions = Path(file_store.home) / "sessions"
    (sessions / "garbage").mkdir()  # a directory that is no session at all
    (sessions / "garbage" / "random.bin").write_bytes(os.urandom(64))
    (sessions / "stray-file").write_bytes(b"not a directory")
    (sessions / "not a valid id!").mkdir()

    rows = file_store.list(archived=True)
    # index.bin is derived: a session without one is whole in its log, and listed
    assert sorted(r.id for r in rows) == sorted([good, no_index])
    broken = {b.id: b.reason for b in file_store.broken()}
    assert set(broken) == {bad_json, not_object, no_meta, "garbage", "stray-file"}
    assert "is not a directory" in broken["stray-file"]  # a file where a session should be: reported
    assert "does not parse" in broken[bad_json]
    assert "not a JSON object" in broken[not_object]

    problems = errors_of(file_store.fsck())
    flagged = {p.session_id for p in problems}
    assert {bad_json, not_object, no_meta, "garbage"} <= flagged
    assert good not in flagged


def test_a_missing_index_is_only_a_warning_for_fsck_and_heals_on_open(file_store):
    sid = fill(file_store, "s", 3)
    index_path(file_store, sid).unlink()
    assert file_store.broken() == []
    # listed still, its count a lower bound (0) until a writer rebuilds the index
    assert [(r.id, r.event_count) for r in file_store.list()] == [(sid, 0)]
    assert errors_of(file_store.fsck(sid)) == []
    with file_store.open(sid):  # a writer rebuilds the index from the chunks
        pass
    assert [(r.id, r.event_count) for r in file_store.list()] == [(sid, 3)]


def test_listing_survives_a_session_deleted_mid_listing(tmp_path):
    home = str(tmp_path / "home")
    store = Store(home)
    keep = fill(store, "keep", 1)
    gone = fill(store, "gone", 1)

    class DeletingFs(OsFs):
        """Deletes a session just after the directory was listed."""

        def scandir(self, path):
            entries = list(super().scandir(path))
            if path.endswith("sessions"):
                Store(home).delete(gone)
            yield from entries

    lister = Store(backend=FileBackend(home, fs=DeletingFs()))
    rows, broken = lister.scan()
    assert [r.id for r in rows] == [keep]
    assert broken == []


def test_a_null_updated_at_falls_back_to_the_index_time(file_store):
    sid = fill(file_store, "s", 1)
    path = session_dir(file_store, sid) / "session.json"
    import orjson

    meta = orjson.loads(path.read_bytes())
    meta["updated_at"] = None  # unknown: the index's time says when the session last changed
    path.write_bytes(orjson.dumps(meta))
    (row,) = file_store.list()
    assert row.id == sid and row.updated_at.endswith("Z")


@pytest.mark.parametrize("updated_at", ["yesterday", 42])
def test_an_updated_at_that_is_no_time_is_reported_not_replaced(file_store, updated_at):
    """Before, such a value was passed over for the index's time without a
    word; it is damage, reported with the file and the field
    (tests/test_session_json_damage.py has every case)."""
    sid = fill(file_store, "s", 1)
    other = fill(file_store, "t", 1)
    path = session_dir(file_store, sid) / "session.json"
    import orjson

    meta = orjson.loads(path.read_bytes())
    meta["updated_at"] = updated_at
    path.write_bytes(orjson.dumps(meta))
    rows, broken = file_store.scan()
    assert [r.id for r in rows] == [other]
    assert [b.id for b in broken] == [sid] and "field 'updated_at'" in broken[0].reason

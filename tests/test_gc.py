"""gc of the file backend's home: orphaned blobs, leftover work directories,
quarantine files; never a referenced blob, never a session being written."""

from __future__ import annotations

import os
import time

import pytest

from agentlog import Store
from agentlog.backends.files.gc import collect, usage

BIG = 20_000
HOUR_AGO = time.time() - 3 * 3600


def _age(path: str, when: float = HOUR_AGO) -> None:
    os.utime(path, (when, when))


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "home")


def _session_with_blob(store: Store) -> tuple[str, str]:
    with store.create() as s:
        event = s.append("message", {"content": "b" * BIG}, role="assistant")
        sid = s.id
    digest = event.digest.split(":", 1)[1]
    blob = os.path.join(store.home, "sessions", sid, "blobs", digest)
    _age(blob)
    return sid, blob


def _orphan(store: Store, sid: str, name: str = "ab" * 32, age: float = HOUR_AGO) -> str:
    path = os.path.join(store.home, "sessions", sid, "blobs", name)
    with open(path, "wb") as f:
        f.write(b"nobody names me")
    _age(path, age)
    return path


def test_orphaned_blobs_go_referenced_ones_stay(store):
    sid, blob = _session_with_blob(store)
    orphan = _orphan(store, sid)
    dry = collect(store.home, dry_run=True)
    assert [(i.what, i.path) for i in dry.items] == [("orphan-blob", orphan)]
    assert os.path.exists(orphan)
    report = collect(store.home)
    assert [i.path for i in report.items] == [orphan] and report.bytes == len(b"nobody names me")
    assert not os.path.exists(orphan) and os.path.exists(blob)
    with store.open(sid, readonly=True) as s:
        (entry,) = s.entries()
        assert s.resolve(s.event(entry.id)).record["content"] == "b" * BIG
    assert store.fsck() == []
    assert collect(store.home).items == []


def test_young_files_are_left_for_a_writer_mid_append(store):
    sid, _ = _session_with_blob(store)
    young = _orphan(store, sid, age=time.time())
    tmp = os.path.join(store.home, "sessions", sid, "blobs", ".tmp-123")
    with open(tmp, "wb") as f:
        f.write(b"half")
    assert collect(store.home).items == []
    assert os.path.exists(young) and os.path.exists(tmp)
    _age(tmp)
    assert [i.what for i in collect(store.home).items] == ["temp-file"]
    assert not os.path.exists(tmp)


def test_a_session_with_a_writer_is_skipped(store):
    sid, _ = _session_with_blob(store)
    orphan = _orphan(store, sid)
    with store.open(sid):
        report = collect(store.home)
        assert report.busy == [sid] and report.items == []
        assert os.path.exists(orphan)
    assert [i.path for i in collect(store.home).items] == [orphan]


def test_leftover_creates_and_deletes_are_removed(store):
    sessions = os.path.join(store.home, "sessions")
    with store.create():
        pass
    new = os.path.join(sessions, ".new-abc-1234")
    dele = os.path.join(sessions, ".del-xyz-5678")
    for d in (new, dele):
        os.makedirs(os.path.join(d, "chunks"))
        with open(os.path.join(d, "chunks", "000000.jsonl"), "wb") as f:
            f.write(b"x" * 100)
        _age(d)
    fresh = os.path.join(sessions, ".new-now-0000")
    os.makedirs(fresh)
    report = collect(store.home, dry_run=True)
    assert sorted(i.what for i in report.items) == ["leftover-create", "leftover-delete"]
    assert all(i.bytes == 100 for i in report.items)
    collect(store.home)
    assert not os.path.exists(new) and not os.path.exists(dele) and os.path.exists(fresh)
    assert len(store.list()) == 1


def test_quarantine_files_only_when_asked_and_old_enough(store):
    sid, _ = _session_with_blob(store)
    q = os.path.join(store.home, "sessions", sid, "chunks", "000000.jsonl.quarantine")
    with open(q, "wb") as f:
        f.write(b"damaged bytes")
    _age(q, time.time() - 40 * 86400)
    report = collect(store.home)
    assert report.items == [] and [i.path for i in report.quarantine_kept] == [q]
    assert collect(store.home, quarantine=True, quarantine_age_s=60 * 86400).items == []
    removed = collect(store.home, quarantine=True, quarantine_age_s=30 * 86400)
    assert [i.what for i in removed.items] == ["quarantine"] and not os.path.exists(q)


def test_a_blob_named_only_in_a_quarantine_file_is_kept(store):
    sid, _ = _session_with_blob(store)
    kept = _orphan(store, sid, name="cd" * 32)
    q = os.path.join(store.home, "sessions", sid, "chunks", "000000.jsonl.quarantine")
    with open(q, "wb") as f:
        f.write(b'{"digest":"sha256:' + b"cd" * 32 + b'"}\n')
    assert collect(store.home).items == [] and os.path.exists(kept)


def test_usage_counts_each_part(store):
    sid, blob = _session_with_blob(store)
    (row,) = usage(store.home)
    assert row.session_id == sid and row.blob_files == 1
    assert row.blobs == os.path.getsize(blob) and row.chunks > 0 and row.index > 0
    assert row.total >= row.blobs + row.chunks + row.index


def test_an_empty_or_missing_home_has_nothing(tmp_path):
    assert collect(str(tmp_path / "nothing")).items == []
    assert usage(str(tmp_path / "nothing")) == []


def test_a_store_without_a_directory_has_nothing_to_collect(tmp_path):
    from agentlog.cli.housekeeping import on_disk

    assert on_disk(Store.memory()) is None
    assert on_disk(Store(tmp_path / "home")) == str(tmp_path / "home")

"""Upgrading the seed's first layout (one events.jsonl, meta first) in place.

The upgrade must be safe to interrupt anywhere: the tests cut it at every
file-system effect in turn (the Nth effect raises, as a full disk would)
and check that the next open finishes it with nothing lost, the legacy
file kept as ``events.jsonl.migrated``.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from agentlog import NIL_ID, CorruptionError, FileBackend, RecoveryWarning, StorageError, Store
from agentlog._fs import OsFs
from agentlog.backends.base import DEFAULT_BLOB_THRESHOLD
from agentlog.lifecycle import DEFAULT_META
from helpers import BLOB_THRESHOLD, errors_of, session_dir

SID = "legacy-session"
ROOT_ID = "01a02f3f-a89d-7d25-b4ac-ac89a183258d"
A_ID = "01a02f3f-cb65-73b7-a632-1d948274475f"
B_ID = "01a02f54-b76b-7808-a895-3069dcca66f6"
C_ID = "01a02f55-0000-7000-8000-000000000001"

META = {
    "kind": "meta",
    "role": "",
    "id": "0198f000-0000-7000-8000-000000000000",
    "session_id": SID,
    "record": {
        "last_used_model": "model-name",
        "session_name": "example",
        "working_dir": "/workspace",
        "created_at": "2026-08-25T17:21:22Z",
        "updated_at": "2026-08-25T17:25:00Z",
    },
}

# The seed's own example: a root, an answer, and a branch from the root.
WITH_IDS = [
    META,
    {
        "id": ROOT_ID,
        "parent_id": NIL_ID,
        "branch_from": None,
        "kind": "message",
        "role": "user",
        "record": {"content": "Try approach A."},
        "timestamp": "2026-08-25T17:21:23.000000001Z",
    },
    {
        "id": A_ID,
        "parent_id": ROOT_ID,
        "branch_from": None,
        "kind": "message",
        "role": "assistant",
        "record": {"content": "Approach A has a problem."},
        "timestamp": "2026-08-25T17:21:24Z",
    },
    {
        "id": B_ID,
        "parent_id": ROOT_ID,
        "branch_from": ROOT_ID,
        "kind": "message",
        "role": "user",
        "record": {"content": "Try approach B instead."},
        "timestamp": "2026-08-25T17:22:00Z",
    },
    {
        "id": C_ID,
        "parent_id": B_ID,
        "branch_from": None,
        "kind": "tool_result",
        "role": "tool",
        "record": {
            "tool_call_id": "c1",
            "name": "cat",
            "content": "L" * (DEFAULT_BLOB_THRESHOLD * 2),
            "is_error": False,
        },
        "timestamp": "2026-08-25T17:22:01Z",
    },
]

# The very first format: no ids, no parents, no times.
WITHOUT_IDS = [
    META,
    {"kind": "message", "role": "system", "record": {"content": "..."}},
    {"kind": "message", "role": "user", "record": {"content": "Build the feature."}},
    {"kind": "message", "role": "assistant", "record": {"content": "I will inspect the repository first."}},
]


def legacy_bytes(lines) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def write_legacy(home: Path, lines, head: str | None = None, sid: str = SID, data: bytes | None = None) -> Path:
    directory = home / "sessions" / sid
    directory.mkdir(parents=True)
    (directory / "events.jsonl").write_bytes(legacy_bytes(lines) if data is None else data)
    if head is not None:
        (directory / "HEAD").write_text(head + "\n")
    return directory


def snapshot(store: Store, sid: str = SID):
    """Everything a session holds, with ids as positions: an upgrade gives
    id-less legacy events fresh ids, so two upgrades differ only there."""
    with store.open(sid, readonly=True) as s:
        pos = {e.id: i for i, e in enumerate(s.entries())}
        pos[NIL_ID] = -1
        kept = {i: i for i in pos if i in {line.get("id") for line in WITH_IDS}}

        def name(event_id):
            return None if event_id is None else kept.get(event_id, pos[event_id])

        return {
            "head": name(s.head),
            "path": [
                (name(e.id), name(e.parent_id), name(e.branch_from), e.kind, e.role, e.timestamp, s.resolve(e).record)
                for e in s.path()
            ],
            "entries": [(name(e.id), name(e.parent_id), name(e.branch_from)) for e in s.entries()],
        }


def assert_upgraded(store: Store, directory: Path, original: bytes) -> None:
    assert not (directory / "events.jsonl").exists()
    assert (directory / "events.jsonl.migrated").read_bytes() == original
    meta = json.loads((directory / "session.json").read_bytes())
    assert meta["migrations"] == ["0001_single_events_file_to_chunks"]
    assert (meta["name"], meta["working_dir"], meta["model"]) == ("example", "/workspace", "model-name")
    assert errors_of(store.fsck(SID)) == []


def test_legacy_session_with_ids_branches_and_head_file(tmp_path):
    home = tmp_path / "home"
    directory = write_legacy(home, WITH_IDS, head=A_ID)
    original = (directory / "events.jsonl").read_bytes()
    store = Store(home, blob_threshold=BLOB_THRESHOLD)
    with store.open(SID) as s:
        assert s.head == A_ID  # the legacy HEAD named the older branch
        assert [e.id for e in s.path()] == [ROOT_ID, A_ID]
        assert [e.id for e in s.entries()] == [ROOT_ID, A_ID, B_ID, C_ID]
        b = s.event(B_ID)
        assert (b.parent_id, b.branch_from) == (ROOT_ID, ROOT_ID)
        assert s.event(ROOT_ID).timestamp == "2026-08-25T17:21:23.000000001Z"
        c = s.event(C_ID)
        assert c.digest is not None and c.record is None  # big payloads became blobs
        assert s.resolve(c).record == WITH_IDS[4]["record"]
        assert s.meta["created_at"] == "2026-08-25T17:21:22Z"
        s.append("message", {"content": "after the upgrade"}, role="user")
    assert_upgraded(store, directory, original)


def test_legacy_session_without_ids_is_chained_in_file_order(tmp_path):
    home = tmp_path / "home"
    directory = write_legacy(home, WITHOUT_IDS)
    original = (directory / "events.jsonl").read_bytes()
    store = Store(home)
    with store.open(SID) as s:
        path = s.path()
        assert [e.record["content"] for e in path] == [
            "...",
            "Build the feature.",
            "I will inspect the repository first.",
        ]
        assert path[0].parent_id == NIL_ID
        assert all(b.parent_id == a.id for a, b in zip(path, path[1:], strict=False))
        assert [e.id for e in path] == sorted(e.id for e in path)
        assert [e.timestamp for e in path] == sorted(e.timestamp for e in path)
    assert_upgraded(store, directory, original)


def test_non_uuid_legacy_ids_are_replaced_and_links_remapped(tmp_path):
    lines = [
        META,
        {"id": "e1", "parent_id": NIL_ID, "kind": "message", "role": "user", "record": {"content": "one"}},
        {"id": "e2", "parent_id": "e1", "kind": "message", "role": "assistant", "record": {"content": "two"}},
        {
            "id": "e3",
            "parent_id": "e1",
            "branch_from": "e1",
            "kind": "message",
            "role": "user",
            "record": {"content": "three"},
        },
    ]
    home = tmp_path / "home"
    write_legacy(home, lines, head="e2")  # not a UUID: HEAD falls back to the last event
    store = Store(home)
    with store.open(SID) as s:
        path = s.path()
        assert [e.record["content"] for e in path] == ["one", "three"]
        assert path[1].branch_from == path[0].id
        (two,) = [e for e in s.entries() if e.id not in {p.id for p in path}]
        assert two.parent_id == path[0].id


def test_a_legacy_session_is_listed_before_its_upgrade(tmp_path):
    home = tmp_path / "home"
    write_legacy(home, WITHOUT_IDS)
    store = Store(home)
    (row,) = store.list()
    assert (row.id, row.name, row.working_dir, row.model, row.event_count) == (
        SID,
        "example",
        "/workspace",
        "model-name",
        3,
    )
    assert not (home / "sessions" / SID / "session.json").exists()  # listing changed nothing


def test_a_readonly_open_upgrades_too(tmp_path):
    home = tmp_path / "home"
    directory = write_legacy(home, WITHOUT_IDS)
    store = Store(home)
    with store.open(SID, readonly=True) as s:
        assert len(s) == 3
    assert (directory / "session.json").exists()


def test_a_damaged_legacy_line_stops_the_upgrade_and_writes_nothing(tmp_path):
    home = tmp_path / "home"
    good = legacy_bytes(WITHOUT_IDS[:2])
    data = good + b'{"kind": "message", "role": "user", "record": {"content": "x"\n' + legacy_bytes(WITHOUT_IDS[2:])
    directory = write_legacy(home, [], data=data)
    before = sorted(p.name for p in directory.iterdir())
    store = Store(home)
    with pytest.raises(CorruptionError) as info:
        store.open(SID)
    assert info.value.offset == len(good)
    assert sorted(p.name for p in directory.iterdir()) == before
    assert (directory / "events.jsonl").read_bytes() == data


def test_a_torn_final_legacy_line_is_cut_with_a_warning(tmp_path):
    """Invariant 3 for the old format: a crash mid-append in the legacy writer
    leaves a final line without its newline; that is a torn tail, not
    corruption, and the session opens without it (the bytes stay in the
    kept legacy file)."""
    home = tmp_path / "home"
    data = legacy_bytes(WITHOUT_IDS) + b'{"kind": "message", "role": "user", "rec'
    directory = write_legacy(home, [], data=data)
    store = Store(home)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecoveryWarning)
        with store.open(SID) as s:
            assert len(s) == 3
    assert any(issubclass(w.category, RecoveryWarning) for w in caught)
    assert (directory / "events.jsonl.migrated").read_bytes() == data


def test_a_legacy_file_without_meta_is_corruption(tmp_path):
    home = tmp_path / "home"
    write_legacy(home, WITHOUT_IDS[1:])
    store = Store(home)
    with pytest.raises(CorruptionError):
        store.open(SID)
    assert SID in {b.id for b in store.broken()}


# --- interrupted upgrades ------------------------------------------------------------


class FailAt(OsFs):
    """Raises (as a full disk would) at the Nth file-system effect, then stops
    raising so the same store can be used to check what was left."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.count = 0

    def _effect(self, what: str) -> None:
        self.count += 1
        if self.count == self.n:
            raise StorageError(what, "?", 28, "No space left on device (injected)")

    def open(self, path, flags, mode=0o600):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            self._effect("open")
        return super().open(path, flags, mode)

    def write(self, fd, data, path="?"):
        self._effect("write")
        return super().write(fd, data, path)


def _add_effects(cls):
    for name in ("truncate", "fsync", "fdatasync", "rename", "mkdir", "unlink", "rmtree", "link", "fsync_dir"):

        def wrap(self, *args, _name=name, **kwargs):
            self._effect(_name)
            return getattr(OsFs, _name)(self, *args, **kwargs)

        setattr(cls, name, wrap)
    return cls


_add_effects(FailAt)


@pytest.mark.parametrize("lines,head", [(WITH_IDS, A_ID), (WITHOUT_IDS, None)], ids=["with-ids", "without-ids"])
def test_an_upgrade_interrupted_at_every_effect_completes_on_the_next_open(tmp_path, lines, head):
    reference_home = tmp_path / "reference"
    write_legacy(reference_home, lines, head=head)
    expected = snapshot(Store(reference_home, blob_threshold=BLOB_THRESHOLD))

    counting_home = tmp_path / "counting"
    write_legacy(counting_home, lines, head=head)
    fs = FailAt(0)
    store = Store(backend=FileBackend(str(counting_home), fs=fs), blob_threshold=BLOB_THRESHOLD)
    fs.count = 0
    store.open(SID).close()
    total = fs.count
    assert total > 10

    for n in range(1, total + 1):
        home = tmp_path / f"run{n}"
        directory = write_legacy(home, lines, head=head)
        original = (directory / "events.jsonl").read_bytes()
        fs = FailAt(0)  # nothing fails while the store sets its home up
        store = Store(backend=FileBackend(str(home), fs=fs), blob_threshold=BLOB_THRESHOLD)
        fs.count, fs.n = 0, n
        try:
            store.open(SID).close()
        except StorageError:
            pass  # some effects (index writes) are caches whose failure is absorbed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RecoveryWarning)
            again = Store(home, blob_threshold=BLOB_THRESHOLD)
            assert snapshot(again) == expected, f"interrupted at effect {n}"
            assert_upgraded(again, directory, original)


def test_leftovers_of_an_earlier_attempt_are_discarded(tmp_path):
    home = tmp_path / "home"
    directory = write_legacy(home, WITH_IDS, head=A_ID)
    original = (directory / "events.jsonl").read_bytes()
    (directory / "chunks").mkdir()
    (directory / "chunks" / "000000.jsonl").write_bytes(b'{"id": "half a rec')
    (directory / "chunks" / "000001.jsonl").write_bytes(os.urandom(100))
    (directory / "blobs").mkdir()
    (directory / "blobs" / ".tmp-x").write_bytes(b"partial blob")
    (directory / "index.jsonl").write_bytes(b"garbage" * 10)
    (directory / "index.bin").write_bytes(b"garbage" * 10)
    (directory / "HEAD.tmp").write_text("nonsense")
    store = Store(home, blob_threshold=BLOB_THRESHOLD)
    with store.open(SID) as s:
        assert [e.id for e in s.entries()] == [ROOT_ID, A_ID, B_ID, C_ID]
        assert s.head == A_ID
    assert_upgraded(store, directory, original)
    assert sorted(p.name for p in (directory / "chunks").iterdir()) == ["000000.jsonl"]


# --- older session.json files ----------------------------------------------------------


def test_an_older_session_json_gets_defaults(tmp_path):
    home = tmp_path / "home"
    store = Store(home)
    with store.create(session_id="old") as s:
        s.append("message", {"content": "x"}, role="user")
    path = session_dir(store, "old") / "session.json"
    path.write_text(json.dumps({"id": "old", "name": "from v0", "custom_field": 7}))

    (row,) = store.list()
    assert (row.id, row.title, row.status, row.archived, row.summary) == ("old", "from v0", "active", False, None)
    with store.open("old") as s:
        meta = s.meta_with_defaults
        assert set(DEFAULT_META) <= set(meta)
        assert meta["custom_field"] == 7
        s.set_title("new title")  # a change writes the fields back, unknown ones kept
    written = json.loads(path.read_text())
    assert (written["title"], written["custom_field"], written["name"]) == ("new title", 7, "from v0")

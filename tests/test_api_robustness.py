"""Bad input at the library's edges: typed errors, the same on every backend,
and nothing lost or written half (found by a hostile-input review)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentlog import (
    CorruptionError,
    InvalidEvent,
    InvalidMeta,
    InvalidName,
    InvalidOption,
    SearchError,
    SessionClosed,
    SessionNotFound,
    Store,
    StreamedDeltaError,
    SummarizerError,
)
from agentlog.compaction import compact
from agentlog.event import NIL_ID, Event, format_timestamp
from agentlog.export.bundle import import_bundle, write_bundle
from agentlog.summarize import Summary

# --- metadata ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"tags": {"a", "b"}},  # a set: JSON cannot hold it
        {"big": 2**80},  # beyond 64 bits
        {"title": 5},
        {"status": 7},
        {"working_dir": 9},
        {"summary": {"text": "x"}},
        {"archived": "no"},
        {"summary_structured": [1]},
        {"id": "another"},
        {"schema": 2},
    ],
)
def test_metadata_that_cannot_be_stored_is_refused_before_anything_is_written(store: Store, changes: Any) -> None:
    with store.create(name="kept") as s:
        before = s.meta
        with pytest.raises(InvalidMeta):
            s.update_meta(**changes)
        assert s.meta == before
    with pytest.raises(InvalidMeta):
        store.create(session_id="refused", **changes)
    assert not store.exists("refused")


def test_the_setters_check_their_types(store: Store) -> None:
    with store.create() as s:
        with pytest.raises(InvalidMeta):
            s.set_title(5)  # type: ignore[arg-type]
        with pytest.raises(InvalidMeta):
            s.set_status(["done"])  # type: ignore[arg-type]
        s.set_title("fine")
        assert s.meta["title"] == "fine"


def test_a_hand_edited_session_json_does_not_break_the_listing(file_store: Store) -> None:
    with file_store.create(name="odd") as s:
        sid = s.id
    other = file_store.create(name="plain")
    other.close()
    path = Path(file_store.home) / "sessions" / sid / "session.json"
    meta = orjson.loads(path.read_bytes())
    meta.update(title=5, name=["x"], status=7, working_dir=9, summary={"a": 1}, archived="no")
    path.write_bytes(orjson.dumps(meta))
    # Not shown with those fields blanked (wrong data, without a word): the
    # session is reported, each field named, and the others are listed.
    infos, broken = file_store.scan()
    assert [i.title for i in infos] == ["plain"]
    assert [b.id for b in broken] == [sid]
    for field in ("title", "name", "status", "working_dir", "summary", "archived"):
        assert f"field {field!r}" in broken[0].reason


def test_metadata_named_like_create_options_survives_a_bundle_round_trip(tmp_path: Path) -> None:
    source = Store(tmp_path / "src")
    with source.create(session_id="orig") as s:
        s.append("message", {"content": "precious"}, "user")
        s.update_meta(lazy=True, events=[1, 2], source="elsewhere", session_id="x")
        bundle = tmp_path / "b.jsonl"
        with open(bundle, "wb") as f:
            write_bundle(s, f)
    target = Store(tmp_path / "dst")
    report = import_bundle(target, str(bundle))
    assert report.outcome == "created" and report.events_added == 1
    assert target.exists("orig")  # before: a lazy session, closed unwritten, "created" all the same
    with target.open("orig", readonly=True) as again:
        assert [e.record for e in again.path()] == [{"content": "precious"}]
        assert again.meta["lazy"] is True and again.meta["events"] == [1, 2] and again.meta["session_id"] == "x"


def test_create_takes_metadata_as_a_mapping(store: Store) -> None:
    with store.create(name="n", meta={"lazy": "a field, not the option", "name": "overridden?"}) as s:
        assert s.persisted
        assert s.meta["lazy"] == "a field, not the option"
        assert s.meta["name"] == "overridden?"  # the mapping is the caller's metadata, as given


# --- state, summaries, drafts, sidecars, search ------------------------------------


@pytest.mark.parametrize(
    ("record", "todos", "tool_calls"),
    [
        ({"todos": [{"text": "x", "retries": "two"}]}, [("x", "pending", 0)], 0),
        ({"todos": 5, "tool_calls": "x"}, [], 0),
        ({"todos": ["buy milk", 5], "tool_calls": "3"}, [("buy milk", "pending", 0), ("5", "pending", 0)], 3),
        ({"todos": [{"status": None}], "usage": 5}, [("", "pending", 0)], 0),
        ("a string", [], 0),
        ([1], [], 0),
    ],
)
def test_state_is_lenient_about_a_foreign_writers_record(store: Store, record: Any, todos: Any, tool_calls: int):
    with store.create() as s:
        s.append("message", {"content": "hi"}, "user")
        s.append("state", record, "system")
        checkpoint = s.state()
        assert [(t.text, t.status, t.retries) for t in checkpoint.todos] == todos
        assert checkpoint.tool_calls == tool_calls


class _Returns:
    def __init__(self, value: Any) -> None:
        self.value = value

    def summarize(self, events: list[Event], previous: Any) -> Any:
        return self.value


@pytest.mark.parametrize(
    "returned",
    ["just a string", None, Summary(text=5), Summary(text="ok", structured={"a": {1, 2}})],  # type: ignore[arg-type]
)
def test_a_summarizer_returning_the_wrong_thing_is_a_summarizer_error(store: Store, returned: Any) -> None:
    with store.create() as s:
        for i in range(40):
            s.append("message", {"content": f"message {i} " + "word " * 50}, "user" if i % 2 else "assistant")
        count = len(s)
        with pytest.raises(SummarizerError):
            compact(s, summarizer=_Returns(returned), keep_tokens=200)
        assert len(s) == count  # nothing written: the compaction can be retried


@pytest.mark.parametrize("data", ["not bytes", 5, ["x"]])
def test_sidecar_data_must_be_bytes_on_every_backend(store: Store, data: Any) -> None:
    with store.create() as s:
        with pytest.raises(InvalidName):
            s.write_sidecar("notes.txt", data)
        assert s.read_sidecar("notes.txt") is None
        s.write_sidecar("notes.txt", bytearray(b"fine"))
        assert s.read_sidecar("notes.txt") == b"fine"


def test_a_draft_that_is_not_utf8_is_reported_and_one_that_is_not_text_refused(store: Store) -> None:
    with store.create() as s:
        s.write_sidecar("draft.txt", b"half \xff\xfe")
        with pytest.raises(CorruptionError):
            s.draft()
        with pytest.raises(InvalidEvent):
            s.set_draft("pasted \udcff text")
        with pytest.raises(InvalidEvent):
            s.set_draft(5)  # type: ignore[arg-type]
        s.set_draft("é fine")
        assert s.draft() == "é fine"


@pytest.mark.parametrize(
    ("query", "options"),
    [
        ("\udcff", {}),
        (None, {}),
        ("x", {"kind": 5}),
        ("x", {"role": b"user"}),
        ("x", {"limit": "9"}),
        ("x", {"kind": ""}),
        ("x", {"role": ""}),
        ("x", {"role": "User"}),  # no event can have it: not a silent "no matches"
        ("x", {"kind": "messages!"}),
    ],
)
def test_a_search_that_cannot_run_is_a_search_error(file_store: Store, query: Any, options: Any) -> None:
    with file_store.create() as s:
        s.append("message", {"content": "x marks the spot"}, "user")
    with pytest.raises(SearchError):
        file_store.search(query, **options)


# --- sessions that go away, and imported events -------------------------------------


def test_a_session_deleted_by_another_process_is_not_found_not_damaged(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = Store(home)
    with store.create(session_id="gone") as s:
        s.append("custom", {"big": "y" * 100_000})  # the payload goes to a blob
    reader = store.open("gone", readonly=True)
    events = reader.path()
    code = f"from agentlog import Store; Store({str(home)!r}).delete('gone')"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": "src"})
    with pytest.raises(SessionNotFound):
        reader.resolve(events[0])
    with pytest.raises(SessionNotFound):
        _ = reader.meta
    with pytest.raises(SessionNotFound):
        reader.refresh()
    reader.close()


def test_a_deleted_sqlite_session_is_not_found_on_refresh(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agentlog.db'}"
    with Store(url).create(session_id="gone") as s:
        s.append("message", {"content": "x"}, "user")
    reader = Store(url).open("gone", readonly=True)
    Store(url).delete("gone")
    with pytest.raises(SessionNotFound):
        reader.refresh()
    reader.close()


def test_import_events_refuses_a_streaming_delta(store: Store) -> None:
    delta = Event(
        "01a22e1e-d030-7465-aee5-7c2da920631a", NIL_ID, "delta", None, format_timestamp(1_800_000_000 * 10**9), {}
    )
    with store.create() as s:
        with pytest.raises(StreamedDeltaError):
            s.import_events([delta])
        assert len(s) == 0


def test_an_item_that_is_not_an_event_is_an_invalid_event(store: Store) -> None:
    with store.create() as s:
        with pytest.raises(InvalidEvent):
            s.append_many([1])  # type: ignore[list-item]
        assert len(s) == 0


def test_a_closed_session_does_not_fork(store: Store) -> None:
    s = store.create()
    s.append("message", {"content": "x"}, "user")
    s.close()
    with pytest.raises(SessionClosed):
        s.fork()


# --- options ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda home: Store(home, durability="bogus"), id="durability"),
        pytest.param(lambda home: Store(home, blob_threshold=-1), id="blob_threshold"),
        pytest.param(lambda home: Store(home, chunk_size=0), id="chunk_size zero"),
        pytest.param(lambda home: Store(home, chunk_size="64M"), id="chunk_size text"),
        pytest.param(lambda home: Store(home, chunk_size=True), id="chunk_size bool"),
    ],
)
def test_an_option_out_of_range_is_invalid_option_and_opens_nothing(tmp_path: Path, make: Any) -> None:
    home = tmp_path / "home"
    with pytest.raises(InvalidOption) as caught:
        make(str(home))
    assert isinstance(caught.value, ValueError)  # callers written before InvalidOption still catch it
    assert not home.exists()


def test_helper_options_out_of_range_are_invalid_option(store: Store) -> None:
    from agentlog.agent.hub import LiveHub
    from agentlog.cutpoints import choose_cut

    with pytest.raises(InvalidOption, match="keep_tokens"):
        choose_cut([], keep_tokens=-1)
    with pytest.raises(InvalidOption, match="maxsize"):
        LiveHub().subscribe("s", maxsize=0)


@pytest.mark.parametrize("scheme", ["sqlite", "postgresql"])
def test_other_backends_refuse_an_unknown_durability_as_invalid_option(tmp_path: Path, scheme: str) -> None:
    # Checked before anything connects, so no server is needed.
    url = f"sqlite:///{tmp_path}/x.db" if scheme == "sqlite" else "postgresql://nobody@127.0.0.1:1/none"
    with pytest.raises(InvalidOption):
        Store(url, durability="bogus")
    assert not (tmp_path / "x.db").exists()


def test_sqlite_off_keeps_the_database_whole_on_power_loss(tmp_path: Path) -> None:
    # NORMAL in WAL mode, not OFF: OFF can corrupt the file on a power loss.
    store = Store(f"sqlite:///{tmp_path}/x.db", durability="off")
    assert store.backend._conn.execute("PRAGMA synchronous").fetchone() == (1,)  # type: ignore[attr-defined]
    assert store.backend._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # type: ignore[attr-defined]


def test_copy_carries_the_draft_and_artifacts(tmp_path: Path) -> None:
    from agentlog.copying import copy_sessions

    files = Store(str(tmp_path / "home"))
    with files.create(session_id="a") as s:
        s.append("message", {"content": "hello"}, role="user")
        s.set_draft("unsent text")
        s.write_sidecar("notes.md", b"# notes\n")
    target = Store(f"sqlite:///{tmp_path}/t.db")
    assert copy_sessions(files, target).created == ["a"]
    with target.open("a") as c:
        assert c.draft() == "unsent text" and c.read_sidecar("notes.md") == b"# notes\n"
        c.write_sidecar("only-here.txt", b"kept")
    assert copy_sessions(files, target).unchanged == ["a"]
    with files.open("a") as s:
        s.set_draft("changed")
    assert copy_sessions(files, target).extended == ["a"]
    with target.open("a", readonly=True) as c:
        assert c.draft() == "changed" and c.read_sidecar("only-here.txt") == b"kept"

"""What every importer promises, on every shared fixture: nothing lost,
parents that exist, idempotent re-imports, growth, damaged lines."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentlog import Store
from agentlog.importers import FORMATS, SourceChanged, run_import
from importers_support import (
    ALL_FILES,
    copy_fixture,
    do_import,
    load,
    snapshot,
    source_lines,
)

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores

NIL = "00000000-0000-0000-0000-000000000000"

#: Another process that holds a session's writer lease until its stdin closes.
HOLDER = textwrap.dedent("""
    import sys
    from agentlog import Store
    session = Store(sys.argv[1]).open(sys.argv[2])
    print("ready", flush=True)
    sys.stdin.read()
    session.close()
""")


@pytest.mark.parametrize(("fmt", "name"), ALL_FILES)
def test_every_line_is_accounted_for(store, tmp_path, fmt, name):
    path = copy_fixture(name, tmp_path / "src")
    report = do_import(store, fmt, path)
    assert report.errors == [] and report.malformed == []
    total_lines = len(source_lines(path))
    assert [f.lines for f in report.files] == [total_lines]
    covered: set[int] = set()
    copied = 0
    for s in report.sessions:
        loaded = load(store, s.session_id)
        covered |= loaded.lines()
        copied += sum(1 for e in loaded.events if "copied_from" in e.record["source"])
        assert loaded.meta["import"]["format"] == fmt
        assert s.events == len(loaded.events)  # a first import writes them all
    duplicates = sum(s.duplicates for s in report.sessions)
    assert len(covered) + duplicates == total_lines
    assert covered <= set(range(1, total_lines + 1))
    assert report.events == sum(len(load(store, s.session_id).events) for s in report.sessions)


@pytest.mark.parametrize(("fmt", "name"), ALL_FILES)
def test_parents_exist_and_ids_increase(store, tmp_path, fmt, name):
    path = copy_fixture(name, tmp_path / "src")
    report = do_import(store, fmt, path)
    for s in report.sessions:
        loaded = load(store, s.session_id)
        ids = [e.id for e in loaded.events]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        known = set()
        for e in loaded.events:
            assert e.parent_id == NIL or e.parent_id in known, e
            known.add(e.id)
        assert loaded.head == ids[-1]
        for e in loaded.events:
            assert e.timestamp.endswith("Z") and len(e.timestamp) == 30


@pytest.mark.parametrize(("fmt", "name"), ALL_FILES)
def test_importing_again_changes_nothing(store, tmp_path, fmt, name):
    path = copy_fixture(name, tmp_path / "src")
    do_import(store, fmt, path)
    before = snapshot(store)
    again = do_import(store, fmt, path)
    assert again.events == 0 and again.errors == []
    assert all(f.new_lines == 0 for f in again.files)
    assert snapshot(store) == before


@pytest.mark.parametrize(("fmt", "name"), ALL_FILES)
def test_ids_are_deterministic(tmp_path, fmt, name):
    path = copy_fixture(name, tmp_path / "src")
    one, two = Store.memory(), Store.memory()
    do_import(one, fmt, path)
    do_import(two, fmt, path)
    a, b = snapshot(one), snapshot(two)
    assert {k: [e["id"] for e in v[1]] for k, v in a.items()} == {k: [e["id"] for e in v[1]] for k, v in b.items()}


@pytest.mark.parametrize(("fmt", "name"), ALL_FILES)
def test_a_grown_file_imports_only_its_new_lines(store, tmp_path, fmt, name):
    full = copy_fixture(name, tmp_path / "full")
    raw = full.read_text().splitlines(keepends=True)
    cut = len(raw) * 2 // 3
    grow = tmp_path / "grow" / name
    grow.parent.mkdir()
    grow.write_text("".join(raw[:cut]))
    first = do_import(store, fmt, grow)
    assert first.files[0].new_lines == cut
    with grow.open("a") as f:
        f.write("".join(raw[cut:]))
    second = do_import(store, fmt, grow)
    assert second.errors == []
    assert second.files[0].new_lines == len(raw) - cut
    new_lines = set()
    for s in second.sessions:
        loaded = load(store, s.session_id)
        written_second = loaded.events[len(loaded.events) - s.events :]
        for e in written_second:
            src = e.record["source"]
            if "copied_from" not in src:
                new_lines.add(src["line"])
                new_lines.update(m["line"] for m in src.get("merged", ()))
    assert new_lines and min(new_lines) > cut
    # Every line is then held exactly as a one-shot import holds it, except
    # replies cut in two by the growth (merged only within one import).
    covered = set()
    for s in first.sessions + second.sessions:
        covered |= load(store, s.session_id).lines()
    dups = sum(s.duplicates for s in first.sessions + second.sessions)
    assert len(covered) + dups == len(raw)
    third = do_import(store, fmt, grow)
    assert third.events == 0


@pytest.mark.parametrize(("fmt", "name"), ALL_FILES)
def test_a_changed_prefix_is_reported_not_guessed(store, tmp_path, fmt, name):
    path = copy_fixture(name, tmp_path / "src")
    do_import(store, fmt, path)
    before = snapshot(store)
    lines = path.read_text().splitlines(keepends=True)
    obj = json.loads(lines[-1])
    obj["edited"] = True
    lines[-1] = json.dumps(obj) + "\n"
    path.write_text("".join(lines) + lines[0])
    report = do_import(store, fmt, path)
    assert report.events == 0
    assert report.errors and str(path) in report.errors[0] and "changed" in report.errors[0]
    assert snapshot(store) == before


@pytest.mark.parametrize(("fmt", "name"), ALL_FILES)
def test_malformed_lines_are_kept_and_reported(store, tmp_path, fmt, name):
    path = copy_fixture(name, tmp_path / "src")
    lines = path.read_text().splitlines(keepends=True)
    bad = ['{"type": "user", "message": \n', "[1, 2, 3]\n", b"\xff\xfe\n".decode("latin-1")]
    spliced = lines[:3] + [bad[0]] + lines[3:5] + [bad[1]] + lines[5:] + [bad[2]]
    path.write_bytes("".join(spliced).encode("utf-8").replace("ÿþ".encode(), b"\xff\xfe"))
    report = do_import(store, fmt, path)
    assert report.errors == []
    assert [(n, e.split(":")[0]) for _, n, e in report.malformed] == [
        (4, "invalid JSON"),
        (7, "not a JSON object but list"),
        (len(spliced), "invalid UTF-8"),
    ]
    raws = []
    for s in report.sessions:
        for e in load(store, s.session_id).events:
            if e.kind == "custom" and "raw" in e.record and "copied_from" not in e.record["source"]:
                raws.append((e.record["source"]["line"], e.record["raw"]))
    assert sorted(raws)[:2] == [(4, bad[0].rstrip("\n")), (7, bad[1].rstrip("\n"))]
    assert len(raws) == 3
    # the good lines are all there
    clean = Store.memory()
    do_import(clean, fmt, copy_fixture(name, tmp_path / "clean"))
    copies = sum(s.copied for s in report.sessions)
    clean_copies = sum(
        1 for info in clean.list() for e in load(clean, info.id).events if "copied_from" in e.record["source"]
    )
    assert report.events - copies == sum(len(load(clean, info.id).events) for info in clean.list()) - clean_copies + 3


@pytest.mark.parametrize(("fmt", "name"), ALL_FILES)
def test_an_unfinished_last_line_waits(store, tmp_path, fmt, name):
    path = copy_fixture(name, tmp_path / "src")
    lines = path.read_text().splitlines(keepends=True)
    half = lines[-1][: len(lines[-1]) // 2]
    path.write_text("".join(lines[:-1]) + half)
    first = do_import(store, fmt, path)
    assert first.files[0].pending_bytes == len(half.encode())
    assert first.malformed == []
    path.write_text("".join(lines))
    second = do_import(store, fmt, path)
    assert second.files[0].new_lines == 1 and second.errors == []


def test_a_file_with_no_session_is_an_error_not_a_crash(store, tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"type": "message", "message": {"role": "user"}}\n')
    for fmt in FORMATS:
        report = run_import(store, FORMATS[fmt], [str(path)])
        assert report.events == 0
        assert report.errors and "no" in report.errors[0] and "session id" in report.errors[0]


def test_source_changed_is_an_agentlog_error():
    from agentlog import AgentlogError

    assert issubclass(SourceChanged, AgentlogError)


@pytest.mark.parametrize(("fmt", "name"), ALL_FILES)
def test_a_crash_before_the_file_state_is_saved_imports_nothing_twice(store, tmp_path, fmt, name):
    path = copy_fixture(name, tmp_path / "src")
    raw = path.read_text().splitlines(keepends=True)
    path.write_text("".join(raw[: len(raw) // 2]))
    first = do_import(store, fmt, path)
    states = {s.session_id: store.meta(s.session_id)["import"] for s in first.sessions}
    path.write_text("".join(raw))
    do_import(store, fmt, path)
    before = {sid: len(load(store, sid).events) for sid in states}
    for sid, state in states.items():  # as if the flush stopped after the events
        store.update_meta(sid, **{"import": state})
    again = do_import(store, fmt, path)
    assert again.errors == []
    assert {sid: len(load(store, sid).events) for sid in states} == before
    assert again.events == 0


def test_importing_unchanged_files_takes_no_lease(tmp_path):
    store = Store(tmp_path / "home")
    path = copy_fixture("pi_v1_legacy_large-session_head45.jsonl", tmp_path / "src")
    (s,) = do_import(store, "pi", path).sessions
    with store.open(s.session_id):  # a writer holds the session
        again = do_import(store, "pi", path)
    assert again.events == 0 and again.errors == []


def test_a_session_another_writer_holds_is_reported_and_the_rest_imported(tmp_path):
    store = Store(tmp_path / "home")
    pi = copy_fixture("pi_v1_legacy_large-session_head45.jsonl", tmp_path / "src")
    lines = pi.read_text().splitlines(keepends=True)
    pi.write_text("".join(lines[:-1]))
    (s,) = do_import(store, "pi", pi).sessions
    pi.write_text("".join(lines))
    other = copy_fixture("pi_v1_legacy_large-session_head45.jsonl", tmp_path / "o")
    other.write_text(other.read_text().replace("d703a1a9-1b7b", "aaaaaaaa-1b7b", 1))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / "home"), s.session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        report = do_import(store, "pi", pi, other)
    finally:
        holder.communicate("", timeout=60)
    assert len(report.errors) == 1 and s.session_id in report.errors[0]
    assert [r.session_id for r in report.sessions] == ["pi-aaaaaaaa-1b7b-4fb1-b512-c9738b1fe617"]
    assert do_import(store, "pi", pi).events > 0  # once the writer is gone


@pytest.mark.parametrize(("fmt", "name"), ALL_FILES)
def test_long_sessions_are_written_in_chunks_with_the_same_result(tmp_path, fmt, name):
    path = copy_fixture(name, tmp_path / "src")
    whole, chunked = Store(tmp_path / "a"), Store(tmp_path / "b")
    run_import(whole, FORMATS[fmt], [str(path)])
    run_import(chunked, FORMATS[fmt], [str(path)], chunk_events=3)

    def content(store):
        return {
            sid: (head, events, {k: v for k, v in meta.items() if not k.endswith("_at")})
            for sid, (head, events, meta) in snapshot(store).items()
        }

    assert content(chunked) == content(whole)


def _grow_twice(store, tmp_path, name, fmt, between=None):
    path = copy_fixture(name, tmp_path / "src")
    raw = path.read_text().splitlines(keepends=True)
    path.write_text("".join(raw[: len(raw) // 2]))
    (s, *_) = do_import(store, fmt, path).sessions
    if between is not None:
        between(s.session_id)
    path.write_text("".join(raw))
    return s.session_id, do_import(store, fmt, path)


def test_a_grown_session_is_read_back_from_its_index_cache(tmp_path, monkeypatch):
    from agentlog import Session

    reads = []
    real = Session.event
    store = Store(tmp_path / "home")

    def counting(self, event_id):
        reads.append(event_id)
        return real(self, event_id)

    def watch(_sid):
        monkeypatch.setattr(Session, "event", counting)

    sid, report = _grow_twice(store, tmp_path, "pi_v1_legacy_large-session_head45.jsonl", "pi", watch)
    assert report.events > 0 and report.errors == []
    assert reads == []  # every event already stored came from the cache
    with store.open(sid, readonly=True) as s:
        assert (Path(s.artifacts_dir) / "import-index.json").is_file()


@pytest.mark.parametrize("damage", ["garbage", "native event"])
def test_a_stale_or_damaged_index_cache_is_not_trusted(tmp_path, damage):
    name, fmt = "claude-code_v2.1.42_real_03eb5929.jsonl", "claude"
    clean = Store(tmp_path / "clean")
    _, expected = _grow_twice(clean, tmp_path / "c", name, fmt)
    store = Store(tmp_path / "home")

    def spoil(sid):
        with store.open(sid) as s:
            if damage == "garbage":
                (Path(s.artifacts_dir) / "import-index.json").write_text("{not json")
            else:  # someone continued the imported session with agentlog itself
                s.append("message", {"content": "a note of mine"}, "user")

    sid, report = _grow_twice(store, tmp_path / "d", name, fmt, spoil)
    assert report.errors == [] and report.events == expected.events
    assert report.kinds == expected.kinds
    loaded = load(store, sid)
    assert len(loaded.by_key()) == len(load(clean, sid).by_key())

"""The CLI's session verbs, search, export/import, housekeeping and refs:
each verb's output, and its error paths as one stderr line."""

from __future__ import annotations

import json
import os
import re
import time
from html.parser import HTMLParser

import pytest

from agentlog import Store
from agentlog.cli import all_commands, main
from agentlog.cli.transfer import IMPORT_FORMATS
from cli_support import error, ok, ok_json, run


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def make(home, name="work", n=3, cwd="/tmp"):
    """A session of ``n`` user/assistant messages, a tool call and result."""
    store = Store(home)
    with store.create(name=name, working_dir=cwd) as s:
        for i in range(n):
            s.append("message", {"content": f"{name} message {i}"}, role="user" if i % 2 == 0 else "assistant")
        s.append("tool_call", {"id": "c1", "name": "bash", "arguments": '{"cmd": "ls"}'}, role="assistant")
        s.append("tool_result", {"tool_call_id": "c1", "content": "a.py b.py"}, role="tool")
        s.append("state", {"scratchpad": "noise", "usage": {"input_tokens": 1}}, role="system")
        return s.id, [e.id for e in s.entries()]


def events(home, sid):
    with Store(home).open(sid, readonly=True) as s:
        return [s.event(e.id) for e in s.entries()], s.head, s.meta


# --- refs ----------------------------------------------------------------------------
def test_short_ids_are_short_unique_tails_and_resolve_everywhere(home):
    sids = [make(home, name=f"s{i}")[0] for i in range(3)]
    rows = ok(home, "ls").splitlines()[1:]
    shorts = [row.split()[0] for row in rows]
    assert all(len(s) == 8 for s in shorts)
    assert {next(sid for sid in sids if sid.replace("-", "").endswith(s)) for s in shorts} == set(sids)
    for short in shorts:
        sid = ok_json(home, "log", short)[0]["id"]  # a short form works as SESSION
        assert sid
    sid, ids = make(home, name="refs")
    lines = ok(home, "log", sid).splitlines()
    assert [line.split()[0] for line in lines] == [i.replace("-", "")[-8:] for i in ids]
    assert ok_json(home, "show", sid, ids[2].replace("-", "")[-8:])["id"] == ids[2]
    assert ok_json(home, "show", sid, ids[2][:-1])["id"] == ids[2]  # a unique prefix too


def test_head_ancestry_labels_and_names(home):
    sid, ids = make(home, name="named session")
    assert ok_json(home, "show", "named session", "HEAD")["id"] == ids[-1]
    assert ok_json(home, "show", sid, "HEAD~2")["id"] == ids[-3]
    assert ok_json(home, "show", sid, "HEAD^^")["id"] == ids[-3]
    ok(home, "label", sid, "mark", "HEAD~4")
    assert ok_json(home, "show", sid, "mark")["id"] == ids[-5]
    assert ok_json(home, "show", sid, "mark~1")["id"] == ids[-6]
    ok(home, "rename", sid, "Better Title")
    assert ok_json(home, "show", "Better Title", "mark")["id"] == ids[-5]
    assert "past the root" in error(run(home, "show", sid, f"HEAD~{len(ids)}"))


def test_ambiguous_and_unknown_refs_are_one_line_errors(home):
    a, _ = make(home, name="twin")
    make(home, name="twin")
    assert "several sessions are named 'twin'" in error(run(home, "log", "twin"))
    assert "ambiguous" in error(run(home, "log", a[:4]))  # shared time prefix
    assert "no session" in error(run(home, "log", "nosuchsession"))
    assert "no event" in error(run(home, "show", a, "deadbeef"))


# --- tree ---------------------------------------------------------------------------
def test_tree_hides_state_and_marks_labels_compactions_summaries(home):
    store = Store(home)
    with store.create(name="t") as s:
        first = s.append("message", {"content": "start"}, role="user")
        s.append("state", {"scratchpad": "hidden-checkpoint"}, role="system")
        s.append("message", {"content": "left"}, role="assistant")
        s.select(first.id)
        s.summarize_branch()
        for n in range(8):
            s.append("message", {"content": f"turn {n} " + "w " * 40}, role="user")
        s.compact(keep_tokens=30)
        s.update_meta(labels={"here": first.id})
        sid = s.id
    shown = ok(home, "tree", sid)
    assert "hidden-checkpoint" not in shown and "state" not in shown
    assert "◀ HEAD" in shown and "[here]" in shown
    assert "⇤ compaction" in shown and "↩ branch summary" in shown
    assert "left" in shown  # the abandoned branch hangs where the state was
    everything = ok(home, "tree", sid, "--all")
    assert "hidden-checkpoint" in everything
    doc = ok_json(home, "tree", sid)
    assert doc["labels"] == {"here": first.id}
    assert any(n["kind"] == "state" for n in doc["nodes"])
    # Columns: every event line's short id has the same width.
    rows = [line for line in shown.splitlines() if "  message  " in line]
    # the time column starts at one offset per depth (found by its shape: a
    # short id is random hex, and may itself hold "20")
    starts = {re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", line).start() for line in rows}
    assert len(starts) <= 3


# --- fork, compact, archive, rename, label, continue, rm ---------------------------------
def test_fork(home):
    sid, ids = make(home)
    doc = ok_json(home, "fork", sid, ids[1], "--name", "forked")
    assert doc["forked_from"] == {"session": sid, "event": ids[1]}
    got, head, meta = events(home, doc["id"])
    assert [e.id for e in got] == ids[:2] and head == ids[1] and meta["name"] == "forked"
    plain = ok(home, "fork", sid).strip()
    assert len(events(home, plain)[0]) == len(ids)
    assert "no event" in error(run(home, "fork", sid, "abcdef12"))
    assert "no session" in error(run(home, "fork", "missing"))


def test_compact(home):
    store = Store(home)
    with store.create() as s:
        for n in range(10):
            s.append("message", {"content": f"turn {n} " + "word " * 50}, role="user")
        sid = s.id
    doc = ok_json(home, "compact", sid, "--keep-tokens", "20")
    assert doc["compacted"] and doc["tokens_after"] < doc["tokens_before"]
    got, head, _ = events(home, sid)
    assert got[-1].kind == "compaction" and head == doc["event"] and len(got) == 11
    empty = ok(home, "new").strip()
    assert "nothing to compact" in ok(home, "compact", empty)
    assert "no session" in error(run(home, "compact", "missing"))


def test_archive_unarchive(home):
    sid, _ = make(home)
    assert ok_json(home, "archive", sid) == [{"id": sid, "archived": True}]
    assert ok_json(home, "ls") == []
    assert [r["id"] for r in ok_json(home, "ls", "--archived")] == [sid]
    assert f"{sid}: unarchived" in ok(home, "unarchive", sid)
    assert [r["id"] for r in ok_json(home, "ls")] == [sid]
    assert "no session" in error(run(home, "archive", "missing"))
    assert "Missing argument" in error(run(home, "archive"), 2)


def test_rename(home):
    sid, _ = make(home)
    assert ok_json(home, "rename", sid, "New name")["title"] == "New name"
    assert ok_json(home, "ls")[0]["title"] == "New name"
    assert "empty" in error(run(home, "rename", sid, "  "))


def test_label_set_list_move_delete_never_moves_head(home):
    sid, ids = make(home)
    before = events(home, sid)
    assert ok_json(home, "label", sid, "v1", ids[0])["event"] == ids[0]
    ok(home, "label", sid, "tip")
    assert ok_json(home, "label", sid) == {"v1": ids[0], "tip": ids[-1]}
    ok(home, "label", sid, "v1", ids[1])  # moving a label
    assert ok_json(home, "label", sid)["v1"] == ids[1]
    after = events(home, sid)
    assert [e.id for e in after[0]] == [e.id for e in before[0]] and after[1] == before[1]
    assert "removed" in ok(home, "label", sid, "v1", "--delete")
    assert "has no label" in error(run(home, "label", sid, "v1", "--delete"))
    assert "reserved" in error(run(home, "label", sid, "HEAD"))
    assert "looks like an event id" in error(run(home, "label", sid, "abcd1234"))
    assert "not valid" in error(run(home, "label", sid, "a b"))


def test_continue(home, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    sid, _ = make(home, cwd=str(project))
    assert ok(home, "continue", str(project)).split()[0] == sid
    assert ok_json(home, "continue", str(project))["id"] == sid
    elsewhere = tmp_path / "empty"
    elsewhere.mkdir()
    assert "no session" in error(run(home, "continue", str(elsewhere))).lower()
    # A moved project is re-rooted only when asked.
    moved = tmp_path / "moved"
    moved.mkdir()
    gone = tmp_path / "old" / "app"
    gone.mkdir(parents=True)
    old, _ = make(home, name="app", cwd=str(gone))
    gone.rmdir()
    target = moved / "app"
    target.mkdir()
    error(run(home, "continue", str(target)))
    doc = ok_json(home, "continue", str(target), "--reroot")
    assert doc["id"] == old and doc["rerooted"] and doc["working_dir"] == str(target)


def test_rm_asks_unless_yes(home):
    sid, _ = make(home)
    other, _ = make(home, name="keep")
    refused = run(home, "rm", sid, input="n\n")
    assert refused.exit_code == 1 and Store(home).exists(sid)
    no_terminal = run(home, "rm", sid)  # nothing to answer on: nothing deleted
    assert no_terminal.exit_code == 1 and Store(home).exists(sid)
    assert f"{sid}: deleted" in ok(home, "rm", sid, input="y\n")
    assert not Store(home).exists(sid)
    assert ok_json(home, "rm", other, "--yes") == {"deleted": [other]}
    assert "no session" in error(run(home, "rm", sid, "--yes"))


# --- search ------------------------------------------------------------------------------
def test_search_command(home, tmp_path):
    sid, ids = make(home, name="searchable", cwd=str(tmp_path))
    make(home, name="unrelated", cwd="/elsewhere")
    hits = ok_json(home, "search", "searchable", "message", "1")
    assert [(h["session_id"], h["event_id"]) for h in hits] == [(sid, ids[1])]
    assert set(hits[0]) >= {"session_id", "event_id", "kind", "role", "timestamp", "snippet"}
    text = ok(home, "search", "bash")
    assert "tool_call" in text and "ls" in text
    assert ok_json(home, "search", "message", "--cwd", str(tmp_path), "-n", "50") and all(
        h["session_id"] == sid for h in ok_json(home, "search", "message", "--cwd", str(tmp_path))
    )
    assert all(h["role"] == "assistant" for h in ok_json(home, "search", "message", "--role", "assistant"))
    assert ok_json(home, "search", "message", "--kind", "tool_result") == []
    assert ok_json(home, "search", "message", "--since", "1d")
    assert ok_json(home, "search", "message", "--since", "2999-01-01") == []
    assert ok_json(home, "search", "message", "--session", "searchable")
    assert "no matches" in ok(home, "search", "zzzqqq")
    rebuilt = ok_json(home, "search", "--reindex")
    assert rebuilt["reindexed"] and rebuilt["sessions"] == 2
    assert "no words" in error(run(home, "search", "OR"))
    assert "QUERY" in error(run(home, "search"), 2)
    assert "neither an age" in error(run(home, "search", "x", "--since", "soon"), 2)
    assert "no session" in error(run(home, "search", "x", "--session", "nope"))


# --- export and import -------------------------------------------------------------------
def test_export_formats_to_files_and_stdout(home, tmp_path):
    sid, _ = make(home)
    md = ok(home, "export", sid)
    assert md.startswith("# work") and "work message 0" in md
    out = tmp_path / "s.html"
    result = run(home, "export", sid, "--format", "html", "-o", str(out))
    assert result.exit_code == 0 and "exported 6 events" in result.stderr
    HTMLParser().feed(out.read_text())
    assert "work message 2" in out.read_text()
    doc = ok_json(home, "export", sid, "--format", "bundle", "-o", str(tmp_path / "b.jsonl"))
    assert doc["events"] == 6 and doc["format"] == "bundle"
    assert "unknown export format" not in ok(home, "export", sid, "--format", "md")
    assert "Invalid value" in error(run(home, "export", sid, "--format", "pdf"), 2)
    assert "no session" in error(run(home, "export", "missing"))
    assert "--json" in error(run(home, "export", sid, "--json"), 2)
    assert "No such file" in error(run(home, "export", sid, "-o", str(tmp_path / "no/dir/x")))


def test_export_redact_reports_counts(home, tmp_path):
    store = Store(home)
    with store.create() as s:
        s.append("message", {"content": "key AKIAIOSFODNN7EXAMPLE and AKIAI44QH8DHBEXAMPLE"}, role="user")
        sid = s.id
    out = tmp_path / "r.md"
    doc = ok_json(home, "export", sid, "--redact", "-o", str(out))
    assert doc["redacted"] == 2 and doc["redactions"] == {"AWS Access Key": 2}
    assert "AKIA" not in out.read_text()
    text = run(home, "export", sid, "--redact", "-o", str(out)).stderr
    assert "2 secrets redacted (2 AWS Access Key)" in text


def test_import_bundle_round_trip_and_idempotence(home, tmp_path):
    sid, _ = make(home)
    path = tmp_path / "b.jsonl"
    ok(home, "export", sid, "--format", "bundle", "-o", str(path))
    other = tmp_path / "other"
    assert IMPORT_FORMATS.keys() >= {"bundle"}
    first = ok_json(other, "import", "--from", "bundle", str(path))
    assert first == {
        "session": sid,
        "outcome": "created",
        "events_added": 6,
        "events_total": 6,
        "head": events(home, sid)[1],
    }
    assert [e.to_dict() for e in events(other, sid)[0]] == [e.to_dict() for e in events(home, sid)[0]]
    assert "already imported, nothing changed" in ok(other, "import", "--from", "bundle", str(path))
    assert "Invalid value" in error(run(other, "import", "--from", "zip", str(path)), 2)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert "bad.jsonl:1: not JSON" in error(run(other, "import", "--from", "bundle", str(bad)))
    bad.write_text('{"some": "json"}\n')
    assert "not an agentlog bundle" in error(run(other, "import", "--from", "bundle", str(bad)))


def test_import_missing_file(home, tmp_path):
    assert "no such file" in error(run(home, "import", "--from", "bundle", str(tmp_path / "missing.jsonl")), 2)


# --- housekeeping ------------------------------------------------------------------------
def test_prune_lists_asks_and_deletes_only_old_sessions(home):
    old, _ = make(home, name="old")
    new, _ = make(home, name="new")
    archived_old, _ = make(home, name="archived-old")
    ok(home, "archive", archived_old)
    long_ago = time.time() - 200 * 86400
    store = Store(home)
    for sid in (old, archived_old):
        # Age the session as time would: its metadata and its files' times.
        session_dir = os.path.join(str(home), "sessions", sid)
        meta_path = os.path.join(session_dir, "session.json")
        with open(meta_path) as f:
            meta = json.load(f)
        meta["updated_at"] = "2020-01-01T00:00:00.000000000Z"
        with open(meta_path, "w") as f:
            json.dump(meta, f)
        for root, _dirs, files in os.walk(session_dir):
            for name in files:
                os.utime(os.path.join(root, name), (long_ago, long_ago))
    dry = ok_json(home, "prune", "--older-than", "90d", "--dry-run")
    assert sorted(r["id"] for r in dry["sessions"]) == sorted([old, archived_old])
    assert dry["deleted"] == [] and store.exists(old)
    only_archived = ok_json(home, "prune", "--older-than", "90d", "--archived-only", "--yes")
    assert only_archived["deleted"] == [archived_old] and store.exists(old)
    refused = run(home, "prune", "--older-than", "90d", input="n\n")
    assert refused.exit_code == 1 and store.exists(old)
    assert "deleted 1 session updated before" in ok(home, "prune", "--older-than", "90d", input="y\n")
    assert not store.exists(old) and store.exists(new)
    assert "not an age" in error(run(home, "prune", "--older-than", "soon"), 2)
    assert "Missing option" in error(run(home, "prune"), 2)


def test_du_and_stats(home):
    sid, _ = make(home)
    with Store(home).open(sid) as s:
        s.append(
            "message",
            {"content": "z" * 20_000, "usage": {"input_tokens": 7, "output_tokens": 3, "cost_usd": 0.5}},
            role="assistant",
        )
    du = ok_json(home, "du")
    (row,) = du["sessions"]
    assert row["id"] == sid and row["blob_files"] == 1 and row["blobs"] > 20_000
    assert du["total"] >= row["total"]
    assert "1 session, search index" in ok(home, "du")
    stats = ok_json(home, "stats", sid)
    assert stats["by_kind"] == {"message": 4, "tool_call": 1, "tool_result": 1, "state": 1}
    assert stats["blobs"] == 1 and stats["bytes_by_kind"]["message"] > 20_000
    assert stats["tokens"]["input_tokens"] == 7 and stats["tokens"]["cost_usd"] == 0.5
    make(home, name="second")
    whole = ok_json(home, "stats")
    assert whole["sessions"] == 2 and whole["events"] == 7 + 6
    assert "tokens: 7 in, 3 out" in ok(home, "stats", sid)
    assert "no session" in error(run(home, "stats", "missing"))
    # A damaged session is named on stderr and in the JSON, not skipped silently.
    second = [r["id"] for r in ok_json(home, "ls") if r["title"] == "second"][0]
    chunk = home / "sessions" / second / "chunks" / "000000.jsonl"
    data = bytearray(chunk.read_bytes())
    data[data.index(b"second message 1") + 2] ^= 0x01
    chunk.write_bytes(bytes(data))
    (home / "sessions" / second / "index.bin").unlink()
    result = run(home, "stats", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert [f["id"] for f in doc["failed"]] == [second] and doc["sessions"] == 1
    assert f"cannot read {second}" in result.stderr


def test_gc_on_the_cli(home):
    sid, _ = make(home)
    orphan = os.path.join(str(home), "sessions", sid, "blobs", "ab" * 32)
    with open(orphan, "wb") as f:
        f.write(b"orphaned")
    os.utime(orphan, (time.time() - 7200, time.time() - 7200))
    dry = ok_json(home, "gc", "--dry-run")
    assert [i["what"] for i in dry["collected"]] == ["orphan-blob"] and os.path.exists(orphan)
    assert "removed 1 item, " in ok(home, "gc")
    assert not os.path.exists(orphan)
    assert ok_json(home, "gc")["collected"] == []


def test_fsck_of_a_whole_home_still_reports(home):
    make(home)
    make(home, name="b")
    doc = ok_json(home, "fsck")
    assert doc["ok"] and doc["checked"] == 2


# --- completion -------------------------------------------------------------------------
def _complete(home, words, incomplete):
    from click.shell_completion import ShellComplete

    comp = ShellComplete(main, {}, "agentlog", "_AGENTLOG_COMPLETE")
    return [c.value for c in comp.get_completions(["--home", str(home), *words], incomplete)]


def test_completion_offers_sessions_and_labels(home):
    sid, ids = make(home, name="completeme")
    ok(home, "label", sid, "release")
    values = _complete(home, ["log"], "")
    assert sid.replace("-", "")[-8:] in values and "completeme" in values
    assert _complete(home, ["log"], "complete") == ["completeme"]
    events_offered = _complete(home, ["show", sid], "")
    assert "HEAD" in events_offered and "release" in events_offered
    assert ids[-1].replace("-", "")[-8:] in events_offered
    assert _complete(home, ["show", "missing"], "") == ["HEAD"]


def test_every_command_has_json_and_help():
    for name, command in all_commands().items():
        assert any(p.name == "as_json" for p in command.params), name
        assert command.help, name


SESSION_COMMANDS = [
    ["log", "{s}"],
    ["tree", "{s}"],
    ["show", "{s}", "HEAD"],
    ["context", "{s}"],
    ["checkout", "{s}", "HEAD"],
    ["append", "{s}", "message", "{{}}"],
    ["fork", "{s}"],
    ["compact", "{s}"],
    ["archive", "{s}"],
    ["unarchive", "{s}"],
    ["rename", "{s}", "t"],
    ["label", "{s}"],
    ["rm", "{s}", "--yes"],
    ["export", "{s}"],
    ["stats", "{s}"],
    ["search", "x", "--session", "{s}"],
    ["fsck", "{s}"],
]


@pytest.mark.parametrize("args", SESSION_COMMANDS, ids=lambda a: a[0])
def test_every_session_command_reports_unknown_and_ambiguous_refs(home, args):
    a, _ = make(home, name="one")
    make(home, name="two")
    unknown = run(home, *[w.format(s="no-such-session") for w in args])
    assert "no session" in error(unknown)
    ambiguous = run(home, *[w.format(s=a[:4]) for w in args])
    assert "ambiguous" in error(ambiguous)
    assert Store(home).exists(a)  # nothing was done to it


def test_progress_bar_draws_on_a_terminal_only(capsys):
    from agentlog.cli.progress import progress_bar

    with progress_bar("work", force=True) as update:
        for n in range(3):
            update(n + 1, 3)
    with progress_bar("quiet") as update:  # pytest's stderr is not a terminal
        update(1, 1)
    captured = capsys.readouterr()
    assert captured.out == ""


@pytest.mark.parametrize(
    "text,seconds", [("90d", 90 * 86400), ("12h", 43200), ("2w", 1209600), ("1.5m", 90), ("1y", 365 * 86400)]
)
def test_ages(text, seconds):
    from agentlog.cli.timespec import parse_age

    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", ["", "90", "d", "-1d", "3 fortnights"])
def test_bad_ages(text):
    from agentlog.cli.timespec import parse_age

    with pytest.raises(ValueError):
        parse_age(text)


def test_a_delayed_progress_bar_draws_only_for_slow_work(monkeypatch):
    """A search's catch-up is usually quick: its bar must not flash, yet a
    first search that indexes everything shows one."""
    from agentlog.cli import progress

    now = [100.0]
    shown: list[str] = []
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(progress.Progress, "start", lambda bar: shown.append(bar.tasks[0].description))
    monkeypatch.setattr(progress.Progress, "stop", lambda bar: shown.append("stopped"))
    with progress.progress_bar("quick", force=True, delay=1.0) as update:
        update(1, 2)
        update(2, 2)
    assert shown == []
    with progress.progress_bar("slow", force=True, delay=1.0) as update:
        update(1, 3)
        now[0] += 1.5
        update(2, 3)
        update(3, 3)
    assert shown == ["slow", "stopped"]
    with progress.progress_bar("at once", force=True) as update:
        pass
    assert shown[2:] == ["at once", "stopped"]


def test_compact_split_turn_cuts_inside_one_long_turn(tmp_path):
    """The CLI could not compact one long agent turn (one request, many
    tool steps), and said its context was "within" a budget it was over."""
    home = tmp_path / "home"
    with Store(home).create(session_id="t") as s:
        s.append("message", {"content": "fix the bug"}, role="user")
        for i in range(40):
            s.append_many(
                [
                    ("tool_call", {"id": f"c{i}", "name": "run", "arguments": "{}"}, "assistant"),
                    ("tool_result", {"tool_call_id": f"c{i}", "content": "output line " * 200}, "tool"),
                    ("message", {"content": f"step {i} done"}, "assistant"),
                ]
            )
    said = ok(home, "compact", "t", "--keep-tokens", "5000")
    assert "is the turn in progress" in said and "--split-turn cuts inside it" in said
    assert ok_json(home, "compact", "t", "--keep-tokens", "5000", "--split-turn")["compacted"] is True

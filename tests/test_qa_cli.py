"""Regressions from the CLI's exploratory QA pass (/tmp/qa_cli/REPORT.md):
each test is named after the failure it pins."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from agentlog import Store
from agentlog.export import export_session
from agentlog.search import index as search_index
from agentlog.shortid import short_ids
from cli_support import error, ok, ok_json, run


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def _session_with_a_blob(home, *, branches=False):
    """A session whose second event's payload is a blob; its id and that event's id."""
    store = Store(str(home), blob_threshold=64)
    with store.create(name="blobby", working_dir="/tmp") as s:
        first = s.append("message", {"content": "pytest is flaky here"}, role="user")
        big = s.append("tool_result", {"tool_call_id": "c", "name": "sh", "content": "x" * 500, "is_error": False})
        s.append("message", {"content": "pytest passes now"}, role="assistant")
        if branches:
            s.checkout(first.id)
            s.append("message", {"content": "another try"}, role="user")
        sid = s.id
    return sid, big


def _damage_blob(home, sid, digest):
    path = home / "sessions" / sid / "blobs" / digest.split(":", 1)[1]
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))


# --- 2: one unreadable payload ------------------------------------------------------
def test_markdown_export_marks_a_damaged_blob_and_keeps_the_rest(home, tmp_path):
    sid, big = _session_with_a_blob(home)
    _damage_blob(home, sid, big.digest)
    out = tmp_path / "x.md"
    result = run(home, "export", sid, "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert f"event {big.id} of {sid} is exported as a marker" in result.stderr
    text = out.read_text()
    assert "payload unreadable" in text and "pytest passes now" in text and "pytest is flaky" in text


def test_html_export_marks_a_damaged_blob(home, tmp_path):
    sid, big = _session_with_a_blob(home)
    _damage_blob(home, sid, big.digest)
    doc = ok_json(home, "export", sid, "--format", "html", "-o", str(tmp_path / "x.html"))
    assert [u["event"] for u in doc["unreadable"]] == [big.id]
    assert "payload unreadable" in (tmp_path / "x.html").read_text()


def test_bundle_export_of_a_damaged_blob_refuses_and_says_how_to_go_on(home, tmp_path):
    sid, big = _session_with_a_blob(home)
    _damage_blob(home, sid, big.digest)
    line = error(run(home, "export", sid, "--format", "bundle", "-o", str(tmp_path / "x.bundle")))
    assert big.id in line and f"agentlog fsck {sid}" in line and "--format md or html" in line
    assert not (tmp_path / "x.bundle").exists()


def test_search_indexes_a_session_with_a_damaged_blob(home):
    sid, big = _session_with_a_blob(home)
    _damage_blob(home, sid, big.digest)
    result = run(home, "search", "--reindex")
    assert result.exit_code == 0 and f"search left out event {big.id}" in result.stderr
    hits = ok_json(home, "search", "pytest", "--session", sid)
    assert len(hits) == 2


# --- 3: short ids stay unique ---------------------------------------------------------
def test_an_id_typed_as_another_sessions_short_id_lengthens_that_short_id():
    uid = "01a22fbc-9862-7366-91ac-48a639aea2fd"
    shorts = short_ids([uid, "39aea2fd"])
    assert shorts["39aea2fd"] == "39aea2fd" and shorts[uid] == "639aea2fd"
    assert short_ids([uid, "39aea2fd-x"])[uid] != "39aea2fd"  # a prefix of it would be ambiguous too


def test_new_with_another_sessions_short_id_keeps_both_typable(home):
    sid = ok(home, "new", "--working-dir", "/tmp").strip()
    ok(home, "append", sid, "message", '{"content": "important"}')
    short = sid.replace("-", "")[-8:]
    ok(home, "new", "--id", short, "--working-dir", "/tmp")
    printed = [line.split()[0] for line in ok(home, "ls").splitlines()[1:]]
    assert len(set(printed)) == 2 and short in printed
    for ref in printed:
        shown = ok_json(home, "log", ref)
        assert len(shown) == (0 if ref == short else 1)


# --- 5: read commands never create a store ---------------------------------------------
@pytest.mark.parametrize("kind", ["file", "sqlite"])
@pytest.mark.parametrize(
    "args", [["ls"], ["log", "x"], ["stats"], ["du"], ["fsck"], ["search", "foo"], ["gc", "--dry-run"]]
)
def test_read_commands_on_a_missing_store_create_nothing(tmp_path, kind, args):
    where = tmp_path / "typo"
    target = where if kind == "file" else f"sqlite://{where}/a/b.db"
    result = run(target, *args)
    assert not where.exists()
    assert "no store at" in result.stderr + result.stdout or "no store there" in result.stdout


def test_a_missing_store_is_named_in_the_one_error_line(tmp_path):
    line = error(run(tmp_path / "typo", "log", "nope"))
    assert "no session 'nope'" in line and f"no store at {tmp_path / 'typo'}" in line


def test_ls_of_a_missing_store_says_there_is_none(tmp_path):
    assert "there is no store there" in ok(tmp_path / "typo", "ls")
    assert ok_json(tmp_path / "typo", "ls") == []
    assert not (tmp_path / "typo").exists()


def test_new_still_creates_the_store(tmp_path):
    ok(tmp_path / "fresh", "new", "--working-dir", "/tmp")
    assert (tmp_path / "fresh" / "sessions").is_dir()


@pytest.mark.parametrize("option", ["--store", "--home"])
def test_an_empty_store_option_is_a_usage_error(option):
    from click.testing import CliRunner

    from agentlog.cli import main

    result = CliRunner(env={"AGENTLOG_HOME": None, "AGENTLOG_STORE": None}).invoke(main, [option, "", "ls"])
    assert result.exit_code == 2 and f"{option} is empty" in result.stderr


# --- 6: a read-only home ------------------------------------------------------------------
def _refuse_writes(monkeypatch):
    def refused(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(search_index, "_connect", refused)


def test_search_reads_an_index_it_cannot_write(home, monkeypatch):
    sid, _ = _session_with_a_blob(home)
    assert ok_json(home, "search", "pytest")  # builds the index
    _refuse_writes(monkeypatch)
    result = run(home, "search", "pytest", "--json")
    assert result.exit_code == 0 and len(json.loads(result.stdout)) == 2
    assert "cannot be written" in result.stderr and "searching it as it is" in result.stderr


def test_search_without_an_index_it_cannot_create(home, monkeypatch):
    _session_with_a_blob(home)
    _refuse_writes(monkeypatch)
    result = run(home, "search", "pytest", "--json")
    assert result.exit_code == 0 and len(json.loads(result.stdout)) == 2
    assert "searching without it" in result.stderr
    assert not (home / "search").exists()


def test_gc_dry_run_needs_no_lock_file(home):
    _session_with_a_blob(home)
    locks = home / "locks"
    for name in os.listdir(locks):
        os.unlink(locks / name)
    ok(home, "gc", "--dry-run")
    assert os.listdir(locks) == []  # no lock file made (or opened for writing)


# --- 8: HEAD at the root ----------------------------------------------------------------
def test_head_at_the_root_is_not_called_an_empty_session(home):
    sid, _ = _session_with_a_blob(home)
    ok(home, "checkout", sid, "root")
    said = ok(home, "log", sid)
    assert "HEAD of session" in said and "is at the root" in said and "3 events on other branches" in said
    for args in (["show", sid, "HEAD"], ["label", sid, "x"]):
        line = error(run(home, *args))
        assert "is at the root" in line and "is empty" not in line


# --- 9: options that would be ignored -----------------------------------------------------
@pytest.mark.parametrize(
    "args, words",
    [
        (["label", "S", "--delete"], "--delete needs the NAME"),
        (["import", "--from", "claude", "x.jsonl", "--polls", "3"], "--polls needs --follow"),
        (["import", "--from", "claude", "x.jsonl", "--interval", "5"], "--interval needs --follow"),
        (["gc", "--yes"], "--yes needs --quarantine"),
        (["gc", "--quarantine-older-than", "0s"], "--quarantine-older-than needs --quarantine"),
        (["export", "S", "-o", ""], "-o is empty"),
    ],
)
def test_meaningless_options_are_usage_errors(home, args, words):
    ok(home, "new", "--id", "S", "--working-dir", "/tmp")
    assert words in error(run(home, *args), code=2)


# --- 12: the export report counts what was written -----------------------------------------
def test_markdown_export_reports_the_events_it_wrote(home, tmp_path):
    sid, _ = _session_with_a_blob(home, branches=True)
    result = run(home, "export", sid, "-o", str(tmp_path / "x.md"))
    assert "exported 2 of 4 events (the active path" in result.stderr
    doc = ok_json(home, "export", sid, "-o", str(tmp_path / "y.md"))
    assert (doc["events"], doc["session_events"], doc["scope"]) == (2, 4, "active path")
    doc = ok_json(home, "export", sid, "--all-branches", "-o", str(tmp_path / "z.md"))
    assert (doc["events"], doc["scope"]) == (4, "every branch")


def test_export_report_of_the_library(home, tmp_path):
    sid, _ = _session_with_a_blob(home, branches=True)
    with Store(str(home)).open(sid, readonly=True) as s, open(tmp_path / "x.md", "wb") as out:
        report = export_session(s, "md", out)
    assert (report.events, report.session_events) == (2, 4)


# --- 13-16 ------------------------------------------------------------------------------
def test_import_of_a_directory_as_a_bundle_says_it_is_one(home, tmp_path):
    ok(home, "new", "--working-dir", "/tmp")
    assert "is a directory" in error(run(home, "import", "--from", "bundle", str(tmp_path)), code=2)


def test_continue_hint_names_the_option(home, tmp_path):
    gone = tmp_path / "old" / "proj"
    ok(home, "new", "--working-dir", str(gone))
    here = tmp_path / "new" / "proj"
    here.mkdir(parents=True)
    line = error(run(home, "continue", str(here)))
    assert "agentlog continue --reroot" in line


def test_non_utf8_names_are_shown_as_bytes_everywhere(home, tmp_path):
    ok(home, "new", "--id", "S", "--working-dir", "/tmp")
    name = os.fsdecode(b"l\xe9")
    assert "'l\\xe9'" in error(run(home, "label", "S", name))
    missing = os.fsdecode(os.fsencode(str(tmp_path)) + b"/lat\xe9.bundle")
    line = error(run(home, "import", "--from", "bundle", missing), code=2)
    assert "lat\\xe9" in line and "udce9" not in line


def test_append_refuses_a_tombstone(home):
    ok(home, "new", "--id", "S", "--working-dir", "/tmp")
    assert "is reserved" in error(run(home, "append", "S", "tombstone", "{}"))
    assert ok_json(home, "log", "S") == []


def test_sqlite_index_fallback_is_in_memory_only(tmp_path, monkeypatch):
    """The fallback index never touches the disk (a read-only home)."""
    _refuse_writes(monkeypatch)
    with pytest.warns(search_index.SearchWarning, match="searching without it"):
        conn, writable = search_index._read_only(str(tmp_path / "none.sqlite3"), PermissionError(13, "denied"))
    assert writable and isinstance(conn, sqlite3.Connection)
    assert not (tmp_path / "none.sqlite3").exists()

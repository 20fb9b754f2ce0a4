"""Follow-ups of a QA pass over the command as users of coding agents use
it: a full disk after an acknowledged append, rerooting past archived
sessions, a search index that cannot be written, the advice of a bundle
export over a damaged record, quarantined blobs in gc and du, a local
store URL with parts it would drop, and piped output that is whole."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from agentlog import RecoveryWarning, SearchError, Store
from agentlog._fs import OsFs
from agentlog.backends.files import FileBackend
from agentlog.backends.files.gc import collect, usage
from agentlog.errors import StorageError
from cli_support import error, ok, ok_json, run
from pg_support import needs_pg, pg_url, sql

_AGENTLOG = os.path.join(os.path.dirname(sys.executable), "agentlog")


class _HeadFileFails(OsFs):
    """A disk that fills up after the log was written: the HEAD file (a
    cache, rewritten when a writer closes) cannot be replaced."""

    def write_atomic(self, path: str, data: bytes, *, durable: bool, tmp: str | None = None) -> None:
        if os.path.basename(path) == "HEAD":
            raise StorageError("write", path + ".tmp", 28, "No space left on device")
        super().write_atomic(path, data, durable=durable, tmp=tmp)


def test_a_full_disk_after_the_append_does_not_report_a_stored_event_as_lost(tmp_path: Path) -> None:
    home = tmp_path / "home"
    Store(home).create(session_id="s").close()
    store = Store(backend=FileBackend(str(home), fs=_HeadFileFails()))
    with pytest.warns(RecoveryWarning, match="HEAD file was not updated .*No space left on device"):
        with store.open("s") as s:
            appended = s.append("message", {"content": "two"}, role="user")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)  # the stale HEAD file, corrected on open
        with Store(home).open("s", readonly=True) as s:
            assert s.head == appended.id and len(s.entries()) == 1


def test_continue_reroot_passes_over_an_archived_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    old_place = tmp_path / "p1" / "proj"
    old_place.mkdir(parents=True)
    store = Store(home)
    with store.create(name="live", working_dir=str(old_place)) as live:
        live_id = live.id
    time.sleep(0.01)
    with store.create(name="old", working_dir=str(old_place)) as old:
        old_id = old.id
    store.update_meta(old_id, archived=True)
    new_place = tmp_path / "m" / "proj"
    new_place.parent.mkdir()
    old_place.rename(new_place)
    rerooted = ok_json(home, "continue", str(new_place), "--reroot")
    assert rerooted["id"] == live_id and rerooted["archived"] is False
    assert ok_json(home, "continue", str(new_place))["id"] == live_id


def test_a_search_index_that_cannot_be_written_is_a_search_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    with Store(home).create(name="n") as s:
        s.append("message", {"content": "findme"}, role="user")

    def full(conn: sqlite3.Connection, store: Store) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("agentlog.search.index._setup", full)
    with pytest.raises(SearchError, match="database or disk is full .*deleting it loses nothing"):
        Store(home).search("findme")
    assert "database or disk is full" in error(run(home, "search", "findme"))


def test_a_bundle_export_over_a_damaged_record_advises_the_repair_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Store(home).create(session_id="d") as s:
        for n in range(3):
            s.append("message", {"content": f"note {n}"}, role="user")
    chunk = home / "sessions" / "d" / "chunks" / "000000.jsonl"
    chunk.write_bytes(chunk.read_bytes().replace(b"note 1", b"NOTE 1"))
    result = run(home, "export", "d", "--format", "bundle", "-o", str(tmp_path / "b"))
    assert result.exit_code == 1
    line = result.stderr.splitlines()[-1]  # after the warning that opening the record gave
    assert line.startswith("agentlog: error: ") and "fsck --repair d" in line and "--format md" not in line


def test_gc_quarantine_removes_a_quarantined_blob_and_du_counts_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Store(home, blob_threshold=16).create(session_id="b") as s:
        s.append("tool_result", {"tool_call_id": "c", "content": "x" * 200}, role="tool")
    [blob] = (home / "sessions" / "b" / "blobs").iterdir()
    blob.write_bytes(b"damaged")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        ok(home, "fsck", "--repair")
    quarantined = blob.with_name(blob.name + ".quarantine")
    assert quarantined.exists()
    [row] = usage(str(home))
    assert row.quarantine == len(b"damaged") and row.blobs == 0
    report = collect(str(home), quarantine=True)
    assert [item.path for item in report.items if item.what == "quarantine"] == [str(quarantined)]
    assert not quarantined.exists()


@pytest.mark.parametrize("url", ["file:///{tmp}/none?x=1", "sqlite:///{tmp}/none.db?mode=ro", "file:///{tmp}/none#x"])
def test_a_local_store_url_with_parts_it_would_drop_is_refused_where_no_store_is(tmp_path: Path, url: str) -> None:
    result = run(url.format(tmp=tmp_path), "ls")
    assert "takes no options" in error(result)
    assert os.listdir(tmp_path) == []


def test_piped_output_is_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    long_title = "a title far longer than the forty cells a terminal column allows it"
    # A long id makes the hint after a checkout longer than PIPE_WIDTH.
    with Store(home).create(session_id="s" * 128, name="x", title=long_title) as s:
        s.append("message", {"content": "a"}, role="user")
        s.append("message", {"content": "b"}, role="user")
        sid = s.id
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "AGENTLOG_STORE")}
    listed = subprocess.run([_AGENTLOG, "--home", str(home), "ls"], capture_output=True, text=True, env=env)
    assert long_title in listed.stdout and "…" not in listed.stdout
    ok(home, "checkout", sid, "root")  # HEAD before every event: log says how to find them
    logged = subprocess.run(
        [_AGENTLOG, "--home", str(home), "log", sid],
        capture_output=True,
        text=True,
        env=env,
    )
    hint = [line for line in logged.stdout.splitlines() if "agentlog checkout" in line]
    assert len(hint) == 1 and len(hint[0]) > 240 and hint[0].rstrip().endswith("picks one)"), logged.stdout


@needs_pg
@pytest.mark.parametrize("command", [["ls"], ["fsck"], ["search", "foo"], ["log", "x"]])
def test_a_read_only_command_on_a_postgresql_schema_with_no_store_creates_none(
    pg_schema: str, command: list[str]
) -> None:
    url = pg_url(pg_schema).replace("postgres@", "postgres:secret@", 1)
    result = run(url, *command)
    said = result.stdout + result.stderr
    assert "there is no store" in said and "secret" not in said
    assert sql("SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s", pg_schema) == [(0,)]
    assert run(url, "new", "--name", "made").exit_code == 0  # a command that creates still does
    assert sql("SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s", pg_schema) == [(1,)]


def test_an_event_is_named_by_the_start_of_its_short_id_as_printed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Store(home).create(session_id="s") as s:
        ids = [s.append("message", {"content": f"m{n}"}, role="user").id for n in range(3)]
    shown = ok(home, "log", "s").split()[0]  # the first event's short id, as log prints it
    assert ids[0].replace("-", "").endswith(shown)
    assert ok_json(home, "show", "s", shown[:4])["id"] == ids[0]

"""Where output goes and what caches may do (found by a hostile-input review
of the CLI): export writes into what the user named, a reader that goes
away is an error, gc never takes a blob a damaged line may name, and a
derived file or a breadcrumb that fails never hides or fails a session."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agentlog import SearchWarning, Store
from agentlog.backends.files.gc import collect
from cli_support import run

AGENTLOG = Path(sys.executable).parent / "agentlog"


def _session(home: Path, sid: str = "s", n: int = 1) -> None:
    with Store(home).create(session_id=sid, working_dir=str(home.parent)) as s:
        s.append_many([("message", {"content": f"event {i} " + "y" * 200}, "user") for i in range(n)])


# --- export -o --------------------------------------------------------------------


def test_export_through_a_symlink_replaces_the_file_it_names(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _session(home)
    real = tmp_path / "real.md"
    real.write_text("original")
    real.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    assert run(home, "export", "s", "-o", str(link)).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(real)  # still a link
    assert real.read_text().startswith("# session s")
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the file keeps its mode


def test_export_to_a_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _session(home)
    out = tmp_path / "new.md"
    assert run(home, "export", "s", "-o", str(out)).exit_code == 0
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600


def test_export_into_a_fifo_writes_into_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _session(home)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    result = run(home, "export", "s", "-o", str(fifo))
    reader.join(10)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # not replaced by a regular file
    assert got and got[0].startswith(b"# session s")


# --- a reader that goes away --------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("log", "big"),
        ("tree", "big"),
        ("log", "big", "--json"),
        ("export", "big"),
        ("export", "big", "--format", "html"),
    ],
)
def test_a_closed_pipe_is_exit_status_1(tmp_path: Path, args: tuple[str, ...]) -> None:
    home = tmp_path / "home"
    _session(home, "big", 3000)  # an output far larger than a pipe's buffer
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTLOG_HOME", "AGENTLOG_STORE")}
    proc = subprocess.Popen(
        [str(AGENTLOG), "--home", str(home), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(1)
    proc.stdout.close()  # `| head -c 1`
    err = proc.stderr.read()
    assert proc.wait(60) == 1, err
    assert b"Traceback" not in err


# --- gc and damage ----------------------------------------------------------------------


def _blob_session(home: Path, sid: str) -> Path:
    with Store(home).create(session_id=sid) as s:
        s.append("message", {"content": "big " + "x" * 20_000}, "assistant")  # kept as a blob
        s.append("message", {"content": "after"}, "user")
    blobs = home / "sessions" / sid / "blobs"
    old = time.time() - 3 * 3600  # past gc's grace period
    for blob in blobs.iterdir():
        os.utime(blob, (old, old))
    return blobs


def _orphan(blobs: Path) -> Path:
    orphan = blobs / ("ab" * 32)
    orphan.write_bytes(b"nobody names me")
    old = time.time() - 3 * 3600
    os.utime(orphan, (old, old))
    return orphan


def test_gc_keeps_every_blob_of_a_session_whose_line_naming_one_is_damaged(tmp_path: Path) -> None:
    home = tmp_path / "home"
    blobs = _blob_session(home, "hurt")
    chunk = home / "sessions" / "hurt" / "chunks" / "000000.jsonl"
    data = bytearray(chunk.read_bytes())
    at = data.index(b"sha256:") + 10
    data[at] = ord("0") if data[at] != ord("0") else ord("1")  # the digest itself is the damage
    chunk.write_bytes(bytes(data))
    [payload] = list(blobs.iterdir())
    orphan = _orphan(blobs)
    healthy = _blob_session(home, "fine")
    healthy_orphan = _orphan(healthy)
    report = collect(str(home))
    assert payload.exists() and orphan.exists()  # the only copy of that message is kept
    assert [sid for sid, _ in report.damaged] == ["hurt"]
    assert "damaged line" in report.damaged[0][1]
    assert not healthy_orphan.exists()  # a whole session is still collected


def test_gc_keeps_blobs_while_a_quarantine_file_exists(tmp_path: Path) -> None:
    home = tmp_path / "home"
    blobs = _blob_session(home, "q")
    (home / "sessions" / "q" / "chunks" / "000000.jsonl.quarantine").write_bytes(b'{"quarantined_at": 1}\n')
    orphan = _orphan(blobs)
    report = collect(str(home))
    assert orphan.exists()
    assert report.damaged and report.damaged[0][0] == "q"


def test_gc_keeps_blobs_of_a_session_with_a_torn_tail(tmp_path: Path) -> None:
    home = tmp_path / "home"
    blobs = _blob_session(home, "torn")
    with open(home / "sessions" / "torn" / "chunks" / "000000.jsonl", "ab") as f:
        f.write(b'{"id":"01a2')  # a crash mid-write: the next writer cuts it
    orphan = _orphan(blobs)
    report = collect(str(home))
    assert orphan.exists() and "torn" in report.damaged[0][1]


# --- derived files and caches ---------------------------------------------------------


def test_a_missing_index_hides_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _session(home)
    (home / "sessions" / "s" / "index.bin").unlink()
    store = Store(home)
    assert [i.id for i in store.list()] == ["s"]
    assert [h.session_id for h in store.search("event")] == ["s"]
    assert run(home, "rm", "s", "--yes").exit_code == 0
    assert not store.exists("s")


def test_a_breadcrumb_that_cannot_be_written_does_not_fail_the_create(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "breadcrumbs").write_text("a file where the directory goes")
    result = run(home, "new", "--name", "one", "--working-dir", str(tmp_path))
    assert result.exit_code == 0
    assert "warning: cannot record" in result.stderr
    assert len(Store(home).list()) == 1  # one session, reported as made


def test_continue_skips_archived_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = tmp_path / "p"
    work.mkdir()
    store = Store(home)
    for sid in ("a", "b"):
        store.create(session_id=sid, working_dir=str(work)).close()
    store.update_meta("b", archived=True)  # b is the latest, and hidden
    assert store.latest_for(str(work)) == "a"
    store.update_meta("a", archived=True)
    assert store.latest_for(str(work)) is None


def test_fsck_reports_an_os_error_and_checks_the_other_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for sid in ("a", "b"):
        _session(home, sid)
    chunk = home / "sessions" / "a" / "chunks" / "000000.jsonl"
    chunk.unlink()
    chunk.mkdir()  # the OS refuses to read it
    with open(home / "sessions" / "b" / "chunks" / "000000.jsonl", "ab") as f:
        f.write(b"junk\n")
    problems = Store(home).fsck()
    assert {p.session_id for p in problems if p.severity == "error"} == {"a", "b"}
    assert any("cannot be checked" in p.message for p in problems if p.session_id == "a")


def test_gc_says_which_sessions_kept_their_blobs_and_why(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _blob_session(home, "q")
    (home / "sessions" / "q" / "chunks" / "000000.jsonl.quarantine").write_bytes(b"moved aside\n")
    result = run(home, "gc")
    assert result.exit_code == 0
    assert "kept every blob of q: 000000.jsonl.quarantine" in result.stderr
    document = run(home, "gc", "--json")
    assert '"damaged"' in document.stdout and '"id": "q"' in document.stdout


def test_search_survives_a_hand_edited_working_dir(tmp_path: Path) -> None:
    """The session whose session.json is damaged is named in a warning and
    left out (as one that does not parse always was), the others are
    searched; after fsck --repair it is found again."""
    home = tmp_path / "home"
    _session(home)
    _session(home, "t")
    path = home / "sessions" / "s" / "session.json"
    path.write_text(path.read_text().replace(f'"working_dir": "{tmp_path}"', '"working_dir": {"x": 1}'))
    assert '"x": 1' in path.read_text()
    with pytest.warns(SearchWarning, match="search cannot read session s: .*field 'working_dir'"):
        assert [h.session_id for h in Store(home).search("event")] == ["t"]
    Store(home).repair("s")
    assert sorted(h.session_id for h in Store(home).search("event")) == ["s", "t"]


def test_a_search_limit_past_what_sql_binds_means_all(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _session(home, n=3)
    assert len(Store(home).search("event", limit=2**70)) == 3


def test_an_export_that_cannot_be_written_names_the_users_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _session(home)
    target = tmp_path / "no such dir" / "x.md"
    result = run(home, "export", "s", "-o", str(target))
    assert result.exit_code == 1
    assert f"cannot write {target}" in result.stderr and ".agentlog-export-" not in result.stderr


def test_a_title_with_a_newline_stays_on_its_line_in_prune_and_search(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Store(home).create(session_id="s", name="first line\nsecond\tline") as s:
        s.append("message", {"content": "needle"}, "user")
    found = run(home, "search", "needle")
    assert found.exit_code == 0 and "first line second line" in found.stdout
    pruned = run(home, "prune", "--older-than", "0s", "--dry-run")
    assert pruned.exit_code == 0, pruned.output
    assert "first line second line" in pruned.output and "first line\nsecond" not in pruned.output

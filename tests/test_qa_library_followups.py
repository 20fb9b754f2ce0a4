"""Follow-ups of a QA pass over the library on every backend: options a
backend does not take, NUL characters where no search or path can use
them, a schema name PostgreSQL would cut, and fsck of a session whose
writer is open."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentlog import InvalidMeta, InvalidOption, SearchError, Store, UnknownBackend
from pg_support import needs_pg, pg_url

# --- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize("durability", ["fast", "", "FULL", None, 1])
def test_every_backend_refuses_a_durability_it_does_not_know(tmp_path: Path, durability: object) -> None:
    for url in (str(tmp_path / "home"), "memory:", f"sqlite:///{tmp_path}/s.db"):
        with pytest.raises(InvalidOption, match="durability must be 'full' or 'off'"):
            Store(url, durability=durability)  # type: ignore[arg-type]


def test_a_misspelt_backend_option_is_an_invalid_option_naming_the_ones_it_takes(tmp_path: Path) -> None:
    with pytest.raises(InvalidOption, match=r"the file backend takes no option 'durabilty'; it takes: durability"):
        Store(tmp_path / "home", durabilty="off")
    with pytest.raises(InvalidOption, match=r"the memory backend takes no option 'chunk_size'; it takes: durability"):
        Store("memory:", chunk_size=1)
    with pytest.raises(InvalidOption, match=r"the sqlite backend takes no option 'schema'"):
        Store(f"sqlite:///{tmp_path}/s.db", schema="x")
    assert not (tmp_path / "s.db").exists()  # refused before anything was made


# --- NUL characters ------------------------------------------------------------------------------


def test_a_query_or_filter_holding_a_nul_is_refused_on_every_backend(store: Store) -> None:
    with store.create(name="n") as s:
        s.append("message", {"content": "alpha beta"}, role="user")
        s.append("message", {"content": "alpha\x00gamma"}, role="user")
    with pytest.raises(SearchError, match=r"query holds a NUL character \(U\+0000\) at character 5"):
        store.search("alpha\x00")
    with pytest.raises(SearchError, match=r"cwd holds a NUL character"):
        store.search("alpha", cwd="/tmp/a\x00b")
    # The text around a NUL is found, and the snippet shows the NUL as its
    # symbol on every backend (PostgreSQL cannot hold the character itself).
    [hit] = store.search("gamma")
    assert hit.snippet == "alpha\u2400gamma"


def test_a_working_directory_holding_a_nul_is_refused_on_every_backend(store: Store) -> None:
    with pytest.raises(InvalidMeta, match="'working_dir' holds a NUL character"):
        store.create(name="n", working_dir="/tmp/a\x00b")
    assert store.list() == []
    with store.create(name="n") as s, pytest.raises(InvalidMeta, match="'working_dir' holds a NUL"):
        s.update_meta(working_dir="/tmp/a\x00b")


# --- PostgreSQL's identifiers --------------------------------------------------------------------


@needs_pg
def test_a_schema_name_postgresql_would_cut_is_refused() -> None:
    long_a = "L" * 63 + "_tenant_a"
    with pytest.raises(UnknownBackend, match="at most 63 bytes"):
        Store(pg_url(long_a))
    with pytest.raises(UnknownBackend, match="at most 63 bytes"):
        Store(pg_url("é" * 32))  # 64 bytes in UTF-8


# --- fsck beside an open writer (file backend) ------------------------------------------------------


def test_fsck_of_a_session_whose_writer_is_open_here_reports_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(name="live") as s:
        first = s.append("message", {"content": "a"}, role="user")
        s.append("message", {"content": "b"}, role="user")
        s.select(first.id)
        # HEAD's file is written when the writer closes: it lags now, by design.
        assert store.fsck() == []
    assert store.fsck() == []


def test_fsck_of_a_session_whose_writer_is_open_in_another_process_reports_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    script = textwrap.dedent(
        f"""
        import sys
        from agentlog import Store
        s = Store({str(home)!r}).create(session_id="live")
        s.append("message", {{"content": "a"}}, role="user")
        s.append("message", {{"content": "b"}}, role="user")
        print("ready", flush=True)
        sys.stdin.readline()
        """
    )
    writer = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        assert Store(home).fsck() == []
    finally:
        assert writer.stdin is not None
        writer.stdin.close()
        writer.wait(30)
    # The writer ended without closing the session: now the stale HEAD file is news.
    [problem] = Store(home).fsck()
    assert problem.severity == "warning" and "HEAD file says" in problem.message


def test_a_reader_derives_the_index_from_the_log_when_it_cannot_read_the_file(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(session_id="s") as s:
        ids = [s.append("message", {"content": f"m{n}"}, role="user").id for n in range(3)]
    index = tmp_path / "home" / "sessions" / "s" / "index.bin"
    index.unlink()
    index.mkdir()  # what stands in its place cannot be read as a file (as root, a mode of 000 can)
    with store.open("s", readonly=True) as reader:
        assert [e.id for e in reader.transcript()] == ids


def test_a_file_where_a_sessions_directory_should_be_is_reported_not_skipped(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    store.create(session_id="fine").close()
    (tmp_path / "home" / "sessions" / "flat").write_text("not a directory")
    rows, broken = store.scan()
    assert [r.id for r in rows] == ["fine"] and [b.id for b in broken] == ["flat"]
    [problem] = store.fsck()
    assert problem.session_id == "flat" and "is not a directory" in problem.message


def test_a_blob_the_os_will_not_read_is_no_missing_blob_and_the_export_marks_it(tmp_path: Path) -> None:
    import io

    from agentlog import StorageError
    from agentlog.export import export_session

    store = Store(tmp_path / "home", blob_threshold=16)
    with store.create(session_id="b") as s:
        s.append("message", {"content": "before"}, role="user")
        big = s.append("tool_result", {"tool_call_id": "c", "content": "x" * 200}, role="tool")
    blob = max((tmp_path / "home" / "sessions" / "b" / "blobs").iterdir(), key=lambda p: p.stat().st_size)
    blob.unlink()
    blob.mkdir()  # the OS refuses to read it as a file (as root, a mode of 000 would not)
    with store.open("b", readonly=True) as s:
        with pytest.raises(StorageError, match="Is a directory"):
            s.resolve(s.event(big.id))
        out = io.BytesIO()
        export_session(s, "html", out)
    assert b"payload unreadable" in out.getvalue() and b"before" in out.getvalue()

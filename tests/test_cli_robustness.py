"""The CLI on odd input and partial failure: several sessions where one
cannot be changed, damaged sessions, integers beyond 64 bits, huge
counts, text that is not UTF-8, empty stores, refs in every command.

Each failure must be one stderr line and a non-zero exit, never an
internal error, and whatever was done must be reported."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator

import pytest

from agentlog import Store
from agentlog.errors import StorageError
from cli_support import error, ok, ok_json, run


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def sessions(home, *ids: str) -> None:
    store = Store(home)
    for sid in ids:
        with store.create(session_id=sid) as s:
            s.append("message", {"content": f"in {sid}"}, role="user")


def existing(home) -> set[str]:
    return set(Store(home).backend.session_ids())


HOLDER = textwrap.dedent("""
    import sys
    from agentlog import Store
    session = Store(sys.argv[1]).open(sys.argv[2])
    print("ready", flush=True)
    sys.stdin.read()
    session.close()
""")


@contextlib.contextmanager
def held(home, sid: str) -> Iterator[int]:
    """A writer in another process holding ``sid``'s lease; yields its pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home), sid], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        yield holder.pid
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


# --- finding 5: several sessions, one of which cannot be changed ------------------------
def test_rm_carries_on_past_a_held_session_and_reports_each(home):
    sessions(home, "a", "b", "c")
    with held(home, "b"):
        result = run(home, "rm", "a", "b", "c", "--yes")
    assert result.exit_code == 1
    assert existing(home) == {"b"}
    assert result.stdout.splitlines() == ["a: deleted", "c: deleted"]
    line = error(result)
    assert line.startswith("agentlog: error: b: not deleted: ") and "open for writing" in line

    sessions(home, "d")
    with held(home, "b"):
        result = run(home, "rm", "b", "d", "--yes", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["deleted"] == ["d"]
    assert [f["id"] for f in doc["failed"]] == ["b"] and "open for writing" in doc["failed"][0]["error"]
    assert existing(home) == {"b"}

    # Every ref is resolved first: an unknown one deletes nothing.
    sessions(home, "e")
    error(run(home, "rm", "e", "nope", "--yes"))
    assert existing(home) == {"b", "e"}


def test_archive_and_unarchive_carry_on_past_a_held_session(home):
    sessions(home, "a", "b", "c")
    with held(home, "b"):
        result = run(home, "archive", "a", "b", "c")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == ["a: archived", "c: archived"]
    assert error(result).startswith("agentlog: error: b: not archived: ")
    archived = {i.id for i in Store(home).list(archived=True) if i.archived}
    assert archived == {"a", "c"}

    with held(home, "a"):
        result = run(home, "unarchive", "a", "c", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc[0]["id"] == "a" and "open for writing" in doc[0]["error"]
    assert doc[1] == {"id": "c", "archived": False}
    assert error(result).startswith("agentlog: error: a: not unarchived: ")


def test_prune_skips_a_held_session_and_reports_it(home):
    sessions(home, "a", "b", "c")
    with held(home, "b"):
        result = run(home, "prune", "--older-than", "0s", "--yes")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert existing(home) == {"b"}
    out = result.stdout.splitlines()
    assert sorted(line.split()[1] for line in out if line.startswith("deleted ") and "sessions" not in line) == [
        "a",
        "c",
    ]
    assert not any(line.startswith("deleted b ") for line in out)
    assert out[-1].startswith("deleted 2 sessions")
    assert result.stderr == "skipped b: a writer holds it\n"

    sessions(home, "d")
    with held(home, "b"):
        doc = ok_json(home, "prune", "--older-than", "0s", "--yes")
    assert doc["deleted"] == ["d"] and doc["busy"] == ["b"] and doc["failed"] == []
    assert existing(home) == {"b"}


def test_prune_reports_a_failed_delete_carries_on_and_exits_1(home, monkeypatch):
    sessions(home, "a", "b", "c")
    real = Store.delete

    def delete(self, session_id):
        if session_id == "b":
            raise StorageError("rename", "sessions/b", 5, "Input/output error")
        return real(self, session_id)

    monkeypatch.setattr(Store, "delete", delete)
    result = run(home, "prune", "--older-than", "0s", "--yes", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert sorted(doc["deleted"]) == ["a", "c"]
    assert [f["id"] for f in doc["failed"]] == ["b"]
    assert error(result).startswith("agentlog: error: b: not deleted: ")
    assert existing(home) == {"b"}


def test_rm_and_prune_past_a_writer_in_this_process(home):
    sessions(home, "a", "b", "c")
    with Store(home).open("b"):  # deleting under this process's own writer is refused too
        result = run(home, "rm", "a", "b", "--yes")
        assert result.exit_code == 1 and result.stdout == "a: deleted\n"
        assert "this process" in error(result)
        doc = ok_json(home, "prune", "--older-than", "0s", "--yes")
        assert doc["deleted"] == ["c"] and doc["busy"] == ["b"]
    assert existing(home) == {"b"}


# --- finding 16: rm of a damaged session -------------------------------------------------
@pytest.mark.parametrize("damage", ["garbage", "missing"])
def test_rm_deletes_a_session_whose_metadata_is_damaged(home, damage):
    sessions(home, "s", "t")
    meta = home / "sessions" / "s" / "session.json"
    if damage == "garbage":
        meta.write_text("{bad")
    else:
        meta.unlink()
    assert ok(home, "rm", "s", "--yes") == "s: deleted\n"
    assert existing(home) == {"t"}

    sessions(home, "s")
    (home / "sessions" / "s" / "session.json").write_text("[]")
    result = run(home, "rm", "s", "t", input="y\n")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "s  (unreadable: " in result.stderr
    assert "t  -  (1 event)" in result.stderr
    assert existing(home) == set()


# --- finding 7: integers beyond 64 bits ----------------------------------------------------
@pytest.mark.parametrize(
    "number",
    [
        "123456789012345678901234567890",
        str(2**64),
        str(-(2**63) - 1),
        "9" * 300,
        "-" + "1" * 30,
    ],
)
def test_append_refuses_an_integer_beyond_64_bits(home, number):
    sessions(home, "s")
    record = '{"a": "12345678901234567890123 in a string", "deep": [[{"n": ' + number + "}]]}"
    line = error(run(home, "append", "s", "custom", record))
    assert "RECORD_JSON has an integer beyond 64 bits" in line and number[:20] in line
    assert len(line) < 400
    line = error(run(home, "append", "s", "custom", input=record))
    assert "the record on stdin has an integer beyond 64 bits" in line
    assert len(ok_json(home, "log", "s")) == 1  # nothing appended


def test_append_draws_the_line_at_64_bits(home):
    sessions(home, "s")
    assert "beyond 64 bits, 18446744073709551616," in error(run(home, "append", "s", "custom", str(2**64)))
    record = '{"n": ' + "9" * 5000 + "}"  # too big even for a double
    assert "not valid JSON" in error(run(home, "append", "s", "custom", record))
    record = {
        "max": 2**64 - 1,
        "min": -(2**63),
        "text": '99999999999999999999999999 \\" 88888888888888888888888',
        "float": 1.2345678901234567e300,
        "zero": 0,
    }
    ok(home, "append", "s", "custom", json.dumps(record))
    assert ok_json(home, "show", "s", "HEAD")["record"] == record


# --- finding 13: stats with nothing to count ---------------------------------------------
@pytest.mark.parametrize("where", ["fresh", "memory", "all-damaged"])
def test_stats_of_a_store_with_no_readable_session(home, where):
    target: object = home
    if where == "memory":
        target = f"memory:robust-{uuid.uuid4().hex}"
    elif where == "all-damaged":
        (home / "sessions" / "s").mkdir(parents=True)  # nothing in it: unreadable
    result = run(target, "stats")
    assert result.exit_code == 0 or where == "all-damaged", (result.stdout, result.stderr)
    assert "internal error" not in result.stderr
    assert "tokens: 0 in, 0 out (0 calls)" in result.stdout
    doc = json.loads(run(target, "stats", "--json").stdout)
    assert doc["sessions"] == 0 and doc["events"] == 0
    assert {"input_tokens", "output_tokens", "total_tokens", "calls", "cost_usd"} <= set(doc["tokens"])
    assert doc["tokens"]["input_tokens"] == 0


# --- finding 14: copy resolves refs -------------------------------------------------------
def test_copy_resolves_names_and_short_ids_once_each(home, tmp_path):
    store = Store(home)
    with store.create(name="demo") as s:
        s.append("message", {"content": "hi"}, role="user")
        sid = s.id
    with store.create(name="other") as s:
        other = s.id
    target = tmp_path / "target"
    doc = ok_json(home, "copy", "demo", sid.replace("-", "")[-8:], sid, "--to", str(target))
    assert doc["created"] == [sid] and doc["unchanged"] == [] and doc["events"] == 1
    assert set(Store(target).backend.session_ids()) == {sid}
    result = run(home, "copy", "demo", "--to", str(target))
    assert result.exit_code == 0 and result.stderr == ""  # no stray progress output off a terminal
    assert "1 unchanged" in result.stdout
    assert error(run(home, "copy", "nosuch", "--to", str(target))) == "agentlog: error: no session 'nosuch'"
    assert other not in set(Store(target).backend.session_ids())


# --- finding 15: odd arguments --------------------------------------------------------------
def test_huge_limits_mean_everything(home):
    sessions(home, "s")
    huge = "9" * 30
    assert len(ok_json(home, "log", "s", "-n", huge)) == 1
    hits = ok_json(home, "search", "in", "-n", huge)
    assert [h["session_id"] for h in hits] == ["s"]
    error(run(home, "log", "s", "-n", "0"), code=2)


def test_ancestry_with_thousands_of_digits_goes_past_the_root(home):
    sessions(home, "s")
    line = error(run(home, "show", "s", "HEAD~" + "1" * 5000))
    assert "goes past the root of session s" in line and len(line) < 200
    line = error(run(home, "show", "s", "HEAD~" + "0" * 5000 + "1"))
    assert "goes past the root" in line
    assert ok_json(home, "show", "s", "HEAD~" + "0" * 5000)["kind"] == "message"


def test_text_that_is_not_utf8_is_refused_by_name(home, tmp_path):
    sessions(home, "s")
    latin = tmp_path / os.fsdecode(b"caf\xe9")
    latin.mkdir()
    line = error(run(home, "continue", str(latin)))
    assert "caf\\xe9' is not valid UTF-8" in line and "no session can belong to it" in line
    error(run(home, "continue", str(latin), "--reroot"))
    line = error(run(home, "new", "--working-dir", str(latin)))
    assert "the working directory" in line and "caf\\xe9" in line
    assert "--name '\\xff' is not valid UTF-8" in error(run(home, "new", "--name", os.fsdecode(b"\xff")))
    assert "TITLE '\\xff' is not valid UTF-8" in error(run(home, "rename", "s", os.fsdecode(b"\xff")))
    assert existing(home) == {"s"}


def test_continue_in_a_directory_that_is_not_utf8(home, tmp_path):
    latin = tmp_path / os.fsdecode(b"caf\xe9")
    latin.mkdir()
    cwd = os.getcwd()
    os.chdir(latin)
    try:
        line = error(run(home, "continue"))
    finally:
        os.chdir(cwd)
    assert "not valid UTF-8" in line

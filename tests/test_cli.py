"""The agentlog command line: outputs, id prefixes, errors, fsck, real processes."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from agentlog import Store
from cli_support import ok, ok_json, run

AGENTLOG = Path(sys.executable).parent / "agentlog"
BIG = 20_000  # over the default 16 KiB blob threshold


@pytest.fixture
def cli_home(tmp_path):
    """A file store's home: for the tests about files."""
    return tmp_path / "home"


@pytest.fixture(params=["file", "memory", "sqlite"])
def cli_store(request, tmp_path):
    """The store on each backend: a home directory, or a URL given with --store
    (``memory:NAME`` is shared by the in-process invocations of one test)."""
    return {
        "file": tmp_path / "home",
        "memory": f"memory:cli-{uuid.uuid4().hex}",
        "sqlite": f"sqlite://{tmp_path}/agentlog.db",
    }[request.param]


@pytest.fixture(params=["file", "sqlite"])
def cli_shared_store(request, tmp_path):
    """A store that separate processes share (a memory store cannot be)."""
    return {"file": tmp_path / "home", "sqlite": f"sqlite://{tmp_path}/agentlog.db"}[request.param]


def one_line_error(result, code=1):
    """The error contract: exactly one stderr line, nothing on stdout, no traceback."""
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agentlog: error: ")
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    return lines[0]


def new_session(home, *args):
    return ok(home, "new", *args).strip()


def append(home, session, kind, record, role=None):
    extra = ["--role", role] if role else []
    return ok(home, "append", session, kind, json.dumps(record), *extra).strip()


def chat(home, n=3):
    sid = new_session(home, "--name", "chat")
    ids = [append(home, sid, "message", {"content": f"turn {i}"}, "user") for i in range(n)]
    return sid, ids


# --- new, append, log -------------------------------------------------------------
def test_new_prints_an_id_that_ls_lists(cli_store, tmp_path):
    meta = ok_json(
        cli_store, "new", "--name", "demo", "--working-dir", str(tmp_path), "--model", "m-1", "--id", "demo-1"
    )
    assert (meta["id"], meta["name"], meta["working_dir"], meta["model"]) == ("demo-1", "demo", str(tmp_path), "m-1")
    rows = ok_json(cli_store, "ls")
    assert [(r["id"], r["title"], r["working_dir"], r["event_count"]) for r in rows] == [
        ("demo-1", "demo", str(tmp_path), 0)
    ]


def test_new_defaults_working_dir_to_cwd(cli_store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    meta = ok_json(cli_store, "new")
    assert meta["working_dir"] == str(tmp_path)


def test_append_then_log_json_is_the_active_path(cli_store):
    sid = new_session(cli_store)
    first = append(cli_store, sid, "message", {"content": "hi"}, "user")
    second = ok(cli_store, "append", sid, "message", "-", "--role", "assistant", input='{"content": "hello"}').strip()
    third = ok(cli_store, "append", sid, "custom", input='{"n": 3}').strip()
    events = ok_json(cli_store, "log", sid)
    assert [e["id"] for e in events] == [first, second, third]
    assert [e["parent_id"] for e in events[1:]] == [first, second]
    assert [(e["kind"], e["role"], e["record"]) for e in events] == [
        ("message", "user", {"content": "hi"}),
        ("message", "assistant", {"content": "hello"}),
        ("custom", None, {"n": 3}),
    ]
    with Store(cli_store).open(sid, readonly=True) as s:
        assert s.head == third


def test_append_json_describes_the_stored_event(cli_store):
    sid = new_session(cli_store)
    doc = ok_json(cli_store, "append", sid, "message", '{"content": "x"}', "--role", "user")
    with Store(cli_store).open(sid, readonly=True) as s:
        stored = s.event(doc["id"])
    assert doc == {k: v for k, v in stored.to_dict().items() if k != "record"}


def test_log_human_lines_show_short_id_kind_role_and_preview(cli_store):
    sid = new_session(cli_store)
    append(cli_store, sid, "message", {"content": "first line\nsecond [bold]line[/bold]"}, "user")
    call = append(cli_store, sid, "tool_call", {"id": "c1", "name": "bash", "arguments": '{"cmd":"ls"}'}, "assistant")
    lines = ok(cli_store, "log", sid).splitlines()
    assert len(lines) == 2
    short, *_ = lines[1].split()
    assert call.replace("-", "").endswith(short) and len(short) >= 8  # the random tail
    assert "message" in lines[0] and "user" in lines[0]
    assert "first line second [bold]line[/bold]" in lines[0]  # one line, markup kept literal
    assert 'bash({"cmd":"ls"})' in lines[1] and "◀ HEAD" in lines[1]


def test_log_limit_keeps_the_last_events(cli_store):
    sid, ids = chat(cli_store, 4)
    assert [e["id"] for e in ok_json(cli_store, "log", sid, "-n", "2")] == ids[2:]


# --- blobs stay unloaded unless asked ------------------------------------------------
def test_log_does_not_load_blobs_unless_full(cli_home):
    sid = new_session(cli_home)
    big = {"content": "x" * BIG}
    event_id = append(cli_home, sid, "tool_result", big, "tool")
    lazy = ok_json(cli_home, "log", sid)[0]
    assert lazy["record"] is None and lazy["digest"].startswith("sha256:")
    assert "not loaded" in ok(cli_home, "log", sid)
    assert ok_json(cli_home, "log", sid, "--full")[0]["record"] == big
    assert ok_json(cli_home, "show", sid, event_id)["record"] == big
    # Damage the blob: log without --full never reads it, show verifies it.
    blob_dir = cli_home / "sessions" / sid / "blobs"
    (blob,) = [p for p in blob_dir.rglob("*") if p.is_file()]
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.write_bytes(bytes(data))
    assert ok_json(cli_home, "log", sid)[0]["digest"] == lazy["digest"]
    line = one_line_error(run(cli_home, "show", sid, event_id))
    assert "corrupt" in line or "digest" in line


# --- prefixes -----------------------------------------------------------------------
def test_session_and_event_prefixes_resolve(cli_store):
    sid, ids = chat(cli_store, 3)
    shorts = [line.split()[0] for line in ok(cli_store, "log", sid).splitlines()]
    assert [ids[i].replace("-", "").endswith(shorts[i]) for i in range(3)] == [True] * 3
    for short, full in zip(shorts, ids, strict=True):
        assert ok_json(cli_store, "show", sid[:10], short)["id"] == full
        assert ok_json(cli_store, "show", sid, full[:30])["id"] == full  # a prefix works too
    assert ok_json(cli_store, "show", sid, ids[1].upper())["id"] == ids[1]
    assert ok_json(cli_store, "show", sid, "HEAD")["id"] == ids[-1]


def test_ambiguous_and_unknown_event_prefixes_are_one_line_errors(cli_store):
    sid, ids = chat(cli_store, 2)
    shared = os.path.commonprefix(ids).rstrip("-")
    assert len(shared.replace("-", "")) >= 4  # UUIDv7s made a moment apart share their time
    line = one_line_error(run(cli_store, "show", sid, shared))
    assert "ambiguous" in line and ids[0] in line and ids[1] in line
    unknown = "ffff" if not any(i.startswith("ffff") for i in ids) else "eeee"
    assert "no event" in one_line_error(run(cli_store, "show", sid, unknown))
    assert "4 hex digits" in one_line_error(run(cli_store, "show", sid, "abc"), code=2)
    assert "4 hex digits" in one_line_error(run(cli_store, "show", sid, "zzzzzz"), code=2)


def test_session_prefixes(cli_store):
    for name in ("proj-a", "proj-b", "ab", "abc"):
        new_session(cli_store, "--id", name)
    append(cli_store, "proj-b", "custom", {"n": 1})
    assert ok_json(cli_store, "log", "proj-b")[0]["record"] == {"n": 1}
    assert ok_json(cli_store, "log", "ab") == []  # an exact id beats a longer match
    line = one_line_error(run(cli_store, "log", "proj"))
    assert "ambiguous" in line and "proj-a" in line and "proj-b" in line
    assert "no session 'zz'" in one_line_error(run(cli_store, "log", "zz"))


# --- branching: checkout, tree, show ----------------------------------------------------
def _prefix(event_id: str, others: tuple[str, ...]) -> str:
    """A short prefix of ``event_id`` that none of ``others`` shares: two
    appends in the same millisecond share the first 13 characters."""
    n = 13
    while any(other.startswith(event_id[:n]) for other in others):
        n += 1
    return event_id[:n]


def branched(home):
    """a -> b -> c, then checkout b and append d: b is a branch point, HEAD = d."""
    sid = new_session(home, "--name", "branchy")
    a = append(home, sid, "message", {"content": "try approach A"}, "user")
    b = append(home, sid, "message", {"content": "ok"}, "assistant")
    c = append(home, sid, "message", {"content": "approach A fails"}, "assistant")
    ok(home, "checkout", sid, _prefix(b, (a, c)))
    d = append(home, sid, "message", {"content": "try approach B"}, "user")
    return sid, a, b, c, d


def test_checkout_moves_head_and_the_next_append_branches(cli_store):
    sid, a, b, c, d = branched(cli_store)
    assert [e["id"] for e in ok_json(cli_store, "log", sid)] == [a, b, d]
    doc = ok_json(cli_store, "checkout", sid, c)
    assert doc == {"session": sid, "head": c, "previous": d}
    assert [e["id"] for e in ok_json(cli_store, "log", sid)] == [a, b, c]


def test_checkout_root_starts_a_new_root(cli_store):
    sid, ids = chat(cli_store, 2)
    ok(cli_store, "checkout", sid, "root")
    new_root = append(cli_store, sid, "message", {"content": "fresh"}, "user")
    assert [e["id"] for e in ok_json(cli_store, "log", sid)] == [new_root]
    assert ok_json(cli_store, "tree", sid)["roots"] == [ids[0], new_root]


def test_tree_json_has_every_node_and_its_children(cli_store):
    sid, a, b, c, d = branched(cli_store)
    doc = ok_json(cli_store, "tree", sid)
    assert doc["head"] == d and doc["roots"] == [a]
    children = {n["id"]: n["children"] for n in doc["nodes"]}
    assert children == {a: [b], b: [c, d], c: [], d: []}


def test_tree_text_shows_branches_and_head(cli_store):
    sid, a, b, c, d = branched(cli_store)
    text = ok(cli_store, "tree", sid)
    lines = text.splitlines()
    assert sid in lines[0] and "branchy" in lines[0]
    (branch_point,) = [ln for ln in lines if "2 branches" in ln]
    assert "ok" in branch_point
    (head_line,) = [ln for ln in lines if "◀ HEAD" in ln]
    assert "try approach B" in head_line
    # The side branch hangs under the branch point, labelled; the branch
    # toward HEAD goes on at the branch point's depth, marked.
    assert [ln.strip(" │├└─") for ln in lines if "branch 1/2" in ln] == ["branch 1/2"]
    assert "↳ branch 2/2  (active)" in head_line

    def depth(words):
        (line,) = [ln for ln in lines if words in ln]
        return len(line) - len(line.lstrip(" │├└─"))

    assert depth("try approach A") == depth("2 branches") == depth("try approach B")
    assert depth("approach A fails") > depth("branch 1/2") > depth("2 branches")


def test_show_human_and_json(cli_store):
    sid, a, b, c, d = branched(cli_store)
    doc = ok_json(cli_store, "show", sid, b)
    assert doc["record"] == {"content": "ok"} and doc["children"] == [c, d]
    assert doc["head"] is False and doc["parent_id"] == a
    text = ok(cli_store, "show", sid, d)
    assert d in text and "◀ HEAD" in text and '"try approach B"' in text


# --- context -----------------------------------------------------------------------
def test_context_starts_at_the_latest_compaction(cli_store):
    sid, ids = chat(cli_store, 4)
    comp = append(
        cli_store, sid, "compaction", {"summary": "the user said four things", "first_kept_event_id": ids[3]}, "system"
    )
    last = append(cli_store, sid, "message", {"content": "after"}, "user")
    events = ok_json(cli_store, "context", sid)
    assert [e["id"] for e in events] == [comp, ids[3], last]
    text = ok(cli_store, "context", sid)
    assert "the user said four things" in text and "turn 0" not in text


def test_context_resolve_loads_blobs(cli_store):
    sid = new_session(cli_store)
    append(cli_store, sid, "tool_result", {"content": "y" * BIG}, "tool")
    assert ok_json(cli_store, "context", sid)[0]["record"] is None
    assert ok_json(cli_store, "context", sid, "--resolve")[0]["record"] == {"content": "y" * BIG}


# --- ls -----------------------------------------------------------------------------
def test_ls_orders_by_last_update_and_hides_archived(cli_store):
    old = new_session(cli_store, "--id", "old")
    new_session(cli_store, "--id", "newer")
    append(cli_store, old, "custom", {"touch": 1})
    assert [r["id"] for r in ok_json(cli_store, "ls")] == ["old", "newer"]
    with Store(cli_store).open("newer") as s:
        s.archive()
    assert [r["id"] for r in ok_json(cli_store, "ls")] == ["old"]
    rows = ok_json(cli_store, "ls", "--archived")
    assert {r["id"]: r["archived"] for r in rows} == {"old": False, "newer": True}
    text = ok(cli_store, "ls")
    assert "old" in text and "newer" not in text


def test_ls_all_shows_broken_sessions_with_the_reason(cli_home):
    new_session(cli_home, "--id", "good")
    bad = cli_home / "sessions" / "bad"
    bad.mkdir()
    (bad / "session.json").write_text("{not json")
    assert [r["id"] for r in ok_json(cli_home, "ls")] == ["good"]
    rows = ok_json(cli_home, "ls", "--all")
    broken = [r for r in rows if r["status"] == "broken"]
    assert [r["id"] for r in broken] == ["bad"] and "session.json" in broken[0]["reason"]
    assert "broken" in ok(cli_home, "ls", "--all")


def test_ls_on_an_empty_home(cli_store):
    assert ok_json(cli_store, "ls") == []
    assert "no sessions" in ok(cli_store, "ls")


# --- global options ----------------------------------------------------------------
def test_home_comes_from_option_then_env_then_xdg(tmp_path):
    env_home, opt_home, xdg = tmp_path / "env", tmp_path / "opt", tmp_path / "xdg"
    env = {"AGENTLOG_HOME": str(env_home), "XDG_DATA_HOME": str(xdg)}
    assert run(None, "new", "--id", "via-env", env=env).exit_code == 0
    assert run(None, "--home", str(opt_home), "new", "--id", "via-opt", env=env).exit_code == 0
    env.pop("AGENTLOG_HOME")
    assert run(None, "new", "--id", "via-xdg", env=env).exit_code == 0
    assert (env_home / "sessions" / "via-env").is_dir()
    assert (opt_home / "sessions" / "via-opt").is_dir()
    assert (xdg / "agentlog" / "sessions" / "via-xdg").is_dir()


def test_durability_off_still_stores(cli_store):
    sid = ok(cli_store, "--durability", "off", "new").strip()
    event_id = ok(cli_store, "--durability", "off", "append", sid, "custom", "{}").strip()
    assert ok_json(cli_store, "show", sid, event_id)["record"] == {}


def test_bare_command_prints_help_but_a_missing_command_is_a_usage_error(cli_store):
    result = run(None)
    assert result.exit_code == 0 and "Commands:" in result.stdout
    assert "Missing command" in one_line_error(run(cli_store), code=2)


# --- errors ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, code, words",
    [
        (["log", "../x"], 1, "invalid session id"),
        (["log", "missing"], 1, "no session 'missing'"),
        (["show", "missing", "HEAD", "--json"], 1, "no session"),
        (["frobnicate"], 2, "No such command"),
        (["log"], 2, "Missing argument 'SESSION'"),
        (["--durability", "sometimes", "ls"], 2, "--durability"),
        (["new", "--id", "a/b"], 1, "invalid session id"),
        (["ls", "--bogus"], 2, "No such option"),
    ],
)
def test_errors_are_one_line(cli_store, args, code, words):
    assert words in one_line_error(run(cli_store, *args), code)


def test_bad_records_are_one_line_errors(cli_store):
    sid = new_session(cli_store)
    assert "not valid JSON" in one_line_error(run(cli_store, "append", sid, "message", "{bad"))
    assert "stdin is not valid JSON" in one_line_error(run(cli_store, "append", sid, "message", input=""))
    assert "invalid event kind" in one_line_error(run(cli_store, "append", sid, "Bad Kind", "{}"))
    assert "delta" in one_line_error(run(cli_store, "append", sid, "message_delta", "{}"))
    assert ok_json(cli_store, "log", sid) == []


def test_existing_session_id_is_refused(cli_store):
    new_session(cli_store, "--id", "taken")
    assert "already exists" in one_line_error(run(cli_store, "new", "--id", "taken"))


def test_an_unexpected_failure_is_one_line_unless_debugging(cli_store, monkeypatch):
    def broken_scan(self):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(Store, "scan", broken_scan)
    line = one_line_error(run(cli_store, "ls"))
    assert "internal error: ZeroDivisionError: a bug" in line and "AGENTLOG_DEBUG" in line
    debugging = run(cli_store, "ls", env={"AGENTLOG_DEBUG": "1"})
    assert isinstance(debugging.exception, ZeroDivisionError)


def test_home_that_is_a_file_is_a_one_line_error(tmp_path):
    target = tmp_path / "file"
    target.write_text("")
    one_line_error(run(target, "ls"), code=2)
    one_line_error(run(None, "ls", env={"AGENTLOG_HOME": str(target / "sub")}))


def test_recovery_warnings_are_one_line(cli_home):
    sid, ids = chat(cli_home, 3)
    index = cli_home / "sessions" / sid / "index.bin"
    data = bytearray(index.read_bytes())
    data[-20] ^= 0x01  # the last entry's checksum fails
    index.write_bytes(bytes(data))
    result = run(cli_home, "log", sid, "--json")
    assert result.exit_code == 0, result.stderr
    assert [e["id"] for e in json.loads(result.stdout)] == ids
    warnings = result.stderr.splitlines()
    assert warnings and all(w.startswith("agentlog: warning: ") for w in warnings)
    assert "index rebuilt" in result.stderr


# --- fsck ---------------------------------------------------------------------------
def flip_in_last_line(chunk: Path) -> int:
    """Flip one byte inside the last record; return that record's offset."""
    data = bytearray(chunk.read_bytes())
    start = data.rindex(b"\n", 0, len(data) - 1) + 1
    data[data.index(b"last words", start)] ^= 0x01
    chunk.write_bytes(bytes(data))
    return start


def test_fsck_clean_store(cli_store):
    chat(cli_store, 2)
    assert "0 errors" in ok(cli_store, "fsck")
    assert ok_json(cli_store, "fsck")["ok"] is True


def test_fsck_fails_on_a_flipped_byte_and_repair_quarantines_it(cli_home):
    sid, ids = chat(cli_home, 2)
    last = append(cli_home, sid, "message", {"content": "last words"}, "user")
    chunk = cli_home / "sessions" / sid / "chunks" / "000000.jsonl"
    offset = flip_in_last_line(chunk)

    result = run(cli_home, "fsck")
    assert result.exit_code == 1, result.stderr
    assert f"{sid}: {chunk}@{offset}: checksum mismatch" in result.stdout.splitlines()[0]
    doc = json.loads(run(cli_home, "fsck", sid, "--json").stdout)
    assert doc["ok"] is False and doc["problems"][0]["offset"] == offset

    repaired = run(cli_home, "fsck", "--repair")
    assert repaired.exit_code == 0, (repaired.stdout, repaired.stderr)
    assert f"{chunk}@{offset}" in repaired.stdout and "quarantine" in repaired.stdout
    assert f"tombstone for event {last}" in repaired.stdout
    assert "moved HEAD" not in repaired.stdout and "reachable" not in repaired.stdout
    quarantine = Path(str(chunk) + ".quarantine")
    assert b"ast words" in quarantine.read_bytes()  # the damaged record, kept
    assert ok_json(cli_home, "fsck")["ok"] is True
    # HEAD stays on the damaged event, now a tombstone; the path is whole
    log = ok_json(cli_home, "log", sid)
    assert [e["id"] for e in log] == [*ids, last]
    assert log[-1]["kind"] == "tombstone" and log[-1]["record"]["quarantined"]["offset"] == offset
    text = ok(cli_home, "log", sid)
    assert "tombstone" in text and f"quarantined in 000000.jsonl.quarantine @{offset}: checksum" in text


def test_fsck_warnings_do_not_fail(cli_home):
    sid, _ = chat(cli_home, 2)
    chunk = cli_home / "sessions" / sid / "chunks" / "000000.jsonl"
    with open(chunk, "ab") as f:
        f.write(b'{"id":"torn')  # a crash cut the final record short
    result = run(cli_home, "fsck", sid)
    assert result.exit_code == 0, result.stdout
    (line,) = [ln for ln in result.stdout.splitlines() if "torn" in ln]
    assert line.startswith(f"{sid}: {chunk}@") and line.endswith("(warning)")
    doc = ok_json(cli_home, "fsck", sid)
    assert doc["ok"] is True and [p["severity"] for p in doc["problems"]] == ["warning"]


def test_repair_keeps_the_path_through_a_tombstone(cli_home):
    """Issue 8: a damaged record in the middle no longer cuts the events
    after it off the active path; a tombstone stands in its place."""
    sid, ids = chat(cli_home, 3)
    chunk = cli_home / "sessions" / sid / "chunks" / "000000.jsonl"
    data = bytearray(chunk.read_bytes())
    data[data.index(b"turn 1")] ^= 0x01  # the middle record
    chunk.write_bytes(bytes(data))
    repaired = ok(cli_home, "fsck", "--repair")
    assert f"tombstone for event {ids[1]}" in repaired and "moved HEAD" not in repaired
    assert [e["id"] for e in ok_json(cli_home, "log", sid)] == ids  # HEAD kept, path whole
    text = ok(cli_home, "tree", sid, "--all")
    assert "turn 0" in text and "turn 2" in text and "tombstone" in text
    assert "damaged message user quarantined in 000000.jsonl.quarantine" in text
    assert "orphaned" not in text and text.count("◀ HEAD") == 1
    with Store(cli_home).open(sid, readonly=True) as s:  # what a model is sent skips it
        assert [m["content"] for m in s.to_chat_messages()] == ["turn 0", "turn 2"]


def test_tree_still_draws_events_whose_parent_could_not_be_identified(cli_home):
    """A damaged record whose id and parent are gone (and no index to say
    them) gets no tombstone: the events after it are drawn, orphaned, and
    the repair names them."""
    sid, ids = chat(cli_home, 3)
    sdir = cli_home / "sessions" / sid
    chunk = sdir / "chunks" / "000000.jsonl"
    data = bytearray(chunk.read_bytes())
    start = data.index(b'{"id":"' + ids[1].encode())
    data[start + 1 : start + 95] = b"#" * 94  # the middle record's id and parent
    chunk.write_bytes(bytes(data))
    for name in os.listdir(sdir):
        if name.startswith("index"):
            os.unlink(sdir / name)  # nor can the index say them
    repaired = ok(cli_home, "fsck", "--repair")
    assert (
        "1 intact events are no longer reachable from the root "
        f"(a damaged record's id could not be recovered): {ids[2]}"
    ) in repaired
    text = ok(cli_home, "tree", sid)
    assert "turn 0" in text and "turn 2" in text and "urn 1" not in text
    assert f"orphaned: parent {ids[1]} is missing" in text
    assert text.count("◀ HEAD") == 1


def test_fsck_of_a_missing_session(cli_store):
    assert "no session" in one_line_error(run(cli_store, "fsck", "nope"))


# --- real processes ---------------------------------------------------------------------
HOLDER = textwrap.dedent("""
    import sys
    from agentlog import Store
    session = Store(sys.argv[1]).open(sys.argv[2])
    print("ready", flush=True)
    sys.stdin.read()
    session.close()
""")


def agentlog(home, *args, input=None):
    assert AGENTLOG.exists(), f"{AGENTLOG} missing: install with `make` (pip install -e .)"
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTLOG_HOME", "AGENTLOG_STORE")}
    option = "--store" if isinstance(home, str) else "--home"
    return subprocess.run(
        [str(AGENTLOG), option, str(home), *args], input=input, capture_output=True, text=True, env=env, timeout=60
    )


def test_entry_point_round_trip(cli_shared_store):
    created = agentlog(cli_shared_store, "new", "--name", "proc")
    assert created.returncode == 0, created.stderr
    sid = created.stdout.strip()
    appended = agentlog(
        cli_shared_store, "append", sid[:12], "message", "--role", "user", input='{"content": "from a pipe"}'
    )
    assert appended.returncode == 0, appended.stderr
    logged = agentlog(cli_shared_store, "log", sid, "--json")
    assert json.loads(logged.stdout)[0]["id"] == appended.stdout.strip()
    assert json.loads(logged.stdout)[0]["record"] == {"content": "from a pipe"}


def test_entry_point_errors_are_one_line(cli_store):
    for args, code in ((["log", "../x"], 1), (["nope"], 2), (["log", "absent"], 1)):
        result = agentlog(cli_store, *args)
        assert result.returncode == code
        assert result.stdout == ""
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert result.stderr.startswith("agentlog: error: ")


@contextlib.contextmanager
def writer_in_another_process(home, session_id):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home), session_id], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        yield holder.pid
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_locked_session_says_who_holds_it_and_reads_still_work(cli_shared_store):
    sid, ids = chat(cli_shared_store, 2)
    with writer_in_another_process(cli_shared_store, sid) as pid:
        for args in (["append", sid, "custom", "{}"], ["checkout", sid, ids[0]]):
            result = agentlog(cli_shared_store, *args)
            assert result.returncode == 1
            assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
            assert f"held by pid {pid} " in result.stderr
        # A bad record is refused before the lease is even asked for.
        assert "not valid JSON" in one_line_error(run(cli_shared_store, "append", sid, "custom", "{"))
        # Readers take no lease: they work while the other process writes.
        for args in (["ls"], ["log", sid], ["tree", sid], ["show", sid, "HEAD"], ["context", sid], ["fsck", sid]):
            ok(cli_shared_store, *args)
    assert ok_json(cli_shared_store, "checkout", sid, ids[0])["head"] == ids[0]


def test_repair_refuses_a_session_being_written(cli_home):
    sid, _ = chat(cli_home, 1)
    append(cli_home, sid, "message", {"content": "last words"}, "user")
    chunk = cli_home / "sessions" / sid / "chunks" / "000000.jsonl"
    with writer_in_another_process(cli_home, sid) as pid:
        flip_in_last_line(chunk)
        result = run(cli_home, "fsck", "--repair")
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"agentlog: error: cannot repair {sid}: ") and f"pid {pid}" in line
    assert not Path(str(chunk) + ".quarantine").exists()


def test_closed_pipe_is_not_a_traceback(cli_home):
    store = Store(cli_home, durability="off")
    with store.create(session_id="long") as s:
        s.append_many([("message", {"content": f"line {i} " + "z" * 200}, "user") for i in range(1500)])
    proc = subprocess.run(
        f"'{AGENTLOG}' --home '{cli_home}' log long | head -n 1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr

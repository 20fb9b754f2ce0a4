"""The command line as users of coding agents use it: what `show` and
shell completion send to a terminal, an age of `6M` (months or minutes?),
a Markdown or HTML export of a long session, and the styles of `tree` and
`show` lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.text import Text

from agentlog import Store
from agentlog._ages import AmbiguousAge, parse_age
from agentlog.cli.render import Styled, joined
from agentlog.cli.tree import session_tree
from agentlog.export.view import load_view
from agentlog.search import SearchError
from cli_support import error, ok, ok_json, run

_AGENTLOG = os.path.join(os.path.dirname(sys.executable), "agentlog")

#: What a terminal obeys that JSON may hold raw: DEL, 8-bit CSI and OSC, ST.
_RAW_CONTROLS = ("\x7f", "\x9b", "\x9d", "\x9c")


def _session(home: Path, name: str, *records: dict[str, object]) -> str:
    with Store(home).create(name=name, working_dir=str(home)) as session:
        for record in records:
            session.append("message", record, role="user")
        return session.id


def test_show_writes_c1_controls_and_del_as_json_escapes(tmp_path: Path) -> None:
    """U+009B is CSI to xterm: `show` printed it raw inside the record's
    JSON (JSON escapes only C0), so a record could clear the screen."""
    record = {"content": "c1 \x9b2J \x9d0;PWNED\x9c del \x7f esc \x1b[31m", "k\x9b": ["\x9b"]}
    _session(tmp_path, "s", record)
    out = ok(tmp_path, "show", "s", "HEAD")
    assert not any(c in out for c in (*_RAW_CONTROLS, "\x1b")), out
    assert "\\u009b2J" in out and "\\u007f" in out
    shown = out.split("\nrecord\n", 1)[1]
    assert json.loads(shown) == record  # still the record, still JSON
    assert ok_json(tmp_path, "show", "s", "HEAD")["record"] == record  # --json keeps it as stored


def test_show_keeps_text_that_is_not_a_control_character(tmp_path: Path) -> None:
    record = {"content": "数据库 مرحبا 👨‍👩‍👧 é \u00a0nbsp", "n": [1, 2.5, None, True]}
    _session(tmp_path, "s", record)
    out = ok(tmp_path, "show", "s", "HEAD")
    assert "数据库 مرحبا 👨‍👩‍👧 é \u00a0nbsp" in out
    assert json.loads(out.split("\nrecord\n", 1)[1]) == record


def _complete(home: Path, shell: str, *words: str) -> str:
    env = {
        **os.environ,
        "AGENTLOG_HOME": str(home),
        "COMP_WORDS": " ".join(["agentlog", *words]),
        # bash and zsh give the index of the word completed, fish the word itself
        "COMP_CWORD": words[-1] if shell == "fish" else str(len(words)),
        "_AGENTLOG_COMPLETE": f"{shell}_complete",
    }
    env.pop("AGENTLOG_STORE", None)
    done = subprocess.run([_AGENTLOG], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_sends_no_control_character_to_the_terminal(tmp_path: Path, shell: str) -> None:
    """zsh and fish print each session's title beside it, and every shell
    lists the names: a name or title holding ESC sequences reached the
    terminal raw while the user pressed Tab."""
    evil = _session(tmp_path, "evil\x1b]0;PWNED\x07", {"content": "x"})
    with Store(tmp_path).open(evil) as session:
        session.set_title("title \x1b[2J \x9b2J")
    _session(tmp_path, "plain name", {"content": "y"})
    out = _complete(tmp_path, shell, "log", "")
    assert not any(c in out for c in ("\x1b", "\x07", *_RAW_CONTROLS)), out
    assert "plain name" in out  # names a shell can take are still offered
    assert evil[-8:] in out  # the session itself is still offered, by its short id


def test_an_age_in_capital_m_is_refused_not_read_as_minutes(tmp_path: Path) -> None:
    """`prune --older-than 6M` (six months, as ISO 8601 and pandas write
    it) was six minutes: with --yes it deleted nearly every session."""
    sid = _session(tmp_path, "recent", {"content": "x"})
    line = error(run(tmp_path, "prune", "--older-than", "6M", "--yes"), 2)
    assert "'6M' is ambiguous" in line and "30d" in line
    line = error(run(tmp_path, "search", "x", "--since", "1M"), 2)
    assert "'1M' is ambiguous" in line  # not "neither an age nor a date"
    error(run(tmp_path, "gc", "--quarantine", "--quarantine-older-than", "2M", "--dry-run"), 2)
    assert [r["id"] for r in ok_json(tmp_path, "ls")] == [sid]
    with pytest.raises(AmbiguousAge):
        parse_age("6M")
    assert parse_age("6m") == 360 and parse_age("2D") == 2 * 86400 and parse_age("1H") == 3600
    # The library's search says the same (it said "not an age" before).
    with pytest.raises(SearchError, match="'6M' is ambiguous"):
        Store(tmp_path).search("x", since="6M")


def test_an_export_walks_a_long_active_path_whole() -> None:
    """The active path was walked with a list's `in` as its loop check
    (quadratic: 100,000 events took 100 s to export as Markdown, 12 s with
    a set); the walk must still take every event, root to HEAD. Its speed
    is for benchmarks, not for a timed test."""
    store = Store.memory()
    with store.create(name="long") as session:
        for start in range(0, 60_000, 5_000):
            session.append_many([("message", {"content": f"e{i}"}, "user") for i in range(start, start + 5_000)])
        ids = [e.id for e in session.entries()]
        view = load_view(session)
    assert list(view.active) in (ids, ids[::-1])


def _dim_over(text: Text, start: int, end: int) -> bool:
    if "dim" in str(text.style):
        return True
    return any("dim" in str(s.style) and s.start < end and s.end > start for s in text.spans)


def test_tree_dims_its_connectors_only(tmp_path: Path) -> None:
    """The connector's dim style was the line's own, so it covered the
    whole line: on a terminal every event of the tree was dimmed."""
    _session(tmp_path, "s", {"content": "first"}, {"content": "second"})
    with Store(tmp_path).open(_session(tmp_path, "t", {"content": "one"}), readonly=True) as session:
        entries = session.entries()
        drawn = joined(session_tree(Styled("t"), entries, session.head, {e.id: "one" for e in entries}, labels={}))
    plain = drawn.plain
    at = plain.index("one")
    assert not _dim_over(drawn, at, at + 3), drawn.spans
    connector = plain.index("└── ")
    assert _dim_over(drawn, connector, connector + 4)


def _damage_blob(home: Path) -> str:
    with Store(home).create(name="b") as session:
        session.append("message", {"content": "before"}, role="user")
        session.append("tool_result", {"tool_call_id": "c", "content": "x" * 100_000}, role="tool")
        sid = session.id
    (blob,) = [p for p in (home / "sessions" / sid / "blobs").rglob("*") if p.is_file()]
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 1
    blob.write_bytes(bytes(data))
    return sid


def test_an_error_about_damage_points_at_fsck(tmp_path: Path) -> None:
    """`show`, `stats`, `log --full` on a damaged payload named the bytes
    but not what to do; `fsck` says what else is damaged, --repair mends."""
    _damage_blob(tmp_path)
    for args in (("show", "b", "HEAD"), ("stats", "b"), ("log", "b", "--full"), ("context", "b", "--resolve")):
        line = error(run(tmp_path, *args))
        assert "corruption in" in line and line.endswith("see 'agentlog fsck'"), line


def test_a_bundle_cut_short_on_stdout_does_not_claim_nothing_was_written(tmp_path: Path) -> None:
    """To stdout the header and the first events are out before the bad
    payload is met: "none was written" was false there. The file given
    with -o is still not written at all."""
    sid = _damage_blob(tmp_path)
    result = run(tmp_path, "export", "b", "--format", "bundle")
    line = error(result)
    assert "none was written" not in line and "the export was stopped" in line
    assert f"agentlog fsck {sid}" in line  # which says whether repair can bring the payload back
    assert '"end"' not in result.stdout  # no end line: no import takes what was written
    target = tmp_path / "b.jsonl"
    error(run(tmp_path, "export", "b", "--format", "bundle", "-o", str(target)))
    assert not target.exists()


def test_a_store_that_does_not_open_gets_no_fsck_hint(tmp_path: Path) -> None:
    """fsck checks what a store holds: for a file that is no database at
    all, pointing at it would send the user the wrong way."""
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database, not at all\n" * 200)
    line = error(run(f"sqlite:///{junk}", "ls"))
    assert "fsck" not in line and "not a database" in line


def test_context_on_a_pipe_writes_every_event_in_order_as_rich_did(tmp_path: Path) -> None:
    """A pipe now gets plain lines a megabyte at a time (rich took 23 s
    for 100,000 events): the same text, tabs expanded, controls shown."""
    bodies = [f"event {i}\tcol\n\x1b[31m" + "y" * 150_000 for i in range(12)]  # past one chunk
    with Store(tmp_path).create(name="c") as session:
        for body in bodies:
            session.append("message", {"content": body}, role="user")
    out = ok(tmp_path, "context", "c", "--resolve")
    assert "\x1b" not in out and "\t" not in out
    lines = out.split("\n")
    headers = [line for line in lines if line.startswith("── message · user · ")]
    assert len(headers) == 12
    found = [line for line in lines if line.startswith("event ")]
    assert found == [f"event {i}".ljust(8 if i < 10 else 16) + "col" for i in range(12)]  # tab stops of 8, as rich
    assert out.count("␛[31m" + "y" * 150_000 + "\n") == 12


def test_bash_completion_quotes_a_name_it_inserts(tmp_path: Path) -> None:
    """bash inserts a completion as given (click's script adds no quotes):
    the demo's "fix calc (fork)" broke the command it completed."""
    _session(tmp_path, "fix calc (fork)", {"content": "x"})
    _session(tmp_path, "it's done", {"content": "y"})
    bash = _complete(tmp_path, "bash", "log", "")
    assert "plain,'fix calc (fork)'" in bash.splitlines()
    assert "plain,'it'\"'\"'s done'" in bash.splitlines()
    assert "fix calc (fork)" in _complete(tmp_path, "zsh", "log", "").splitlines()  # zsh quotes for itself

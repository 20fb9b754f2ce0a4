"""A session name made of hex digits never silently means another session.

A session named ``7`` or ``42`` used to be shadowed by any session whose
short id began with those digits, or whose full id merely *ended* with them:
`rm --yes 42` deleted that other session, and creating an unrelated session
could change, unseen, what a name referred to."""

from __future__ import annotations

from pathlib import Path

from cli_support import error, ok, ok_json, run

# Full ids chosen so that their short ids (last 8 hex digits) are known.
SEVEN = "01a24920-0000-7000-8000-00007abcdef0"  # short id 7abcdef0
ENDS_42 = "01a24920-0000-7000-8000-0000d00dfe42"  # short id d00dfe42: its id ends with 42


def _titles(home: Path) -> dict[str, str | None]:
    return {s["id"]: s["title"] for s in ok_json(home, "ls", "--all")}


def test_a_name_that_is_also_the_start_of_a_short_id_is_ambiguous(tmp_path: Path) -> None:
    named = ok(tmp_path, "new", "--name", "7").strip()
    ok(tmp_path, "new", "--id", SEVEN)
    line = error(run(tmp_path, "rm", "--yes", "7"))
    assert "ambiguous" in line and named in line and SEVEN in line
    assert set(_titles(tmp_path)) == {named, SEVEN}  # nothing deleted
    ok(tmp_path, "rm", "--yes", "7abc")  # a longer ref names the other
    assert set(_titles(tmp_path)) == {named}
    ok(tmp_path, "rm", "--yes", "7")  # and now the name is the only one
    assert _titles(tmp_path) == {}


def test_a_tail_shorter_than_a_short_id_is_no_ref(tmp_path: Path) -> None:
    ok(tmp_path, "new", "--id", ENDS_42)
    named = ok(tmp_path, "new", "--name", "42").strip()
    # "42" ends the first id but is not the start of its short id: the name it is
    ok(tmp_path, "rename", "42", "renamed")
    assert _titles(tmp_path) == {ENDS_42: None, named: "renamed"}
    assert "no session" in error(run(tmp_path, "log", "e42"))  # not a ref to anything
    assert "no session" in error(run(tmp_path, "rename", "dfe42", "x"))  # five digits are no short id either
    ok(tmp_path, "rename", "d00dfe42", "by its short id")
    assert _titles(tmp_path)[ENDS_42] == "by its short id"


def test_fork_with_head_at_the_root_is_refused_as_fork_head_is(tmp_path: Path) -> None:
    # It used to make an empty "(fork)" session on every try.
    ok(tmp_path, "new", "--name", "js")
    ok(tmp_path, "append", "js", "message", '{"content": "hi"}', "--role", "user")
    ok(tmp_path, "checkout", "js", "root")
    for args in (("fork", "js"), ("fork", "js", "HEAD")):
        assert "root" in error(run(tmp_path, *args))
    assert len(_titles(tmp_path)) == 1


def test_a_name_with_spaces_around_it_is_named_without_them(tmp_path: Path) -> None:
    sid = ok(tmp_path, "new", "--name", " spaced ").strip()
    ok(tmp_path, "rename", "spaced", "plain")
    assert _titles(tmp_path) == {sid: "plain"}

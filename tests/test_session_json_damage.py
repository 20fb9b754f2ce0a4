"""A session.json with wrong field types, on the file backend.

Each damage case is one hand edit of one session's ``session.json`` (a
field of the wrong type, text that is not text, an id that is no id, a
number beyond what JSON keeps, a document that is not an object). For
each, the tests check what every reader does: the library's listing and
reads, the CLI, fsck and its repair, and the server. The rule they hold
the readers to (docs/format.md, "session.json"):

- a read is a ``CorruptionError`` naming the file and each field at
  fault, never a value shown wrong or dropped without a word;
- listing reports the session as broken and lists every other one;
- the CLI says so in one line and exits non-zero (``ls`` warns and
  lists the rest); the events stay readable (``agentlog log``);
- fsck reports each field as an error with the file, and what
  ``--repair`` does: it keeps the old file as ``session.json.quarantine``
  and leaves the field out (it then reads as its default), sets ``id``
  and ``schema`` again, or, when nothing can be read, writes defaults;
- the server lists the others with the session under ``broken`` and
  answers its page with ``500 corruption`` naming the file and field.

What is not damage (a missing field, an unknown one, a name holding a
NUL) is tested too, as is the write side: what a read calls damaged, a
write refuses (``InvalidMeta``), so one never makes what the other
cannot read.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentlog import CorruptionError, InvalidMeta, Store
from cli_support import error, ok, ok_json, run

GOOD, BAD = "good", "bad"
HUGE = 123456789012345678901234567890  # beyond 64 bits: orjson would read it as a float


def _set(**changes: Any) -> Callable[[dict[str, Any]], bytes]:
    def edit(meta: dict[str, Any]) -> bytes:
        return orjson.dumps({**meta, **changes})

    return edit


def _raw(old: bytes, new: bytes) -> Callable[[dict[str, Any]], bytes]:
    """Replace bytes of the compact document (for what orjson cannot write)."""

    def edit(meta: dict[str, Any]) -> bytes:
        data = orjson.dumps(meta)
        assert old in data
        return data.replace(old, new, 1)

    return edit


def _whole(data: bytes) -> Callable[[dict[str, Any]], bytes]:
    return lambda meta: data


@dataclass(frozen=True)
class Damage:
    id: str
    edit: Callable[[dict[str, Any]], bytes]
    #: the field every report names, or None when it is the whole file
    field: str | None
    #: a fragment of what every report says is wrong
    says: str
    #: what fsck --repair does: "removes" the field, "sets" it again,
    #: writes "fresh" defaults, or "leaves" the file
    repair: str


DAMAGE = [
    # a known field of the wrong type
    Damage("name-number", _set(name=5), "name", "must be text or null, not a number (5)", "removes"),
    Damage("title-list", _set(title=["x"]), "title", "must be text or null, not a list", "removes"),
    Damage("created-at-number", _set(created_at=17), "created_at", "must be an RFC 3339 time", "removes"),
    Damage("created-at-no-time", _set(created_at="yesterday"), "created_at", "not text ('yesterday')", "removes"),
    Damage(
        "created-at-no-date",
        _set(created_at="2026-13-45T12:45:02.625823213Z"),  # agentlog's form, a month and day there are not
        "created_at",
        "must be an RFC 3339 time",
        "removes",
    ),
    Damage("updated-at-no-time", _set(updated_at="yesterday"), "updated_at", "must be an RFC 3339 time", "removes"),
    Damage("status-list", _set(status=[]), "status", "must be text or null, not a list ([])", "removes"),
    Damage("archived-text", _set(archived="no"), "archived", "must be true or false, not text ('no')", "removes"),
    Damage("summary-object", _set(summary={"a": 1}), "summary", "must be text or null, not an object", "removes"),
    Damage(
        "summary-structured-list",
        _set(summary_structured=[1]),
        "summary_structured",
        "must be an object or null, not a list",
        "removes",
    ),
    Damage("forked-from-text", _set(forked_from="x"), "forked_from", "must be an object or null", "removes"),
    Damage(
        "forked-from-no-ids",
        _set(forked_from={"session": "../etc", "event": "nope"}),
        "forked_from",
        "must name its session by a session id",
        "removes",
    ),
    Damage("labels-list", _set(labels=["a"]), "labels", "must be an object (label: event id)", "removes"),
    Damage("labels-no-ids", _set(labels={"x": "not-an-id"}), "labels", "label 'x' must name an event id", "removes"),
    Damage("working-dir-number", _set(working_dir=9), "working_dir", "must be text or null, not a number", "removes"),
    Damage("working-dir-nul", _set(working_dir="/tmp/a\x00b"), "working_dir", "holds a NUL character", "removes"),
    # text that is not text, numbers JSON does not keep
    Damage(
        "title-lone-surrogate",
        _raw(b'"title":null', b'"title":"\\ud800"'),
        "title",
        "text that is not valid Unicode",
        "removes",
    ),
    Damage(
        "title-not-utf8", _raw(b'"title":null', b'"title":"\xff\xfe"'), "title", "text that is not valid", "removes"
    ),
    Damage(
        "user-field-huge-integer",
        _raw(b'"name":"bad"', b'"budget":%d,"name":"bad"' % HUGE),
        "budget",
        "beyond the 64 bits",
        "removes",
    ),
    Damage("user-field-infinity", _raw(b'"name":"bad"', b'"cost":1e400,"name":"bad"'), "cost", "infinity", "removes"),
    Damage("user-field-nan", _raw(b'"name":"bad"', b'"cost":NaN,"name":"bad"'), "cost", "NaN", "removes"),
    # the store's own fields
    Damage("id-number", _set(id=5), "id", "must be the session's own id 'bad', not a number", "sets"),
    Damage("id-path", _set(id="../../x"), "id", "not text ('../../x')", "sets"),
    Damage("schema-text", _set(schema="1"), "schema", "must be 1, not text ('1')", "sets"),
    Damage("schema-huge", _raw(b'"schema":1', b'"schema":%d' % HUGE), "schema", "beyond the 64 bits", "sets"),
    # nothing of it can be read
    Damage("an-array", _whole(b"[1, 2]"), None, "is not a JSON object but a list ([1, 2])", "fresh"),
    Damage("a-string", _whole(b'"x"'), None, "is not a JSON object but text ('x')", "fresh"),
    Damage("null", _whole(b"null"), None, "is not a JSON object but null", "fresh"),
    Damage("empty", _whole(b""), None, "does not parse", "fresh"),
    Damage("cut-short", _whole(b'{"name": "x", trunc'), None, "does not parse", "fresh"),
    Damage("nested-too-deep", _whole(b"[" * 5000 + b"]" * 5000), None, "does not parse", "fresh"),
    # a newer agentlog's document: never rewritten by this one
    Damage("schema-newer", _set(schema=2), None, "has schema 2; this agentlog reads schema 1 only", "leaves"),
]


def _ids(cases: list[Damage]) -> list[str]:
    return [c.id for c in cases]


@dataclass
class Home:
    home: Path
    store: Store
    path: Path  # the damaged session.json
    original: dict[str, Any]  # its document before the damage
    data: bytes  # its bytes after


def _build(home: Path, edit: Callable[[dict[str, Any]], bytes] | None = None) -> Home:
    store = Store(home)
    for sid in (GOOD, BAD):
        with store.create(session_id=sid, name=sid, working_dir=str(home.parent)) as s:
            s.append("message", {"content": f"{sid} one"}, role="user")
            s.append("message", {"content": f"{sid} two"}, role="assistant")
    path = home / "sessions" / BAD / "session.json"
    original = orjson.loads(path.read_bytes())
    data = path.read_bytes()
    if edit is not None:
        data = edit(original)
        path.write_bytes(data)
    return Home(home, Store(home), path, original, data)


@pytest.fixture(params=DAMAGE, ids=_ids(DAMAGE))
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Home, Damage]:
    case: Damage = request.param
    return _build(tmp_path / "home", case.edit), case


def _names_it(text: str, h: Home, case: Damage) -> None:
    """``text`` names the file (and so the session), the field and what is wrong."""
    assert str(h.path) in text, text
    if case.field is not None:
        assert f"field {case.field!r}" in text, text
    assert case.says in text, text


# --- the library ------------------------------------------------------------------------


def test_listing_reports_the_session_and_lists_the_others(damaged: tuple[Home, Damage]) -> None:
    h, case = damaged
    rows, broken = h.store.scan()
    assert [r.id for r in rows] == [GOOD]
    assert [b.id for b in broken] == [BAD]
    _names_it(broken[0].reason, h, case)
    assert [r.id for r in h.store.list(archived=True)] == [GOOD]


def test_reading_the_metadata_is_a_typed_error(damaged: tuple[Home, Damage]) -> None:
    h, case = damaged
    for read in (lambda: h.store.meta(BAD), lambda: h.store.info(BAD), lambda: h.store.open(BAD)):
        with pytest.raises(CorruptionError) as caught:
            read()
        assert caught.value.path == str(h.path)
        _names_it(str(caught.value), h, case)
    # The events are the session's truth, and stay readable.
    with h.store.open(BAD, readonly=True) as s:
        assert [e.record["content"] for e in s.path()] == ["bad one", "bad two"]
        assert [e.record["content"] for e in s.context()] == ["bad one", "bad two"]
        with pytest.raises(CorruptionError, match="session.json"):
            s.meta  # noqa: B018 - the property is the read under test
    # The failed writable open left the lease free: repair can take it.
    actions = h.store.repair(BAD)
    assert any("session.json" in a for a in actions) is (case.repair != "leaves"), actions


# --- the CLI ------------------------------------------------------------------------------


def test_the_cli_says_so_in_one_line(damaged: tuple[Home, Damage]) -> None:
    h, case = damaged
    listed = run(h.home, "ls")
    assert listed.exit_code == 0
    assert GOOD in listed.stdout and BAD not in listed.stdout
    assert listed.stderr == (
        "agentlog: warning: 1 session cannot be read and is not listed (bad): "
        "'agentlog ls --all' says why, 'agentlog fsck' tells more\n"
    )
    rows = {r["id"]: r for r in ok_json(h.home, "ls", "--all")}
    assert rows[GOOD]["status"] == "active" and rows[BAD]["status"] == "broken"
    _names_it(rows[BAD]["reason"], h, case)
    for command in (["show", BAD, "HEAD"], ["tree", BAD], ["export", BAD, "--format", "md"]):
        _names_it(error(run(h.home, *command)), h, case)
    assert "bad one" in ok(h.home, "log", BAD)  # the events need no metadata


def test_fsck_reports_each_field_with_the_file(damaged: tuple[Home, Damage]) -> None:
    h, case = damaged
    problems = [p for p in h.store.fsck() if p.session_id == BAD]
    assert len(problems) == 1
    (problem,) = problems
    assert (problem.path, problem.offset, problem.severity) == (str(h.path), None, "error")
    assert problem.repairable is (case.repair != "leaves")
    _names_it(f"{problem.path}: {problem.message}", h, case)
    said = {
        "removes": "fsck --repair removes the field (it then reads as ",
        "sets": "fsck --repair sets it to ",
        "fresh": "fsck --repair keeps a copy beside it and writes a fresh one with defaults",
        "leaves": "fsck --repair leaves it as it is",
    }[case.repair]
    assert said in problem.message
    result = run(h.home, "fsck")
    assert result.exit_code == 1
    assert f"bad: {h.path}: " in result.stdout and "2 sessions checked: 1 error, 0 warnings" in result.stdout


def test_fsck_repair_keeps_the_old_file_and_every_sound_field(damaged: tuple[Home, Damage]) -> None:
    h, case = damaged
    result = run(h.home, "fsck", "--repair")
    aside = h.path.with_name("session.json.quarantine")
    if case.repair == "leaves":
        assert result.exit_code == 1
        assert h.path.read_bytes() == h.data and not aside.exists()
        return
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert aside.read_bytes() == h.data  # the damaged bytes, kept as they were
    repaired = orjson.loads(h.path.read_bytes())
    if case.repair == "fresh":
        assert repaired == {"schema": 1, "id": BAD, "name": None, "created_at": None}
    else:
        expected = {k: v for k, v in h.original.items() if k != case.field}
        if case.repair == "sets":
            expected[str(case.field)] = {"id": BAD, "schema": 1}[str(case.field)]
        assert repaired == expected
        said = "set field" if case.repair == "sets" else "removed field"
        assert f"{said} {case.field!r}" in result.stdout
    assert h.store.fsck() == []
    assert sorted(r.id for r in h.store.list()) == [BAD, GOOD]
    with h.store.open(BAD, readonly=True) as s:
        assert [e.record["content"] for e in s.path()] == ["bad one", "bad two"]


# --- the server -----------------------------------------------------------------------------


def _get(store: Store, url: str) -> tuple[int, Any]:
    pytest.importorskip("starlette", reason="the 'server' extra is not installed")
    import httpx

    from agentlog.server import create_app

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(store))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            return await client.get(url)

    response = asyncio.run(go())
    assert response.headers["content-type"].startswith("application/json")
    return response.status_code, response.json()


@pytest.mark.filterwarnings("ignore::agentlog.SearchWarning")
def test_the_server_lists_the_others_and_names_the_damage(damaged: tuple[Home, Damage]) -> None:
    h, case = damaged
    status, listing = _get(h.store, "/api/v1/sessions")
    assert status == 200
    assert [s["id"] for s in listing["sessions"]] == [GOOD]
    assert [b["session_id"] for b in listing["broken"]] == [BAD]
    _names_it(listing["broken"][0]["reason"], h, case)
    # Damaged data, not a bad request: docs/server.md's 500 corruption.
    status, page = _get(h.store, f"/api/v1/sessions/{BAD}")
    assert status == 500 and page["error"]["code"] == "corruption"
    _names_it(page["error"]["message"], h, case)
    status, path = _get(h.store, f"/api/v1/sessions/{BAD}/path")
    assert status == 200 and len(path["events"]) == 2


# --- more than one field, more than one repair ----------------------------------------------


def test_every_field_at_fault_is_named_and_repaired(tmp_path: Path) -> None:
    h = _build(tmp_path / "home", _set(name=5, status=[], archived="no"))
    with pytest.raises(CorruptionError) as caught:
        h.store.meta(BAD)
    for field in ("name", "status", "archived"):
        assert f"field {field!r}" in str(caught.value)
    messages = [p.message for p in h.store.fsck(BAD)]
    assert [m.split(":")[0] for m in messages] == [
        "session.json, field 'name'",
        "session.json, field 'archived'",
        "session.json, field 'status'",
    ]
    actions = h.store.repair(BAD)
    assert sum(a.startswith("removed field") for a in actions) == 3
    info = h.store.info(BAD)
    assert (info.name, info.status, info.archived) == (None, "active", False)  # their defaults


def test_a_second_repair_keeps_the_first_ones_file(tmp_path: Path) -> None:
    h = _build(tmp_path / "home", _set(name=5))
    h.store.repair(BAD)
    h.path.write_bytes(orjson.dumps({**orjson.loads(h.path.read_bytes()), "title": 7}))
    second = h.path.read_bytes()
    h.store.repair(BAD)
    assert (h.path.parent / "session.json.quarantine").read_bytes() == h.data
    assert (h.path.parent / "session.json.2.quarantine").read_bytes() == second


def test_a_missing_session_json_is_reported_and_written_again(tmp_path: Path) -> None:
    h = _build(tmp_path / "home")
    h.path.unlink()
    _, broken = h.store.scan()
    assert [b.id for b in broken] == [BAD] and "cannot read session.json" in broken[0].reason
    (problem,) = h.store.fsck(BAD)
    assert problem.path == str(h.path) and "fsck --repair writes a fresh one with defaults" in problem.message
    assert h.store.repair(BAD)[0] == f"wrote a fresh {h.path} with defaults (there was none)"
    assert h.store.fsck(BAD) == [] and h.store.info(BAD).name is None


def test_an_id_of_another_session_is_a_warning(tmp_path: Path) -> None:
    """A session directory copied by hand: its name decides which session it
    is (nothing reads the id from session.json), so it reads and is listed;
    fsck warns, and --repair sets the id to the directory's name."""
    h = _build(tmp_path / "home", _set(id="someoneelse"))
    assert sorted(r.id for r in h.store.list()) == [BAD, GOOD]
    assert h.store.meta(BAD)["id"] == "someoneelse"  # as stored: nothing rewritten on a read
    (problem,) = h.store.fsck(BAD)
    assert (problem.path, problem.severity, problem.repairable) == (str(h.path), "warning", True)
    assert problem.message == (
        "session.json, field 'id': says 'someoneelse', but the session is 'bad' "
        '(its directory\'s name decides: a copy?); fsck --repair sets it to "bad"'
    )
    assert run(h.home, "fsck").exit_code == 0
    assert "set field 'id' of session.json to \"bad\"" in ok(h.home, "fsck", "--repair")
    assert h.store.meta(BAD)["id"] == BAD and h.store.fsck() == []
    assert (h.path.parent / "session.json.quarantine").read_bytes() == h.data


# --- what is not damage ----------------------------------------------------------------------


def _drop(*keys: str) -> Callable[[dict[str, Any]], bytes]:
    return lambda meta: orjson.dumps({k: v for k, v in meta.items() if k not in keys})


SOUND = [
    # A missing field reads as its default (older files lack fields).
    pytest.param(_drop("id"), {"name": "bad"}, id="no-id"),
    pytest.param(_drop("schema"), {"name": "bad"}, id="no-schema"),
    pytest.param(_drop("created_at", "updated_at"), {"created_at": None}, id="no-times"),
    pytest.param(lambda meta: b'{"id": "bad"}', {"name": None, "status": "active", "title": None}, id="only-an-id"),
    # HEAD is kept in the log and the HEAD file, never here: a "head" field
    # is one agentlog does not know, kept as it is and never read.
    pytest.param(_set(head="not-an-id"), {"name": "bad"}, id="a-head-field"),
    # Text may hold a NUL wherever a write takes one (not in working_dir).
    pytest.param(_set(name="a\x00b"), {"name": "a\x00b"}, id="name-with-nul"),
    pytest.param(_set(created_at="2026-01-31T09:30:00Z"), {"created_at": "2026-01-31T09:30:00Z"}, id="short-time"),
    # A float as large as an integer beyond 64 bits, written as a float: sound.
    pytest.param(_set(ratio=1e30, low=-1.5e300), {"name": "bad"}, id="large-floats"),
    # Fields agentlog does not know hold anything JSON keeps exactly.
    pytest.param(
        _set(custom=[1, {"a": None}], big=2**64 - 1, low=-(2**63), digits="1" * 25),
        {"name": "bad"},
        id="unknown-fields",
    ),
]


@pytest.mark.parametrize(("edit", "shown"), SOUND)
def test_what_is_not_damage_reads_as_documented(tmp_path: Path, edit: Any, shown: dict[str, Any]) -> None:
    h = _build(tmp_path / "home", edit)
    rows = {r.id: r for r in h.store.list()}
    assert set(rows) == {GOOD, BAD}
    for field, value in shown.items():
        assert getattr(rows[BAD], field) == value, field
    assert h.store.fsck() == []
    with h.store.open(BAD) as s:
        meta = s.meta
        assert meta == json.loads(h.data)  # exactly: no integer read as a float
        s.set_title("a title")  # a write keeps every field as it was
    again = json.loads(h.path.read_bytes())
    assert again["title"] == "a title"
    assert {k: v for k, v in again.items() if k not in ("title", "updated_at")} == {
        k: v for k, v in json.loads(h.data).items() if k not in ("title", "updated_at")
    }


# --- the write side refuses what the read side would call damaged ----------------------------

#: Every field a caller may set, with a value a read calls damaged. Not
#: NaN and the infinities: a write stores them as null, as in records.
WRITTEN = [
    c for c in DAMAGE if c.field not in (None, "id", "schema") and c.id not in ("user-field-infinity", "user-field-nan")
]
_AS_PASSED = {
    "title-lone-surrogate": "\ud800",
    "title-not-utf8": "\udcff\udcfe",  # what bytes that are not UTF-8 decode to, kept
    "user-field-huge-integer": HUGE,
}


def _value(case: Damage) -> Any:
    """The Python value the damaged field holds, as a caller would pass it."""
    if case.id in _AS_PASSED:
        return _AS_PASSED[case.id]
    return json.loads(case.edit({"schema": 1}))[case.field]


@pytest.mark.parametrize("case", WRITTEN, ids=_ids(WRITTEN))
def test_a_write_refuses_what_a_read_calls_damaged(tmp_path: Path, case: Damage) -> None:
    h = _build(tmp_path / "home")
    with h.store.open(BAD) as s:
        with pytest.raises(InvalidMeta, match=f"metadata field {case.field!r} "):
            s.update_meta(**{str(case.field): _value(case)})
    assert h.path.read_bytes() == h.data  # nothing written


def test_what_a_write_takes_a_read_takes(tmp_path: Path) -> None:
    h = _build(tmp_path / "home")
    with h.store.open(BAD) as s:
        event = s.head
        s.update_meta(
            name="a\x00b",
            created_at="2026-01-31T09:30:00.5Z",
            labels={"start": event},
            forked_from={"session": GOOD, "event": None, "at": "2026-01-31T09:30:00Z"},
            summary_structured={"goal": "x"},
            migrations=[],
            deep=json.loads("[" * 253 + "]" * 253),
            cost=float("inf"),  # NaN and infinities are written as null, as in records
        )
        with pytest.raises(InvalidMeta):
            s.update_meta(deep=json.loads("[" * 254 + "]" * 254))  # deeper than orjson writes
    assert h.store.fsck() == []
    assert h.store.meta(BAD)["cost"] is None and h.store.info(BAD).name == "a\x00b"


# --- the same rule on a SQL store --------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "field"),
    [({"name": 5}, "name"), ({"created_at": "yesterday"}, "created_at"), ({"id": 5}, "id")],
    ids=["name-number", "created-at-no-time", "id-number"],
)
def test_a_sqlite_store_holds_its_rows_to_the_same_rule(tmp_path: Path, bad: dict[str, Any], field: str) -> None:
    path = tmp_path / "store.db"
    store = Store(f"sqlite:///{path}")
    for sid in (GOOD, BAD):
        store.create(session_id=sid, name=sid).close()
    meta = {**store.meta(BAD), **bad}
    with sqlite3.connect(path) as db:
        db.execute("UPDATE sessions SET meta = ? WHERE id = ?", (orjson.dumps(meta).decode(), BAD))
    rows, broken = store.scan()
    assert [r.id for r in rows] == [GOOD] and [b.id for b in broken] == [BAD]
    assert f"metadata of session bad, field {field!r}" in broken[0].reason
    with pytest.raises(CorruptionError, match=f"field {field!r}"):
        store.meta(BAD)
    assert any(f"field {field!r}" in p.message for p in store.fsck(BAD))
    store.close()

"""Hostile identifiers at every entry point (invariant 8).

Session ids and event ids like '../x', absolute paths, NUL bytes, 10 kB
strings, Unicode look-alikes, '.', '..' and '' go to every API and CLI
entry point that takes one. Each call either works on something inside the
store or raises a typed ``AgentlogError`` (the CLI exits non-zero with a
one-line message, no traceback); and nothing is read or created outside
the store's home: a Python audit hook sees every path opened, listed,
created, renamed or removed during the calls, and the tree around the home
is compared before and after.
"""

from __future__ import annotations

import os
import re
import sys
import warnings

import pytest

from agentlog import Store
from agentlog.errors import AgentlogError

HOSTILE_SESSION_IDS = [
    "../x",
    "../../etc/passwd",
    "/etc/passwd",
    "/tmp",
    "a/b",
    "a\\b",
    "..\\x",
    "x\0y",
    "\0",
    "a" * 10240,
    "a" * 129,
    ".",
    "..",
    "",
    " ",
    "x ",
    "x\n",
    "\nx",
    "ѕession",  # Cyrillic dze, looks like s
    "ｓｅｓｓｉｏｎ",  # fullwidth
    "s\u200bession",  # zero-width space
    "sess\u0131on",  # dotless i
    "café",
    "~",
    "~root",
    "$HOME",
    "%2e%2e",
    "..%2fx",
    "sessions",
    "locks/x",
    None,
    7,
    b"bytes",
    ["x"],
]

HOSTILE_EVENT_IDS = HOSTILE_SESSION_IDS + [
    "01A2269D-24DF-71FE-BF2D-E6CCA612EC17",  # upper case
    "01a2269d24df71febf2de6cca612ec17",  # no hyphens
    "{01a2269d-24df-71fe-bf2d-e6cca612ec17}",
    "01a2269d-24df-71fe-bf2d-e6cca612ec17\n",
    "01a2269d-24df-71fe-bf2d-e6cca612ec1７",  # fullwidth digit
    "../01a2269d-24df-71fe-bf2d-e6cca612ec17",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",  # well formed, absent
]


def _valid(value) -> bool:
    """A legal session id: hostile-looking but harmless ('sessions') is allowed."""
    return isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,128}", value) is not None


class Watch:
    """Every path the process touches while active (a sys audit hook)."""

    EVENTS = {
        "open",
        "os.listdir",
        "os.scandir",
        "os.mkdir",
        "os.rename",
        "os.replace",
        "os.remove",
        "os.rmdir",
        "os.link",
        "os.symlink",
        "os.truncate",
        "os.chmod",
        "shutil.rmtree",
        "os.utime",
        "os.chown",
    }

    def __init__(self) -> None:
        self.active = False
        self.paths: list[tuple[str, str]] = []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if not self.active or event not in self.EVENTS:
            return
        for arg in args[:2]:
            if isinstance(arg, (str, bytes)) and arg:
                path = os.fsdecode(arg)
                # Relative names come from shutil.rmtree walking by directory
                # descriptor below a directory it was given absolutely; the
                # store itself builds absolute paths only (Layout).
                if os.path.isabs(path):
                    self.paths.append((event, path))


_watch = Watch()  # an audit hook cannot be removed: one per process, switched on and off


def _outside(home: str, paths: list[tuple[str, str]]) -> list[tuple[str, str]]:
    allowed = [os.path.realpath(home)]
    # Python reading its own modules (a lazy import) is not the store's doing.
    allowed += [os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    allowed += [os.path.realpath(os.path.dirname(os.path.dirname(__import__("agentlog").__file__)))]
    bad = []
    for event, path in paths:
        full = os.path.realpath(path)
        if not any(full == a or full.startswith(a + os.sep) for a in allowed):
            bad.append((event, path))
    return bad


def _tree(root: str, home: str) -> set[str]:
    seen = set()
    for dirpath, dirnames, filenames in os.walk(root):
        if os.path.realpath(dirpath).startswith(os.path.realpath(home)):
            continue
        seen.update(os.path.join(dirpath, n) for n in dirnames + filenames)
    return seen


@pytest.fixture
def world(tmp_path):
    """A store with one session, beside decoy files that must stay untouched."""
    outer = tmp_path / "outer"
    home = outer / "home"
    outer.mkdir()
    (outer / "x").write_text("decoy")
    (outer / "sessions").mkdir()
    store = Store(str(home), blob_threshold=64)
    with store.create(session_id="real") as s:
        first = s.append("message", {"content": "hi"}, "user")
        s.append("tool_result", {"content": "x" * 200}, "tool")
    return str(outer), str(home), store, first.id


def _call(fn, *args, **kwargs):
    """Run an entry point: fine, or a typed error; anything else fails."""
    try:
        result = fn(*args, **kwargs)
        if hasattr(result, "close"):
            result.close()
        return "ok"
    except AgentlogError as exc:
        return type(exc).__name__


def _session_entry_points(store: Store):
    return {
        "Store.create": lambda v: store.create(session_id=v),
        "Store.open": lambda v: store.open(v),
        "Store.open(readonly)": lambda v: store.open(v, readonly=True),
        "Store.exists": lambda v: store.exists(v),
        "Store.delete": lambda v: store.delete(v),
        "Store.meta": lambda v: store.meta(v),
        "Store.update_meta": lambda v: store.update_meta(v, title="t"),
        "Store.info": lambda v: store.info(v),
        "Store.fsck": lambda v: store.fsck(v),
        "Store.repair": lambda v: store.repair(v),
    }


def test_hostile_session_ids(world):
    outer, home, store, _ = world
    before = _tree(outer, home)
    entry_points = _session_entry_points(store)
    store.create(session_id="warm").close()
    for fn in entry_points.values():  # warm up lazy imports outside the watch
        _call(fn, "warm")
    store.create(session_id="victim").close()
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, fn in entry_points.items():
            for value in HOSTILE_SESSION_IDS:
                if value is None and name in ("Store.create", "Store.fsck"):
                    continue  # None asks for a new id / for every session
                _watch.paths.clear()
                _watch.active = True
                try:
                    outcome = _call(fn, value)
                finally:
                    _watch.active = False
                assert not _outside(home, _watch.paths), (name, value, _outside(home, _watch.paths))
                if not _valid(value):
                    results[(name, repr(value))] = outcome
    assert _tree(outer, home) == before
    created = {v for v in HOSTILE_SESSION_IDS if _valid(v)}
    assert set(store.backend.session_ids()) <= {"real", "victim", "warm"} | created
    assert {"real", "victim"} <= set(store.backend.session_ids())
    wrong = {k: v for k, v in results.items() if v != "InvalidSessionId" and not (k[0] == "Store.exists" and v == "ok")}
    assert not wrong, wrong


def test_hostile_event_ids(world):
    outer, home, store, first = world
    before = _tree(outer, home)
    with store.open("real") as s:
        entry_points = {
            "Session.event": s.event,
            "Session.select": s.select,
            "Session.checkout": s.checkout,
            "Session.path": s.path,
            "Session.walk": lambda v: list(s.walk(v)),
            "Session.fork": lambda v: s.fork(v),
            "Session.__contains__": lambda v: v in s,
        }
        for fn in entry_points.values():
            _call(fn, first)
        head = s.head
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, fn in entry_points.items():
                for value in HOSTILE_EVENT_IDS:
                    _watch.paths.clear()
                    _watch.active = True
                    try:
                        outcome = _call(fn, value)
                    finally:
                        _watch.active = False
                    if name == "Session.__contains__" or (
                        value is None and name in ("Session.select", "Session.path", "Session.walk", "Session.fork")
                    ):
                        continue  # membership answers False; None means "none" / "HEAD" there
                    assert outcome != "ok", (name, value)
                    assert not _outside(home, _watch.paths), (name, value)
        s.checkout(head)
    outer_after = _tree(outer, home)
    assert outer_after == before


def test_hostile_ids_through_the_cli(world):
    from click.testing import CliRunner

    from agentlog.cli import main

    outer, home, store, first = world
    before = _tree(outer, home)
    runner = CliRunner()
    base = ["--home", home]
    commands = []
    for value in HOSTILE_SESSION_IDS:
        if not isinstance(value, str) or _valid(value):
            continue
        commands += [
            ["new", "--id", value],
            ["append", value, "message", '{"content": "x"}'],
            ["log", value],
            ["tree", value],
            ["context", value],
            ["show", value, "HEAD"],
            ["checkout", value, "root"],
            ["fsck", value],
            ["fsck", value, "--repair"],
        ]
    for value in HOSTILE_EVENT_IDS:
        if isinstance(value, str):
            commands += [["show", "real", value], ["checkout", "real", value]]
    for args in commands:
        _watch.paths.clear()
        _watch.active = True
        try:
            result = runner.invoke(main, base + args, catch_exceptions=True)
        finally:
            _watch.active = False
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"agentlog {args!r:.200}: {result.exception!r}") from result.exception
        assert result.exit_code != 0, args
        assert "Traceback" not in result.output
        assert not _outside(home, _watch.paths), (args, _outside(home, _watch.paths))
    assert _tree(outer, home) == before
    assert sorted(store.backend.session_ids()) == ["real"]


def test_the_watch_sees_a_path_outside_the_home(world, tmp_path):
    """The audit hook is what the tests above rely on: it must see an escape."""
    outer, home, store, _ = world
    _watch.paths.clear()
    _watch.active = True
    try:
        with open(os.path.join(outer, "x"), "rb") as f:
            f.read()
        os.listdir(outer)
        os.mkdir(os.path.join(outer, "made"))
    finally:
        _watch.active = False
    assert {e for e, _ in _outside(home, _watch.paths)} == {"open", "os.listdir", "os.mkdir"}
    assert os.path.join(outer, "made") in _tree(outer, home)  # and so does the tree walk
